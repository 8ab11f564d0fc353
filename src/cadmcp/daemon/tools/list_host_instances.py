"""`list_host_instances`: the hosts the daemon is connected to, and the endpoints it could not use."""

from __future__ import annotations

from typing import Any

from cadmcp.daemon import machines
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.limits import MAX_ID_CHARS
from cadmcp.daemon.tools.base import DaemonTool, ToolCall

NAME = "list_host_instances"

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "List running hosts",
    "description": (
        "Lists the CAD/BIM host instances the daemon is connected to (hostApp, version, PID, "
        "hostInstanceId, number of capabilities) and the endpoints it discovered but could not use, "
        "with the reason. Use it to see which applications are running or to pick a hostInstanceId "
        "for search_dynamic."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "machineId": {
                "type": "string",
                "description": "Only hosts on this machine (an id or name from list_machines).",
            }
        },
    },
}


def host_instances(directory: HostDirectory) -> dict[str, Any]:
    """Every connected host (this machine's and the mirrored ones) and every endpoint discovered."""
    hosts = [
        {
            **entry.routing(),
            "pid": entry.key.pid,
            "machineId": entry.key.machine_id,
            "protocolVersion": entry.protocol_version,
            "serverName": entry.server_name,
            "capabilities": len(entry.capabilities),
            "endpoint": entry.endpoint,
            **({"state": entry.shown_state()} if entry.state else {}),
        }
        for entry in sorted(directory.hosts().values(), key=lambda e: (e.host_app, e.version, e.key.pid))
    ]
    discovered = [
        {
            "hostApp": s.endpoint.host_app,
            "version": s.endpoint.version,
            "pid": s.endpoint.pid,
            "endpoint": str(s.endpoint.path),
            "status": s.status,
            **({"error": s.error} if s.error else {}),
        }
        for s in sorted(directory.states.values(), key=lambda s: s.endpoint.name)
    ]
    return {"count": len(hosts), "hosts": hosts, "endpoints": discovered}


async def _list(call: ToolCall) -> dict[str, Any]:
    directory = call.services.directory
    return machines.filter_host_instances(
        host_instances(directory), directory, call.services.gateway, call.args
    )


TOOL = DaemonTool(DEFINITION, _list, text_limits={"machineId": MAX_ID_CHARS}, waits_for_catalog=True)
