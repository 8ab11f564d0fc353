"""Machines: `list_machines`, and the `machineId` of `list_host_instances`, `launch_host` and
`read_file_info`.

Without a gateway the daemon reaches this machine only, and says so as a typed error in
the answer. With one, the machines of the user's space are listed too, online or with
when they were last seen; hosts on them appear in `list_host_instances` and search like
local ones; `launch_host` with their `machineId` runs their configured launch command there,
and `read_file_info` reads a file there.
"""

from __future__ import annotations

import os
import platform
import socket
from typing import TYPE_CHECKING, Any

from cadmcp.daemon import filemeta
from cadmcp.daemon.errors import DaemonError

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT

    from cadmcp.daemon.gateway import Gateway
    from cadmcp.daemon.hosts import HostDirectory
    from cadmcp.daemon.launching import HostLauncher

NOT_CONFIGURED = (
    "No gateway is configured, so this daemon reaches only the hosts on this machine. To reach other "
    "workstations, start the daemon with --gateway nats://HOST:4222 and credentials (or set "
    "CADMCP_GATEWAY, or a gateway section in the configuration file); see docs/machines.md."
)


def this_machine(directory: HostDirectory, gateway: Gateway | None) -> dict[str, Any]:
    local = list(directory.local_entries().values())
    return {
        "machineId": directory.machine_id,
        "name": gateway.settings.machine_name if gateway else socket.gethostname(),
        "hostname": socket.gethostname(),
        "local": True,
        "online": True,
        "os": {"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
        "python": platform.python_version(),
        "runtimeDir": str(directory.directory),
        "daemonPid": os.getpid(),
        "connectedHosts": len(local),
        "hostApps": sorted({f"{e.host_app} {e.version}" for e in local}),
        "latencyMs": 0.0,
    }


def list_machines(directory: HostDirectory, gateway: Gateway | None = None) -> dict[str, Any]:
    """The `list_machines` answer: this machine first, then the other machines of the space."""
    machines = [this_machine(directory, gateway)]
    if gateway is None and directory.gateway_problem is not None:
        status: dict[str, Any] = {
            "configured": True,
            "state": "config_error",
            "error": {"type": "config_error", "message": directory.gateway_problem},
        }
    elif gateway is None:
        status = {
            "configured": False,
            "state": "not_configured",
            "error": {"type": "gateway_not_configured", "message": NOT_CONFIGURED},
        }
    else:
        status = gateway.status()
        machines.extend(gateway.machines())
    online = sum(1 for m in machines if m["online"])
    return {"count": len(machines), "online": online, "machines": machines, "gateway": status}


def resolve_machine(directory: HostDirectory, gateway: Gateway | None, args: dict[str, Any]) -> str | None:
    """The machine id `args["machineId"]` names (an id or a name); None when absent."""
    value = args.get("machineId")
    if value is None:
        return None
    if gateway is not None:
        return gateway.resolve_machine(value)
    if value == directory.machine_id:
        return value
    if directory.gateway_problem is not None:
        raise DaemonError("config_error", f"{directory.gateway_problem} (asked for machine {value!r:.80})")
    raise DaemonError("gateway_not_configured", f"{NOT_CONFIGURED} (asked for machine {value!r:.80})")


def filter_host_instances(
    listing: dict[str, Any], directory: HostDirectory, gateway: Gateway | None, args: dict[str, Any]
) -> dict[str, Any]:
    """`list_host_instances`, narrowed to one machine when `machineId` is given."""
    machine = resolve_machine(directory, gateway, args)
    if machine is None:
        return listing
    hosts = [h for h in listing["hosts"] if h.get("machineId") == machine]
    local = machine == directory.machine_id
    return {
        **listing,
        "count": len(hosts),
        "hosts": hosts,
        "endpoints": listing["endpoints"] if local else [],
    }


async def launch_host(
    launcher: HostLauncher,
    directory: HostDirectory,
    gateway: Gateway | None,
    args: dict[str, Any],
    progress: ProgressFnT | None = None,
) -> dict[str, Any]:
    """`launch_host` here, or on the machine `machineId` names (with that machine's launch command).

    `progress` hears how far a launch on this machine is."""
    machine = resolve_machine(directory, gateway, args)
    rest = {k: v for k, v in args.items() if k != "machineId"}
    restart = args.get("restartHostInstanceId")
    if machine is None and isinstance(restart, str):  # a stuck host of another machine restarts there
        known = directory.known_host(restart)
        machine = known[0].machine_id if known is not None else None
    if machine is None or machine == directory.machine_id or gateway is None:
        try:
            return await launcher.launch(rest, progress)
        except DaemonError as err:
            wanted = args.get("hostApp")
            if err.type != "unknown_host_app" or gateway is None or not isinstance(wanted, str):
                raise
            there = gateway.launching(wanted)
            if not there:
                raise
            named = ", ".join(f"{name!r} ({machine_id})" for machine_id, name in there[:5])
            raise DaemonError(
                err.type,
                f"{err.message} The other machine(s) {named} start it: call launch_host again with "
                f"machineId {there[0][1]!r} (a filePath is then a path there).",
                {**err.details, "machines": [machine_id for machine_id, _ in there]},
            ) from None
    return await gateway.launch(machine, rest)


async def read_file_info(
    directory: HostDirectory, gateway: Gateway | None, args: dict[str, Any]
) -> dict[str, Any]:
    """`read_file_info` here, or on the machine `machineId` names (a path on that machine)."""
    machine = resolve_machine(directory, gateway, args)
    detail = args.get("detail", "summary")
    if machine is None or machine == directory.machine_id or gateway is None:
        return await filemeta.read_here(args["filePath"], detail)
    return await gateway.file_info(machine, args["filePath"], detail)
