"""Other machines as this daemon sees them: presence, liveness, latency, mirrored catalogs.

Each machine's presence lists its hosts with a catalog digest. A host that is new or whose
digest changed is fetched once (`catalog` request) and installed in the local directory
like a local host, so search covers it with no request per search. A host that leaves the
presence is removed; a machine silent for its TTL goes offline and all its hosts leave
(their ids answer `host_disconnected`); it is forgotten after `forget` more seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.context import GatewayContext, GatewayPart
from cadmcp.daemon.gateway.remotelink import RemoteLink
from cadmcp.daemon.gateway.rpc import Deadlines, Inbox, RequestFailed
from cadmcp.daemon.gateway.settings import TOKEN_RE
from cadmcp.wire.echo import echo

log = logging.getLogger("cadmcp.daemon.gateway")

TICK = 0.25
MAX_CAPABILITIES = 5000
"""Capabilities taken from one remote host's catalog."""
CATALOG_DEADLINES = Deadlines(accept=10.0, silence=10.0, total=30.0)
PING_DEADLINES = Deadlines(accept=2.0, silence=2.0, total=2.0)


@dataclass
class RemoteHost:
    pid: int
    instance_id: str
    host_app: str
    version: str
    digest: str
    capabilities: int
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class RemoteMachine:
    """What this daemon knows of another machine."""

    machine_id: str
    name: str = ""
    user: str = ""
    os: dict[str, Any] = field(default_factory=dict)
    daemon: dict[str, Any] = field(default_factory=dict)
    read_only: bool = False
    remote_python: bool = True
    apps: list[str] = field(default_factory=list)
    """The host applications its `launch_host` starts."""
    heartbeat: float = 5.0
    ttl: float = 15.0
    hosts: dict[int, RemoteHost] = field(default_factory=dict)
    online: bool = True
    last_seen: float = 0.0
    last_seen_at: str = ""
    offline_since: float | None = None
    latency_ms: float | None = None
    seq: int = 0
    conflict: str | None = None
    """Set when two computers announce this machine's id (calls may reach either)."""
    conflict_seen: float = 0.0

    def describe(self) -> dict[str, Any]:
        """This machine in `list_machines`."""
        out: dict[str, Any] = {
            "machineId": self.machine_id,
            "name": self.name,
            "local": False,
            "online": self.online,
            "lastSeen": self.last_seen_at,
            "lastSeenSecondsAgo": round(time.monotonic() - self.last_seen, 1),
            "user": self.user,
            "os": self.os,
            "connectedHosts": len(self.hosts) if self.online else 0,
            "hostApps": sorted({f"{h.host_app} {h.version}" for h in self.hosts.values()})
            if self.online
            else [],
            "latencyMs": self.latency_ms if self.online else None,
            "readOnly": self.read_only,
            "remotePython": self.remote_python,
            "launchable": self.apps if self.online else [],
        }
        if self.daemon.get("version"):
            out["daemonVersion"] = self.daemon["version"]
        if self.conflict is not None and time.monotonic() - self.conflict_seen < 2 * self.ttl:
            out["conflict"] = self.conflict
        return out


def _two_computers(machine: RemoteMachine, daemon: dict[str, Any], state: Any) -> bool:
    """Whether an announcement comes from another computer than the one that announced this machine
    id a moment ago (both online): a daemon restarted on the same computer is not."""
    if state != "online" or not machine.online or time.monotonic() - machine.last_seen > machine.ttl:
        return False
    before, now = machine.daemon.get("box"), daemon.get("box")
    return before is not None and now is not None and before != now


def _number(value: Any, default: float, low: float, high: float) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return min(high, max(low, float(value)))
    return default


def _hosts(raw: Any) -> dict[int, RemoteHost]:
    hosts: dict[int, RemoteHost] = {}
    for item in raw[: frames.MAX_HOSTS] if isinstance(raw, list) else []:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("pid"), int)
            or isinstance(item.get("pid"), bool)
        ):
            continue
        hosts[item["pid"]] = RemoteHost(
            pid=item["pid"],
            instance_id=str(item.get("instanceId") or "")[:80],
            host_app=str(item.get("hostApp") or "")[:80],
            version=str(item.get("version") or "")[:40],
            digest=str(item.get("digest") or "")[:64],
            capabilities=int(item.get("capabilities") or 0)
            if isinstance(item.get("capabilities"), int)
            else 0,
            state=frames.bounded_state(item["state"]) if isinstance(item.get("state"), dict) else {},
        )
    return hosts


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)][:MAX_CAPABILITIES] if isinstance(value, list) else []


class Mirror(GatewayPart):
    """Follows every machine's presence in the space and keeps their hosts in the directory."""

    def __init__(self, context: GatewayContext, inbox: Inbox) -> None:
        super().__init__(context)
        self.inbox = inbox
        self.machines: dict[str, RemoteMachine] = {}
        self.synced: dict[HostKey, str] = {}
        """Remote hosts installed in the directory, with the catalog digest installed."""
        self.conflict: str | None = None
        self.lock_holder: Any = None
        """Set by the gateway: the pid holding this machine's registration lock (or None)."""
        self.own_box = ""
        """Set by the gateway: where this daemon runs (`registration.box_of`)."""
        self._fetching: dict[HostKey, bool] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self.own_instance: str | None = None

    async def run(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg
        client = self.connection.client
        sub = await client.subscribe(self.subjects.all_presence, cb=self._on_presence)
        self.connection.on_reconnect.append(self.discover)
        try:
            await self.discover()
            next_ping = 0.0
            while True:
                self._expire()
                now = time.monotonic()
                if now >= next_ping:
                    next_ping = now + self.settings.heartbeat
                    for machine in list(self.machines.values()):
                        if machine.online:
                            tg.start_soon(self._ping, machine)
                await anyio.sleep(TICK)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception), anyio.move_on_after(1):
                await sub.unsubscribe()
            with contextlib.suppress(ValueError):  # a restarted mirror registers itself again
                self.connection.on_reconnect.remove(self.discover)
            for key in list(self.synced):
                self.directory.remove(key)
            self.synced.clear()

    async def discover(self) -> None:
        """Ask every machine of the space to announce itself now."""
        with contextlib.suppress(Exception):
            await self.connection.client.publish(self.subjects.discover, b"{}")

    # -- presence ----------------------------------------------------------------------------
    async def _on_presence(self, msg: Any) -> None:
        try:
            self._presence(frames.decode(msg.data), msg.subject)
        except ValueError:
            return  # not JSON: not a presence
        except Exception:  # a presence this daemon cannot follow never stops the others
            log.exception("gateway presence on %s not followed", echo(msg.subject, 120))

    def _presence(self, body: dict[str, Any], subject: str) -> None:
        machine_id = body.get("machineId")
        if not isinstance(machine_id, str) or subject.rsplit(".", 1)[-1] != machine_id:
            return  # a presence must be published on its own machine's subject
        if not TOKEN_RE.match(machine_id):
            return
        daemon = body.get("daemon") if isinstance(body.get("daemon"), dict) else {}
        if machine_id == self.settings.machine_id:
            instance = daemon.get("instance")
            if (
                self.own_instance
                and instance
                and instance != self.own_instance
                and body.get("state") == "online"
                and not self._beside_us(daemon)
            ):
                conflict = (
                    f"Another machine announces itself with this machine's id {machine_id!r} (name "
                    f"{echo(body.get('name'))}); give one of them its own machineId setting."
                )
                if conflict != self.conflict:
                    log.warning("gateway: %s", conflict)
                self.conflict = conflict
            return
        seq = body.get("seq") if isinstance(body.get("seq"), int) else 0
        machine = self.machines.get(machine_id)
        if machine is None:
            machine = self.machines[machine_id] = RemoteMachine(machine_id)
        elif machine.daemon.get("instance") == daemon.get("instance") and seq <= machine.seq:
            return  # an older announcement than one already seen
        elif _two_computers(machine, daemon, body.get("state")):
            said = f"{machine.name!r} and {echo(body.get('name'))}"
            if machine.conflict is None:
                log.warning("gateway: two computers announce the machine id %r: %s", machine_id, said)
            machine.conflict = (
                f"Two computers announce the machine id {machine_id!r} ({said}), so calls may reach either; "
                "give one of them its own machineId setting."
            )
            machine.conflict_seen = time.monotonic()
        machine.seq = seq
        machine.name = str(body.get("name") or machine_id)[:120]
        machine.user = str(body.get("user") or "")[:64]
        machine.os = body["os"] if isinstance(body.get("os"), dict) else {}
        machine.daemon = body["daemon"] if isinstance(body.get("daemon"), dict) else {}
        machine.read_only = body.get("readOnly") is True
        machine.remote_python = body.get("remotePython") is not False
        apps = body.get("apps") if isinstance(body.get("apps"), list) else []
        machine.apps = [a[:80] for a in apps[: frames.MAX_APPS] if isinstance(a, str)]
        machine.heartbeat = _number(body.get("heartbeatSeconds"), 5.0, 0.1, 3600.0)
        machine.ttl = _number(body.get("ttlSeconds"), 3 * machine.heartbeat, 0.3, 10800.0)
        machine.last_seen = time.monotonic()
        machine.last_seen_at = datetime.now(UTC).isoformat(timespec="seconds")
        if body.get("state") == "offline":
            self._offline(machine)
            return
        if not machine.online or machine.latency_ms is None:
            if not machine.online:
                log.info("gateway machine back online id=%s name=%s", machine_id, machine.name)
            if self._tg is not None:
                self._tg.start_soon(self._ping, machine)
        machine.online, machine.offline_since = True, None
        machine.hosts = _hosts(body.get("hosts"))
        self._reconcile(machine)

    def _beside_us(self, daemon: dict[str, Any]) -> bool:
        """Whether an announcement with this machine's id comes from another daemon of this very
        computer (it holds the registration lock here), not from a computer with the same id."""
        holder = self.lock_holder() if self.lock_holder is not None else None
        box = daemon.get("box")
        return holder is not None and daemon.get("pid") == holder and (box is None or box == self.own_box)

    def _reconcile(self, machine: RemoteMachine) -> None:
        for key in [
            k for k in self.synced if k.machine_id == machine.machine_id and k.pid not in machine.hosts
        ]:
            self._remove(key)
        for pid, host in machine.hosts.items():
            key = HostKey(machine.machine_id, pid)
            if self.synced.get(key) != host.digest:
                self._fetch_soon(machine, key)
                continue
            entry = self.directory.entries.get(key)
            if entry is not None and entry.state != host.state:  # the host's state moved, not its catalog
                self.directory.entries[key] = dataclasses.replace(entry, state=host.state)

    def _offline(self, machine: RemoteMachine) -> None:
        if machine.online:
            log.info("gateway machine offline id=%s name=%s", machine.machine_id, machine.name)
        machine.online = False
        machine.offline_since = machine.offline_since or time.monotonic()
        machine.latency_ms = None
        for key in [k for k in self.synced if k.machine_id == machine.machine_id]:
            self._remove(key)

    def _remove(self, key: HostKey) -> None:
        self.synced.pop(key, None)
        self.directory.remove(key)

    def _expire(self) -> None:
        now = time.monotonic()
        for machine in list(self.machines.values()):
            if machine.online and now - machine.last_seen > machine.ttl:
                self._offline(machine)
            if not machine.online and now - (machine.offline_since or now) > self.settings.forget:
                del self.machines[machine.machine_id]

    # -- catalogs ----------------------------------------------------------------------------
    def _fetch_soon(self, machine: RemoteMachine, key: HostKey) -> None:
        if key in self._fetching:
            self._fetching[key] = True  # fetch again once the running fetch ends
            return
        self._fetching[key] = False
        if self._tg is not None:
            self._tg.start_soon(self._fetch, machine, key)

    async def _fetch(self, machine: RemoteMachine, key: HostKey) -> None:
        try:
            while True:
                self._fetching[key] = False
                try:
                    answer = await self.inbox.request(
                        self.subjects.machine(key.machine_id, "catalog"), {"pid": key.pid}, CATALOG_DEADLINES
                    )
                except RequestFailed as failed:
                    log.info(
                        "gateway catalog of %s pid=%s not fetched: %s", machine.name, key.pid, failed.message
                    )
                    return  # the next heartbeat retries while the digest differs
                self._install(machine, key, answer.get("ok"))
                if not self._fetching.get(key):
                    return
        finally:
            self._fetching.pop(key, None)

    def _install(self, machine: RemoteMachine, key: HostKey, catalog: Any) -> None:
        current = self.machines.get(key.machine_id)
        if not isinstance(catalog, dict) or current is not machine or not machine.online:
            return
        if key.pid not in machine.hosts:
            return  # it left while its catalog was on the way
        tools, resources, templates = (_dicts(catalog.get(k)) for k in ("tools", "resources", "templates"))
        entry = HostEntry.build(
            key,
            host_app=str(catalog.get("hostApp") or machine.hosts[key.pid].host_app)[:80],
            version=str(catalog.get("version") or machine.hosts[key.pid].version)[:40],
            endpoint=f"gateway:{machine.name}",
            protocol_version=str(catalog.get("protocolVersion") or "")[:20],
            server_name=str(catalog.get("serverName") or "")[:120],
            tools=tools,
            resources=resources,
            templates=templates,
            state=machine.hosts[key.pid].state,
        )
        entry = dataclasses.replace(entry, machine=machine.name, domain=catalog.get("domain"))
        link = RemoteLink(self.inbox, self.settings, self.subjects, entry)
        self.directory.install(entry, link, tools, resources, templates)
        # the digest the machine computed: what its presence will name while nothing changes
        self.synced[key] = str(catalog.get("digest") or entry.digest())
        log.info(
            "gateway catalog machine=%s host=%s pid=%s capabilities=%d",
            machine.name,
            entry.host_app,
            key.pid,
            len(entry.capabilities),
        )

    # -- latency -----------------------------------------------------------------------------
    async def _ping(self, machine: RemoteMachine) -> None:
        started = time.perf_counter()
        try:
            await self.inbox.request(self.subjects.machine(machine.machine_id, "ping"), {}, PING_DEADLINES)
        except RequestFailed:
            machine.latency_ms = None
            return
        machine.latency_ms = round((time.perf_counter() - started) * 1000, 2)
