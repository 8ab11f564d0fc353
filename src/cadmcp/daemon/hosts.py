"""Host discovery and the live set of host connections.

The directory scans the runtime directory (every `scan_interval` seconds and on file
system events), keeps only endpoints whose process is alive, and runs one task per host:
connect with a timeout, negotiate, list the catalog into an immutable `HostEntry`, then
follow the host's list-changed events, re-listing that host only. A host that hangs or
misbehaves only ever stalls its own task.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import stat
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
from mcp.client.subscriptions import listen
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cadmcp.daemon import pulse
from cadmcp.daemon.catalog import HostEntry, HostKey, IdLedger
from cadmcp.daemon.hostlink import HostLink, Link
from cadmcp.daemon.limits import clip_descriptions
from cadmcp.daemon.search import SearchIndex, capability_docs, meta_domain
from cadmcp.wire import endpoints, sockets
from cadmcp.wire.catalogbounds import MAX_HOST_RESOURCES, MAX_HOST_TOOLS, catalog_problem
from cadmcp.wire.meta import DOMAIN, HOST_STATE
from cadmcp.wire.passthrough import EndlessList
from cadmcp.wire.reconnect import ListChanges, describe, retry_delay

log = logging.getLogger("cadmcp.daemon")


class RemoteReach(Protocol):
    """What the gateway says of other machines' hosts it cannot reach."""

    def absence(self, key: HostKey) -> str | None:
        """Why the host `key` of another machine is out of reach, or None if it is gone."""

    def down(self) -> str | None:
        """Why other machines cannot be reached at all (the gateway is down), or None."""

    def unreached(self, machine_id: str) -> str | None:
        """Why the machine `machine_id` cannot be reached now (gateway down, machine offline), or None."""


def machine_id() -> str:
    """A stable id for this machine (systemd's machine-id, else a digest of the host name)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            value = Path(path).read_text().strip()
            if value:
                return value
    import hashlib

    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:32]


LAST_SEEN_HOSTS = 256
"""Hosts remembered after they go (to restart one that stopped answering, with its documents)."""
PROBE_MISSES = 2
"""Probes in a row a host may miss before its connection is failed (see `_watch_liveness`)."""
RETRY_MAX = 30.0
"""The longest wait, in seconds, before a host that failed is connected again."""
REFRESH_BUSY_RETRIES = 30
"""Catalog listings retried (each up to `list_timeout`) while a busy host holds the GIL."""


class CatalogRefused(ValueError):
    """A host's listing is over the bounds every host is held to (`cadmcp.wire.catalogbounds`), or
    never ends; the message says why."""


@contextlib.contextmanager
def _refused_when_endless() -> Iterator[None]:
    """A host whose list pages never end is refused like an oversized one."""
    try:
        yield
    except EndlessList as exc:
        raise CatalogRefused(f"catalog refused: {exc}; ask its author to end the list") from None


class HostUnresponsive(ConnectionError):
    """The host's MCP I/O stopped answering probes (process stopped, hung or unreachable)."""


@dataclass
class EndpointState:
    """What the daemon knows about one endpoint file."""

    endpoint: endpoints.Endpoint
    status: str = "discovered"  # discovered | connecting | connected | failed
    error: str | None = None
    attempts: int = 0
    retry_at: float = 0.0
    busy_since: float | None = None
    """Wall-clock time since which the connected host holds its GIL in one long call (None: not busy)."""


class HostDirectory:
    """Discovers hosts, keeps one connection and one catalog entry per live host."""

    def __init__(
        self,
        index: SearchIndex,
        *,
        directory: Path | None = None,
        scan_interval: float = 2.0,
        connect_timeout: float = 5.0,
        list_timeout: float = 10.0,
        probe_interval: float = 1.5,
        probe_timeout: float = 3.5,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.index = index
        self.directory = directory or endpoints.runtime_dir()
        self.scan_interval = scan_interval
        self.connect_timeout = connect_timeout
        self.list_timeout = list_timeout
        self.probe_interval = probe_interval
        self.probe_timeout = probe_timeout
        self.machine_id = machine_id()
        self.entries: dict[HostKey, HostEntry] = {}
        self.links: dict[HostKey, Link] = {}
        self.states: dict[Path, EndpointState] = {}
        self.ledger = IdLedger()
        self.gateway_problem: str | None = None
        """Why the configured gateway did not start (its settings are wrong): said by list_machines."""
        self.remote: RemoteReach | None = None
        """Set by the gateway: why hosts of other machines are out of reach (gateway down, machine
        offline), for answers that would otherwise call them gone."""
        self.own: HostKey | None = None
        """The key the daemon's own capabilities are listed under (`cadmcp.daemon.owncatalog`): an
        entry like a host's for search and invoke, but not a host instance."""
        self._recent: dict[str, None] = {}  # host instance ids, least recently invoked first
        self._last_seen: OrderedDict[str, tuple[HostKey, str, str, dict[str, Any]]] = OrderedDict()
        self._state_taken: OrderedDict[HostKey, float] = OrderedDict()  # when a call answer last gave a state
        self._on_change = on_change
        self._tasks: dict[Path, anyio.CancelScope] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._wake = anyio.Event()
        self._scanned = False
        self._caught_up = False

    # -- lifecycle ---------------------------------------------------------------------------
    async def run(self, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._watch_directory)
            task_status.started()
            while True:
                await self.scan()
                with anyio.move_on_after(self.scan_interval):
                    await self._wake.wait()
                self._wake = anyio.Event()

    def wake(self) -> None:
        """Scan now instead of at the next interval."""
        self._wake.set()

    def is_settled(self) -> bool:
        """Whether discovery has caught up: scanned once and no endpoint is still connecting."""
        return self._scanned and not any(
            state.status == "connecting" for path, state in self.states.items() if path in self._tasks
        )

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait (bounded: by default the time a connection and its listing may take) until
        `is_settled()`; returns whether it settled in time."""
        limit = self.connect_timeout + self.list_timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while not self.is_settled():
                await anyio.sleep(0.02)
            return True
        return False

    async def caught_up(self) -> None:
        """Once, for the first listing after start: wait (at most `connect_timeout`) until the
        hosts that were already running are connected, so a client that searches as soon as it
        has started the daemon does not find an empty catalog. Later calls never wait."""
        if self._caught_up:
            return
        await self.settled(self.connect_timeout)
        self._caught_up = True

    async def _watch_directory(self) -> None:
        try:
            from watchfiles import awatch
        except ImportError:  # pragma: no cover - watchfiles is a dependency; polling still works
            return
        with contextlib.suppress(Exception):
            # rust_timeout bounds how long cancelling the watch waits for its thread (the default, 5 s,
            # held every daemon exit that long)
            async for _ in awatch(self.directory, debounce=50, step=20, recursive=False, rust_timeout=200):
                self.wake()

    async def scan(self) -> None:
        """One pass over the runtime directory: start tasks for new live hosts, drop dead ones."""
        found = {ep.path: ep for ep in endpoints.list_endpoints(self.directory)}
        now = time.monotonic()
        for path, ep in found.items():
            if not endpoints.pid_alive(ep.pid):
                self._forget(path)
                with contextlib.suppress(OSError):
                    path.unlink()  # a crashed host's leftover socket in our private directory
                continue
            state = self.states.setdefault(path, EndpointState(ep))
            problem = _endpoint_problem(ep, self.local_entries())
            if problem is not None:
                state.status, state.error = "failed", problem
                continue
            if path not in self._tasks and now >= state.retry_at and self._tg is not None:
                scope = anyio.CancelScope()
                self._tasks[path] = scope
                state.status = "connecting"
                self._tg.start_soon(self._host_task, ep, scope)
        for path in list(self.states):
            if path not in found:
                self._forget(path)
        self._scanned = True

    def _forget(self, path: Path) -> None:
        scope = self._tasks.pop(path, None)
        if scope is not None:
            scope.cancel()
        self.states.pop(path, None)

    # -- one host ----------------------------------------------------------------------------
    async def _host_task(self, ep: endpoints.Endpoint, scope: anyio.CancelScope) -> None:
        key = HostKey(self.machine_id, ep.pid)
        state = self.states.get(ep.path) or EndpointState(ep)
        state.attempts += 1
        try:
            with scope:
                await self._serve_host(ep, key, state)
            if not scope.cancel_called:
                state.status, state.error = "failed", "the host closed the connection"
        except Exception as exc:  # any failure stays inside this host's task
            state.status = "failed"
            state.error = describe(exc)
            log.info("host %s: %s", ep.name, state.error)
        finally:
            state.retry_at = time.monotonic() + retry_delay(
                state.attempts, self.scan_interval, min(RETRY_MAX, self.scan_interval * 16)
            )
            self._tasks.pop(ep.path, None)
            self.remove(key, str(ep.path))

    async def _serve_host(self, ep: endpoints.Endpoint, key: HostKey, state: EndpointState) -> None:
        changes = ListChanges()
        async with (
            sockets.connect(ep.path, timeout=self.connect_timeout) as (read, write),
            HostLink(read, write, message_handler=changes.on_message) as link,
        ):
            with anyio.fail_after(self.connect_timeout):
                version = await link.connect()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_liveness, link, state)
                if version in MODERN_PROTOCOL_VERSIONS:
                    async with listen(link, tools_list_changed=True, resources_list_changed=True) as events:
                        await self._refresh_patiently(ep, key, link, version)
                        state.status, state.error, state.attempts = "connected", None, 0
                        async for _ in events:
                            await self._refresh_patiently(ep, key, link, version)
                else:
                    await self._refresh_patiently(ep, key, link, version)
                    state.status, state.error, state.attempts = "connected", None, 0
                    async for _ in changes.received:
                        await self._refresh_patiently(ep, key, link, version)
                tg.cancel_scope.cancel()

    async def _watch_liveness(self, link: HostLink, state: EndpointState) -> None:
        """Fail the connection (and with it every call in flight) once the host stops answering.

        A host's MCP I/O runs on its own thread, so a live host answers probes even while a tool
        runs for minutes, except while its application thread holds the GIL in one long C call
        (a tessellation, a recompute). A probe missed while the process is running and its CPU
        time advances (`pulse`) is that: a slow tool on a healthy host, not a miss. Only a
        stopped, hung or unreachable process misses `PROBE_MISSES` in a row.
        """
        pid = state.endpoint.pid
        misses = 0
        busy_since: float | None = None
        state.busy_since = None
        while True:
            await anyio.sleep(self.probe_interval)
            before = pulse.sample(pid, time.monotonic())
            try:
                with anyio.fail_after(self.probe_timeout):
                    await link.probe()
                misses = 0
                if busy_since is not None:
                    busy, busy_since = time.monotonic() - busy_since, None
                    state.busy_since = None
                    log.info("host pid=%s answers again after %.1f s busy", pid, busy)
            except TimeoutError:
                if pulse.working(before, pulse.sample(pid, time.monotonic())):
                    misses = 0
                    if busy_since is None:
                        busy_since = before.at if before else time.monotonic()  # since the probe went
                        state.busy_since = time.time() - (time.monotonic() - busy_since)
                        log.info("host pid=%s is busy (holds the GIL, CPU advancing): kept", pid)
                    continue
                misses += 1
                if misses >= PROBE_MISSES:
                    waited = misses * self.probe_timeout + self.probe_interval
                    reason = f"the host stopped answering (no reply to {misses} probes in {waited:g} s)"
                    state.error = link.lost_reason = reason
                    raise HostUnresponsive(reason) from None

    async def _refresh_patiently(
        self, ep: endpoints.Endpoint, key: HostKey, link: HostLink, version: str
    ) -> None:
        """`_refresh`, listed again while the host is busy in one long C call.

        A list request that reaches a host whose application thread holds the GIL waits for it as
        probes do; its timeout must not tear the connection (and the call in flight) down while
        the process runs and does work. A host that is not working lets the timeout through.
        """
        for _ in range(REFRESH_BUSY_RETRIES):
            before = pulse.sample(ep.pid, time.monotonic())
            try:
                await self._refresh(ep, key, link, version)
                return
            except TimeoutError:
                if not pulse.working(before, pulse.sample(ep.pid, time.monotonic())):
                    raise
                log.info("host pid=%s is busy; its catalog is listed again", ep.pid)
        await self._refresh(ep, key, link, version)

    async def _refresh(self, ep: endpoints.Endpoint, key: HostKey, link: HostLink, version: str) -> None:
        """List the host's whole catalog and swap its entry (and search segment) at once."""
        started = time.perf_counter()
        with anyio.fail_after(self.list_timeout), _refused_when_endless():
            tools, meta = await link.list_all("tools/list", "tools", self.list_timeout, MAX_HOST_TOOLS)
            resources, _ = await link.list_all(
                "resources/list", "resources", self.list_timeout, MAX_HOST_RESOURCES
            )
            templates, _ = await link.list_all(
                "resources/templates/list", "resourceTemplates", self.list_timeout, MAX_HOST_RESOURCES
            )
        problem = catalog_problem(tools, resources, templates)
        if problem is not None:
            raise CatalogRefused(f"catalog refused: {problem}; ask its author for a smaller one")
        tools, resources, templates = (clip_descriptions(x) for x in (tools, resources, templates))
        state = meta.get(HOST_STATE)
        if self._state_taken.get(key, 0.0) > started and key in self.entries:
            state = self.entries[key].state  # a call answered since this listing began: its state is newer
        info = link.server_info
        entry = HostEntry.build(
            key,
            host_app=ep.host_app,
            version=ep.version,
            endpoint=str(ep.path),
            protocol_version=version,
            server_name=info.name if info else "",
            tools=tools,
            resources=resources,
            templates=templates,
            state=state if isinstance(state, dict) else {},
        )
        entry = dataclasses.replace(entry, domain=meta.get(DOMAIN))
        self.install(entry, link, tools, resources, templates)
        log.info(
            "catalog host=%s pid=%s tools=%d resources=%d templates=%d durationMs=%d",
            ep.host_app,
            ep.pid,
            len(tools),
            len(resources),
            len(templates),
            (time.perf_counter() - started) * 1000,
        )

    def install(
        self,
        entry: HostEntry,
        link: Link,
        tools: list[dict[str, Any]],
        resources: list[dict[str, Any]],
        templates: list[dict[str, Any]],
    ) -> None:
        """Put one host's catalog in the directory and the search index, replacing what it had.

        Local hosts come here from `_refresh`; hosts of other machines from the gateway's mirror.
        """
        key = entry.key
        ids = {(c.kind, c.target): c.id for c in entry.capabilities}
        docs = capability_docs(
            host_app=entry.host_app,
            host_version=entry.version,
            host_key=key.instance_id,
            tools=tools,
            resources=resources,
            resource_templates=templates,
            key=lambda kind, target: ids[(kind, target)],
        )
        self.ledger.record(entry)
        self.entries[key] = entry
        self._last_seen[key.instance_id] = (key, entry.host_app, entry.version, entry.state)
        self._last_seen.move_to_end(key.instance_id)
        while len(self._last_seen) > LAST_SEEN_HOSTS:
            self._last_seen.popitem(last=False)
        self.links[key] = link
        docs = [d for d in docs if d.key in entry.by_id]
        self.index.replace_host(key.instance_id, docs, domain=meta_domain({DOMAIN: entry.domain}))
        if self._on_change:
            self._on_change()

    def local_entries(self) -> dict[HostKey, HostEntry]:
        """The hosts of this machine (the gateway also installs other machines' hosts here; the
        daemon's own capabilities are not a host)."""
        return {k: e for k, e in self.entries.items() if k.machine_id == self.machine_id and k != self.own}

    def hosts(self) -> dict[HostKey, HostEntry]:
        """Every connected host instance, of this machine and others (not the daemon's own entry)."""
        return {k: e for k, e in self.entries.items() if k != self.own}

    def known_host(self, instance_id: str) -> tuple[HostKey, str, str, dict[str, Any]] | None:
        """(key, app, version, last state) of a connected host, or of one seen lately that is gone
        or stopped answering."""
        for entry in self.entries.values():
            if entry.key.instance_id == instance_id:
                return entry.key, entry.host_app, entry.version, entry.state
        return self._last_seen.get(instance_id)

    def out_of_reach(self, key: HostKey) -> str | None:
        """Why a host of another machine cannot be reached now though it may still run there (the
        gateway is down, its machine offline), or None (it is gone, or it is a host of this one)."""
        if key.machine_id == self.machine_id or self.remote is None:
            return None
        return self.remote.absence(key)

    def not_connected(self, key: HostKey) -> str | None:
        """Why a host of this machine whose process still runs is not connected right now (it
        stopped answering and the daemon retries it), or None when no such process is known."""
        if key.machine_id != self.machine_id:
            return None
        for state in self.states.values():
            if state.endpoint.pid == key.pid and endpoints.pid_alive(key.pid):
                return state.error or state.status
        return None

    def take_state(self, key: HostKey, result: dict[str, Any]) -> dict[str, Any]:
        """`result` without the host state a call's answer carries (`HOST_STATE` in its `_meta`, when
        the call changed it), which becomes the host's state here at once: list_host_instances then
        agrees with the answer (a save-as, a document opened) before the host's next listing."""
        meta = result.get("_meta")
        if not isinstance(meta, dict) or HOST_STATE not in meta:
            return result
        state = meta[HOST_STATE]
        entry = self.entries.get(key)
        if isinstance(state, dict) and entry is not None:
            self._state_taken[key] = time.perf_counter()
            self._state_taken.move_to_end(key)
            while len(self._state_taken) > LAST_SEEN_HOSTS:
                self._state_taken.popitem(last=False)
        if isinstance(state, dict) and entry is not None and entry.state != state:
            self.entries[key] = dataclasses.replace(entry, state=state)
            if self._on_change:
                self._on_change()
        rest = {k: v for k, v in meta.items() if k != HOST_STATE}
        return {**{k: v for k, v in result.items() if k != "_meta"}, **({"_meta": rest} if rest else {})}

    def note_invoked(self, key: HostKey) -> None:
        """Remember that a capability of this host was just invoked (search prefers recent hosts)."""
        self._recent.pop(key.instance_id, None)
        self._recent[key.instance_id] = None

    def recent_hosts(self) -> list[str]:
        """Instance ids of connected hosts, the most recently invoked first (never-invoked ones left out)."""
        live = {key.instance_id for key in self.entries}
        return [i for i in reversed(self._recent) if i in live]

    def remove(self, key: HostKey, endpoint: str | None = None) -> None:
        """Forget a host: its entry, link and search segment (its ids turn stale); with `endpoint`,
        only if that endpoint is the one serving it."""
        entry = self.entries.get(key)
        if entry is not None and endpoint is not None and entry.endpoint != endpoint:
            return  # another endpoint file claimed this PID; the live host stays
        if self.entries.pop(key, None) is not None:
            self.index.remove_host(key.instance_id)
        self.links.pop(key, None)
        self._recent.pop(key.instance_id, None)


def _endpoint_problem(ep: endpoints.Endpoint, entries: dict[HostKey, HostEntry]) -> str | None:
    """Why an endpoint file must not be connected to (None when it may be)."""
    try:
        info = ep.path.lstat()
    except OSError as exc:
        return f"cannot be examined ({exc.strerror})"
    if not stat.S_ISSOCK(info.st_mode):
        return "not a socket (ignored)"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "owned by another user (ignored)"
    for entry in entries.values():
        if entry.key.pid == ep.pid and entry.endpoint != str(ep.path):
            return f"claims pid {ep.pid}, which {Path(entry.endpoint).name} already serves (ignored)"
    return None
