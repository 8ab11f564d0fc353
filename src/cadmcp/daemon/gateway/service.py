"""`Gateway`: this daemon's membership in a space of machines over NATS.

It owns the connection, the reply inbox, the registration of this machine (when this
daemon holds it) and the mirror of the others, and answers what the daemon's tools ask
of other machines: `list_machines`, `launch_host` and `read_file_info` with a `machineId`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import anyio.abc

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.errors import DaemonError, validation_error
from cadmcp.daemon.gateway.connection import Connection
from cadmcp.daemon.gateway.context import GatewayContext
from cadmcp.daemon.gateway.mirror import Mirror, RemoteMachine
from cadmcp.daemon.gateway.registration import Registrar
from cadmcp.daemon.gateway.remotelink import ACCEPT_SECONDS
from cadmcp.daemon.gateway.responder import KEEPALIVE, Responder
from cadmcp.daemon.gateway.rpc import Deadlines, Inbox, RequestFailed, new_nonce
from cadmcp.daemon.gateway.settings import Settings
from cadmcp.daemon.gateway.subjects import Subjects
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.launching import HostLauncher
from cadmcp.daemon.policy.gate import Gate
from cadmcp.wire.echo import echo

log = logging.getLogger("cadmcp.daemon.gateway")

RESTART_DELAY = 2.0
LAUNCH_SEARCHABLE_WAIT = 15.0
"""Seconds a remote launch waits for the new host's catalog to be mirrored here."""
POLICY_DEADLINES = Deadlines(accept=5.0, silence=5.0, total=10.0)
"""How long `cadmcp policy show` waits for another machine's answer."""
FILEINFO_DEADLINES = Deadlines(accept=ACCEPT_SECONDS, silence=3 * KEEPALIVE, total=600.0)
"""How long `read_file_info` on another machine waits (its reader keeps the request alive)."""


class Gateway:
    """Joins the daemon to its space: registration, heartbeats, remote catalogs, routing."""

    def __init__(
        self,
        settings: Settings,
        directory: HostDirectory,
        launcher: HostLauncher | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.settings = settings
        self.directory = directory
        directory.machine_id = settings.machine_id  # local hosts are keyed with the configured id
        self.subjects = Subjects(settings.space)
        root = self.subjects.inbox(settings.machine_id, new_nonce())
        self.connection = Connection(settings, self.subjects, inbox_prefix=f"{root}.x")
        self.inbox = Inbox(self.connection, root)
        context = GatewayContext(self.connection, settings, self.subjects, directory)
        self.responder = Responder(context, launcher, gate)
        self.registrar = Registrar(context, self.responder)
        self.mirror = Mirror(context, self.inbox)
        self.mirror.own_instance = self.registrar.instance
        self.mirror.own_box = self.registrar.box
        self.mirror.lock_holder = self.registrar.lock.holder
        directory.remote = self

    async def run(self, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect and take part until cancelled; nothing here ever stops the daemon."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._guard, "connection", self.connection.run)
            task_status.started()
            await self.connection.up.wait()
            await self.inbox.start()
            tg.start_soon(self._guard, "registration", self.registrar.run, tg)
            tg.start_soon(self._guard, "mirror", self.mirror.run, tg)

    async def _guard(self, name: str, run: Any, *args: Any) -> None:
        """Run a part; if it fails, log it and start it again after a pause."""
        while True:
            try:
                await run(*args)
                return
            except Exception as exc:
                log.warning("gateway %s failed (%s); restarting", name, self.settings.redact(repr(exc))[:300])
            await anyio.sleep(RESTART_DELAY)

    # -- what the daemon's tools ask -------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        out = {**self.connection.status(), **self.registrar.status()}
        if self.mirror.conflict:
            out["conflict"] = self.mirror.conflict
        return out

    def down(self) -> str | None:
        """Why no other machine can be reached (the gateway is not connected), or None."""
        if self.connection.connected:
            return None
        return f"{self.connection.describe_down()} (list_machines shows the gateway's state)"

    def absence(self, key: HostKey) -> str | None:
        """Why a host another machine last listed is out of reach, or None when it is gone (or the
        machine never listed it)."""
        machine = self.mirror.machines.get(key.machine_id)
        if machine is None or key.pid not in machine.hosts:
            return None
        why = self.unreached(key.machine_id)
        return f"{why}." if why is not None else None

    def machines(self) -> list[dict[str, Any]]:
        """Other machines of the space: online first, then by name."""
        found = sorted(self.mirror.machines.values(), key=lambda m: (not m.online, m.name, m.machine_id))
        return [m.describe() for m in found]

    def resolve_machine(self, value: Any) -> str:
        """The machine id `value` names (an id or a name), this machine's included."""
        if not isinstance(value, str) or not value:
            raise validation_error("machineId must be a machine id (or name) from list_machines.")
        if value in (self.settings.machine_id, self.settings.machine_name):
            return self.settings.machine_id
        if value in self.mirror.machines:
            return value
        named = [m.machine_id for m in self.mirror.machines.values() if m.name == value]
        if len(named) == 1:
            return named[0]
        known = sorted(f"{m.name} ({m.machine_id})" for m in self.mirror.machines.values())
        down = self.down()
        if down is not None and not known:  # nothing can be known: say why, not that it does not exist
            raise DaemonError(
                "gateway_down",
                f"No other machine can be reached, so {echo(value)} is not known here: the gateway is not "
                f"connected: {down}.",
            )
        raise DaemonError(
            "unknown_machine",
            f"No machine {echo(value)} is known on the gateway (known: {', '.join(known) or 'none'}, and "
            f"this one, {self.settings.machine_name} ({self.settings.machine_id})). Call list_machines.",
        )

    def unreached(self, machine_id: str) -> str | None:
        """Why another machine of the space cannot be reached now (the gateway down, the machine
        offline), or None."""
        if machine_id == self.settings.machine_id:
            return None
        machine = self.mirror.machines.get(machine_id)
        name = (machine.name or machine.machine_id) if machine is not None else machine_id
        down = self.down()
        if down is not None:
            return f"the gateway is down, so {name!r} cannot be reached: {down}"
        if machine is not None and not machine.online:
            return f"the machine {name!r} is offline (its daemon stopped answering heartbeats)"
        return None

    async def policies(self, pattern: str) -> list[dict[str, Any]]:
        """`cadmcp policy show` on every online machine: each one's decisions, by its own policy, for
        calls from other machines (`{machineId, machine, lines}` or `{machineId, machine, error}`)."""
        answers: list[dict[str, Any]] = []

        async def one(machine: Any) -> None:
            row: dict[str, Any] = {"machineId": machine.machine_id, "machine": machine.name}
            subject = self.subjects.machine(machine.machine_id, "policy")
            try:
                answer = await self.inbox.request(subject, {"pattern": pattern}, POLICY_DEADLINES)
            except RequestFailed as failed:
                row["error"] = failed.message
            else:
                ok = answer.get("ok")
                if isinstance(ok, dict) and isinstance(ok.get("lines"), list):
                    row["lines"] = [str(line) for line in ok["lines"]]
                else:
                    row["error"] = str((answer.get("error") or {}).get("message") or "no answer")
            answers.append(row)

        async with anyio.create_task_group() as tg:
            for machine in list(self.mirror.machines.values()):
                if machine.online:
                    tg.start_soon(one, machine)
        return sorted(answers, key=lambda r: r["machine"])

    def launching(self, host_app: str) -> list[tuple[str, str]]:
        """The online machines (id, name) whose `launch_host` starts `host_app`."""
        wanted = host_app.casefold()
        return sorted(
            (m.machine_id, m.name or m.machine_id)
            for m in self.mirror.machines.values()
            if m.online and any(a.casefold() == wanted for a in m.apps)
        )

    async def launch(self, machine_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """`launch_host` on another machine: its own configured launch command runs there."""
        machine = self._online(machine_id, "nothing was started")
        args = {"detach": True, **args}  # a remote host outlives whichever daemon serves the machine now
        timeout = args.get("timeoutSeconds")
        limit = (
            float(timeout) if isinstance(timeout, int | float) and not isinstance(timeout, bool) else 120.0
        )
        body = {
            "from": {"machineId": self.settings.machine_id, "name": self.settings.machine_name},
            "args": args,
        }
        deadlines = Deadlines(accept=ACCEPT_SECONDS, silence=3 * KEEPALIVE, total=limit + 30.0)
        try:
            answer = await self.inbox.request(self.subjects.machine(machine_id, "launch"), body, deadlines)
        except RequestFailed as failed:
            raise DaemonError(
                "launch_failed",
                f"Could not launch on {machine.name!r}: {failed.message}"
                + (
                    " The host may still be starting there; call list_host_instances."
                    if failed.started
                    else ""
                ),
                {"machineId": machine_id, "executionStarted": failed.started},
            ) from None
        if isinstance(answer.get("error"), dict):
            error = dict(answer["error"])
            said = str(error.pop("message", ""))
            kind = str(error.pop("type", "launch_failed"))
            if kind != "remote_refused":  # that machine's own choice, which names it, has nothing to fix
                said = (
                    f"On the machine {machine.name!r}: {said} (what to fix, a file or a command, is on that "
                )
                said += "machine: do it there)"
            raise DaemonError(kind, said, {**error, "machineId": machine_id})
        result = answer.get("ok") if isinstance(answer.get("ok"), dict) else {}
        pid = result.get("pid")
        entry = await self._wait_mirrored(HostKey(machine_id, pid)) if isinstance(pid, int) else None
        return {
            **result,
            "machineId": machine_id,
            "machine": machine.name,
            "searchable": entry is not None,
        }

    async def file_info(self, machine_id: str, path: str, detail: str) -> dict[str, Any]:
        """`read_file_info` on another machine: `path` is a path there, read by its daemon."""
        machine = self._online(machine_id, "its files cannot be read")
        body = {
            "from": {"machineId": self.settings.machine_id, "name": self.settings.machine_name},
            "args": {"filePath": path, "detail": detail},
        }
        try:
            answer = await self.inbox.request(
                self.subjects.machine(machine_id, "fileinfo"), body, FILEINFO_DEADLINES
            )
        except RequestFailed as failed:
            raise DaemonError(
                "remote_unreachable",
                f"Could not read the file on {machine.name!r}: {failed.message}",
                {"machineId": machine_id},
            ) from None
        if isinstance(answer.get("error"), dict):
            error = dict(answer["error"])
            said = str(error.pop("message", ""))
            raise DaemonError(
                str(error.pop("type", "read_failed")),
                f"On the machine {machine.name!r}: {said}",
                {**error, "machineId": machine_id},
            )
        result = answer.get("ok") if isinstance(answer.get("ok"), dict) else {}
        return {**result, "machineId": machine_id, "machine": machine.name}

    def _online(self, machine_id: str, so: str) -> RemoteMachine:
        """The machine, when it is online; else `machine_offline` saying what that means (`so`)."""
        machine = self.mirror.machines.get(machine_id)
        if machine is None or not machine.online:
            raise DaemonError(
                "machine_offline",
                f"The machine {machine_id!r} is offline; {so}. Call list_machines.",
                {"machineId": machine_id},
            )
        return machine

    async def _wait_mirrored(self, key: HostKey) -> HostEntry | None:
        deadline = time.monotonic() + LAUNCH_SEARCHABLE_WAIT
        while time.monotonic() < deadline:
            entry = self.directory.entries.get(key)
            if entry is not None:
                return entry
            await anyio.sleep(0.05)
        return None
