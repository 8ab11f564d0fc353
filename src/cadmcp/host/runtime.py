"""The host runtime: serve a catalog over a local socket from inside an application.

    runtime = HostRuntime("MyCAD", "2026")
    runtime.add_server(my_mcp_server)      # an ordinary MCP SDK MCPServer
    runtime.run()                          # headless: this thread becomes the app thread

MCP I/O runs on a background thread with its own event loop; every sync tool and
resource function runs on the application thread (see `cadmcp.host.appthread`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cadmcp.host.appthread import AppThread, Dispatcher, HostBusy, QueueAppThread
from cadmcp.host.catalog import CatalogStore
from cadmcp.host.providers import Provider, bind_to_app_thread
from cadmcp.host.relay import relaying
from cadmcp.wire import endpoints
from cadmcp.wire.calllog import CallLogger
from cadmcp.wire.endpoints import pid_alive
from cadmcp.wire.lifecycle import PARENT_PID_ENV
from cadmcp.wire.meta import HOST_STATE, TASK_SUPPORT
from cadmcp.wire.sockets import Intercept, Reply, message_streams

log = logging.getLogger("cadmcp.host")

_current: HostRuntime | None = None
_DONE = object()


def _step(steps: Any) -> bool:
    """Run one step of a generator job; True when it had no more."""
    return next(steps, _DONE) is _DONE


WARM_UP_IDLE_S = 0.1
"""A warm-up step starts only after this long without a request (listen streams aside) in flight."""


MIB = 1024 * 1024
STOP_GRACE = 10.0
"""Seconds a host given SIGTERM waits for its application thread to stop before it ends anyway."""
MAX_RESULT_BYTES = 48 * MIB
"""The largest tool or read result a host sends (well inside what a client link accepts)."""


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def result_size(result: Any) -> int:
    """Bytes of text and base64 data in a tool or read result (what dominates its wire size);
    reads the model's fields without serialising it."""
    size = 0
    items = [*(_field(result, "content") or []), *(_field(result, "contents") or [])]
    for item in items:
        resource = _field(item, "resource") or item
        for name in ("text", "data", "blob"):
            value = _field(resource, name)
            if isinstance(value, str | bytes):
                size += len(value)
    structured = _field(result, "structured_content") or _field(result, "structuredContent")
    if structured is not None:
        from cadmcp.wire.jsonwire import dumps

        size += len(dumps(structured))
    return size


def check_result_size(result: Any) -> None:
    """Refuse a result over `MAX_RESULT_BYTES` (MCPError typed `result_too_large`)."""
    size = result_size(result)
    if size > MAX_RESULT_BYTES:
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"The result is {size // MIB} MiB as sent (its text and its structured content each "
            f"count), over the {MAX_RESULT_BYTES // MIB} MiB a host sends; ask for less (a smaller image, "
            "fewer rows, a narrower query).",
            data={"type": "result_too_large", "bytes": size, "limit": MAX_RESULT_BYTES},
        )


async def bound_result_size(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
    """Refuse to send a result over `MAX_RESULT_BYTES` (typed `result_too_large`, link kept)."""
    result = await call_next(ctx)
    if ctx.method in ("tools/call", "resources/read"):
        check_result_size(result)
    return result


_BINDINGS = itertools.count(1)


def _exited(what: str, exc: SystemExit) -> str:
    """What a toolset function that called ``sys.exit`` (or raised SystemExit) is told."""
    return (
        f"{what} called sys.exit({exc.code!r}): a toolset function returns or raises, it never ends the "
        "host. The host goes on serving; a transaction the function was in undid its changes. Raise an "
        "exception to fail the call."
    )


def _with_state(result: Any, state: dict[str, Any]) -> Any:
    """A call's result with the host state the call left (`HOST_STATE` in its `_meta`): the caller
    sees the state as of the answer, not as of its next listing (a save-as, a document opened)."""
    if isinstance(result, dict):
        return {**result, "_meta": {**(result.get("_meta") or {}), HOST_STATE: state}}
    if isinstance(result, types.Result):
        return result.model_copy(update={"meta": {**(result.meta or {}), HOST_STATE: state}})
    return result


def _task_support_in_meta(tool: types.Tool) -> types.Tool:
    """Mirror a tool's `execution.taskSupport` into its `_meta` (the 2026-07-28 tool schema has no
    `execution`), so the daemon sees it whatever protocol the two speak."""
    support = tool.execution.task_support if tool.execution is not None else None
    if support is None or (tool.meta or {}).get(TASK_SUPPORT) is not None:
        return tool
    return tool.model_copy(update={"meta": {**(tool.meta or {}), TASK_SUPPORT: support}})


def follow_parent() -> None:
    """Stop this host (SIGTERM to itself) once the daemon that launched it is gone.

    Only for hosts the daemon launched attached (`CADMCP_PARENT_PID`). On Linux the kernel
    signals at once when the direct parent exits (PR_SET_PDEATHSIG, set here after exec, never
    in the forked child); a watcher thread covers launcher scripts and other platforms.
    """
    raw = os.environ.pop(PARENT_PID_ENV, "")
    if not raw.isdigit():
        return
    parent = int(raw)
    if sys.platform.startswith("linux") and os.getppid() == parent:
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    def watch() -> None:
        while pid_alive(parent):
            time.sleep(1.0)
        log.info("the daemon that launched this host (pid %d) is gone; stopping", parent)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="cadmcp-parent-watch", daemon=True).start()


def current() -> HostRuntime:
    """The host runtime serving this process (for toolset code that needs the live app)."""
    if _current is None:
        raise RuntimeError("no cadmcp host runtime is running in this process")
    return _current


class HostRuntime:
    """Serves one application's MCP catalog on `cadmcp_{Host}_{Version}_{PID}.sock`."""

    def __init__(
        self,
        host_app: str,
        version: str,
        *,
        app_thread: AppThread | None = None,
        runtime_dir: Path | None = None,
        application: Any = None,
        instructions: str | None = None,
    ) -> None:
        self.host_app = host_app
        self.version = version
        self.application = application
        """What toolset code gets from `cadmcp.host.current().application` (the live app)."""
        self.app_thread: AppThread = app_thread or QueueAppThread()
        self.dispatcher = Dispatcher(self.app_thread)
        self.catalog = CatalogStore()
        self._runtime_dir = runtime_dir
        self._bus = InMemorySubscriptionBus()
        self._legacy_connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._io_thread: threading.Thread | None = None
        self._loop_token: anyio.lowlevel.EventLoopToken | None = None
        self._ready = threading.Event()
        self._stop: anyio.Event | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._startup_error: BaseException | None = None
        self.endpoint: Path | None = None
        self._warm_ups: list[Callable[[], Any]] = []
        self._loads: list[Callable[[], Any]] = []
        self._loads_pending = 0
        self._loaded: anyio.Event | None = None  # made on the I/O loop (start)
        self._warm_up_lock = threading.Lock()
        self._serving = False
        self._in_flight = 0  # requests being handled (I/O loop only)
        self._last_activity = time.monotonic()
        self._state_lock = threading.Lock()
        self._state: dict[str, Any] = {"phase": "ready"}
        self._list_meta: dict[str, Any] = {}
        self._warm_ups_pending = 0
        self.intercept: Callable[[Reply], Intercept] | None = None
        """Makes, per connection, a path beside the MCP server that answers some lines itself (see
        `cadmcp.wire.sockets.message_streams`); set before `start`."""
        self.server = self._build_server(instructions)

    # -- catalog ---------------------------------------------------------------------------
    def add_server(
        self,
        server: MCPServer[Any] | Server[Any],
        *,
        origin: str = "builtin",
        priority: int = 0,
        name: str | None = None,
    ) -> Provider:
        """Serve every tool, resource and template of an MCP SDK server from this host."""
        bind_to_app_thread(server, self.dispatcher)
        provider = Provider(name or getattr(server, "name", origin), server, origin, priority)
        self.catalog.add(provider)
        self.catalog_changed()
        return provider

    def remove_server(self, provider: Provider) -> None:
        self.catalog.remove(provider)
        self.catalog_changed()

    def catalog_changed(self) -> None:
        """Tell every connected client the catalog changed (call after adding/removing capabilities).

        Safe to call from any thread.
        """
        for provider in self.catalog.providers:
            bind_to_app_thread(provider.server, self.dispatcher)
        self.catalog.invalidate()
        self._announce()

    def set_list_meta(self, key: str, value: Any) -> None:
        """Put a static `_meta` entry on every `tools/list` result of this host (e.g. the search
        vocabulary a host declares); clients are told to re-list. Safe from any thread."""
        with self._state_lock:
            if self._list_meta.get(key) == value:
                return
            self._list_meta = {**self._list_meta, key: value}
        self._announce()

    @property
    def state(self) -> dict[str, Any]:
        """What this host last said about itself (see `update_state`)."""
        return self._state

    def update_state(self, **fields: Any) -> None:
        """Publish facts about the host that clients should see without asking: `phase`
        (`"loading"` while warm-ups run, then `"ready"`), `documents` (`[{title, path, active,
        modified}]`), `activeDocument`... A field set to None is removed.

        The state rides on `tools/list` results (`_meta["io.cadmcp/hostState"]`) and every
        client is told to re-list when it changes. Safe to call from any thread.
        """
        with self._state_lock:
            state = {**self._state, **fields}
            state = {k: v for k, v in state.items() if v is not None}
            if state == self._state:
                return
            self._state = state
        self._announce()

    def _announce(self) -> None:
        tg, token = self._tg, self._loop_token
        if tg is None or token is None:
            return
        if threading.current_thread() is self._io_thread:
            tg.start_soon(self._notify_changed)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is shutting down
                anyio.from_thread.run_sync(tg.start_soon, self._notify_changed, token=token)

    async def _notify_changed(self) -> None:
        await self._bus.publish(ToolsListChanged())
        await self._bus.publish(ResourcesListChanged())
        for connection in list(self._legacy_connections):
            with contextlib.suppress(Exception):  # a connection that just closed
                await connection.send_tool_list_changed()
                await connection.send_resource_list_changed()

    def before_ready(self, load: Callable[[], Any]) -> None:
        """Run ``load`` on the application thread as soon as the endpoint serves (e.g. open the
        documents asked for at start-up); the phase is ``loading`` until it has run, then ``ready``.

        Register it before :meth:`start`. Calls arriving meanwhile wait for it (they need what it
        loads). A generator's steps run back to back, each its own application-thread job.
        Warm-ups (:meth:`after_ready`) start only once every such job is done.
        """
        with self._warm_up_lock:
            if self._serving:
                raise RuntimeError("before_ready() is for jobs registered before start()")
            self._loads.append(load)

    def after_ready(self, warm_up: Callable[[], Any]) -> None:
        """Run ``warm_up`` on the application thread once the host is ready (e.g. prepare views).

        It never delays readiness: the phase stays ``ready`` (while it runs, the host state says
        ``warmingUp``). If it returns an iterable (a generator), each step runs as its own
        application-thread job in the gaps between requests, so a tool call that arrives
        meanwhile waits for one step only. A failing warm-up is logged; the host serves on.
        """
        with self._warm_up_lock:
            self._warm_ups.append(warm_up)
            serving = self._serving
        tg, token = self._tg, self._loop_token
        if not serving or tg is None or token is None:
            return  # start() runs it once the endpoint serves
        if threading.current_thread() is self._io_thread:
            tg.start_soon(self._warm_up, warm_up)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is shutting down
                anyio.from_thread.run_sync(tg.start_soon, self._warm_up, warm_up, token=token)

    async def _load(self, load: Callable[[], Any]) -> None:
        """Run one loading job (its steps back to back); the phase is ``loading`` until all are done."""
        name = getattr(load, "__qualname__", repr(load))
        started = time.perf_counter()
        try:
            result = await self.dispatcher.call(load)
            if result is not None and hasattr(result, "__iter__"):
                steps = iter(result)
                while not await self.dispatcher.call(_step, steps):
                    pass
        except Exception:
            log.warning("loading %s failed", name, exc_info=True)
        else:
            log.info("loading %s done in %.0f ms", name, (time.perf_counter() - started) * 1000)
        finally:
            with self._state_lock:
                self._loads_pending -= 1
                done = self._loads_pending == 0
            if done:
                if self._loaded is not None:
                    self._loaded.set()
                with self._state_lock:
                    warming = self._warm_ups_pending > 0
                self.update_state(phase="ready", warmingUp=True if warming else None)  # both at once

    async def _warm_up(self, warm_up: Callable[[], Any]) -> None:
        """Run one warm-up once loading is done, its steps in the gaps between requests."""
        with self._state_lock:
            self._warm_ups_pending += 1
        if self._loaded is not None:
            await self._loaded.wait()
        self.update_state(warmingUp=True)
        try:
            await self._warm_up_steps(warm_up)
        finally:
            with self._state_lock:
                self._warm_ups_pending -= 1
                done = self._warm_ups_pending == 0
            if done:
                self.update_state(warmingUp=None)

    async def _warm_up_steps(self, warm_up: Callable[[], Any]) -> None:
        name = getattr(warm_up, "__qualname__", repr(warm_up))
        started = time.perf_counter()
        try:
            await self._until_idle()
            result = await self.dispatcher.call(warm_up)
            if result is not None and hasattr(result, "__iter__"):
                steps = iter(result)
                while True:
                    await self._until_idle()  # clients first: warm up in the gaps between requests
                    if await self.dispatcher.call(_step, steps):
                        break
        except Exception:
            log.warning("warm-up %s failed", name, exc_info=True)
        else:
            log.info("warm-up %s done in %.0f ms", name, (time.perf_counter() - started) * 1000)

    async def _until_idle(self) -> None:
        while True:
            quiet = time.monotonic() - self._last_activity
            if self._in_flight == 0 and quiet >= WARM_UP_IDLE_S:
                return
            await anyio.sleep(max(WARM_UP_IDLE_S - quiet, 0.01))

    async def run_on_app_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Await `fn(*args, **kwargs)` run on the application thread (for async tool code)."""
        return await self.dispatcher.call(fn, *args, **kwargs)

    # -- the MCP server ----------------------------------------------------------------------
    def _build_server(self, instructions: str | None) -> Server[Any]:
        async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
            tools = [_task_support_in_meta(t) for t in (await self.catalog.snapshot(ctx)).tools]
            return types.ListToolsResult(tools=tools, _meta={**self._list_meta, HOST_STATE: self._state})

        async def list_resources(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=(await self.catalog.snapshot(ctx)).resources)

        async def list_templates(
            ctx: ServerRequestContext[Any], params: Any
        ) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(
                resource_templates=(await self.catalog.snapshot(ctx)).templates
            )

        async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
            self._refuse_if_wedged()
            provider = await self.catalog.tool_provider(params.name, ctx)
            entry = provider.lowlevel.get_request_handler("tools/call")
            assert entry is not None
            before = self._state
            try:
                with relaying(ctx.session.report_progress):  # report_progress() reaches this caller
                    result = await entry.handler(ctx, params)
            except SystemExit as exc:  # raised through the I/O loop, it stopped the host serving
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=_exited(f"The tool {params.name!r}", exc))],
                    is_error=True,
                )
            return _with_state(result, self._state) if self._state is not before else result

        async def read_resource(
            ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
        ) -> Any:
            self._refuse_if_wedged()
            provider = await self.catalog.resource_provider(str(params.uri), ctx)
            entry = provider.lowlevel.get_request_handler("resources/read")
            assert entry is not None
            try:
                with relaying(ctx.session.report_progress):
                    return await entry.handler(ctx, params)
            except SystemExit as exc:
                raise MCPError(
                    types.INTERNAL_ERROR, _exited(f"Reading {str(params.uri)[:200]}", exc)
                ) from None

        server: Server[Any] = Server(
            f"cadmcp-host-{self.host_app}",
            version=self.version,
            title=f"{self.host_app} {self.version} (cadmcp host)",
            instructions=instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscriptions_listen=ListenHandler(self._bus),
        )

        async def remember_legacy_connections(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
            # 2025-era clients learn of changes only through notifications on their connection;
            # the SDK keeps no registry of connections, and the session is per request.
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and ctx.session is not None:
                self._legacy_connections.add(ctx.session._connection)
            return await call_next(ctx)

        server.middleware.append(remember_legacy_connections)

        async def track_activity(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
            if "listen" in ctx.method:  # a long-lived notification stream, not work
                return await call_next(ctx)
            self._in_flight += 1
            try:
                return await call_next(ctx)
            finally:
                self._in_flight -= 1
                self._last_activity = time.monotonic()

        server.middleware.append(track_activity)
        server.middleware.append(CallLogger(route="cadmcp.host"))
        server.middleware.append(bound_result_size)
        return server

    def _refuse_if_wedged(self) -> None:
        if (report := self.dispatcher.busy_report()) is not None:
            raise HostBusy(report)

    async def _watch_app_thread(self) -> None:
        """Publish in the host state whether the application thread is wedged (see `HostBusy`).

        Only what stays the same while it is wedged: every state change makes clients re-list."""
        while True:
            await anyio.sleep(1.0)
            report = self.dispatcher.busy_report()
            self.update_state(wedged=report and {"running": report["running"], "since": report["since"]})

    # -- lifecycle ---------------------------------------------------------------------------
    async def serve(self, task_status: anyio.abc.TaskStatus[Path] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen on the endpoint until `stop()`; one MCP session per accepted connection."""
        directory = self._runtime_dir or endpoints.runtime_dir()
        path = endpoints.endpoint_path(directory, self.host_app, self.version, os.getpid())
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        # bound and listening under another name first, then renamed: the endpoint appears only once
        # it accepts connections (a client finding the file between bind and listen was refused)
        binding = directory / f"cadmcp-b{os.getpid()}-{next(_BINDINGS)}.sock"  # runtimes of one process apart
        with contextlib.suppress(FileNotFoundError):
            binding.unlink()
        listener = await anyio.create_unix_listener(str(binding))
        os.chmod(binding, 0o600)
        os.replace(binding, path)
        self.endpoint = path
        self._stop = anyio.Event()
        init_options = self.server.create_initialization_options(
            NotificationOptions(tools_changed=True, resources_changed=True)
        )

        async def handle(stream: anyio.abc.SocketStream) -> None:
            self._last_activity = time.monotonic()  # a client is connecting: let it go first
            try:
                async with message_streams(stream, intercept=self.intercept) as (read, write):
                    await self.server.run(read, write, init_options)
            except Exception:  # one bad connection never stops the host
                log.exception("connection ended with an error")

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, handle)
                tg.start_soon(self._watch_app_thread)
                task_status.started(path)
                await self._stop.wait()
                tg.cancel_scope.cancel()
        finally:
            with contextlib.suppress(Exception):
                await listener.aclose()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            self.endpoint = None
            if self._tg is not None:  # warm-ups waiting for an application thread that has stopped
                self._tg.cancel_scope.cancel()

    def start(
        self,
        timeout: float = 10.0,
        prepare: Callable[[anyio.abc.TaskGroup], Any] | None = None,
    ) -> Path:
        """Start MCP I/O on a background thread; returns the endpoint once it accepts connections.

        ``prepare(task_group)``, when given, is awaited on the I/O loop before the endpoint serves:
        it may start tasks that live as long as the host (a link to an outside server) and may set
        :attr:`version`, which names the endpoint.
        """
        global _current
        _current = self

        def io_main() -> None:
            async def main() -> None:
                self._loop_token = anyio.lowlevel.current_token()
                self._loaded = anyio.Event()
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    if prepare is not None:
                        await prepare(tg)
                    with self._warm_up_lock:
                        loads = list(self._loads)
                    self._loads_pending = len(loads)
                    if loads:  # clients see `loading` from their first list on
                        self.update_state(phase="loading")
                    else:
                        self._loaded.set()
                    await tg.start(self.serve)
                    self._ready.set()
                    with self._warm_up_lock:
                        self._serving = True
                        warm_ups = list(self._warm_ups)
                    for load in loads:
                        tg.start_soon(self._load, load)
                    for warm_up in warm_ups:
                        tg.start_soon(self._warm_up, warm_up)

            try:
                anyio.run(main)
            except BaseException as exc:
                self._startup_error = exc
                log.exception("host I/O loop stopped")
            finally:
                self._loop_token = None
                self._tg = None
                self._ready.set()

        self._io_thread = threading.Thread(target=io_main, name="cadmcp-io", daemon=True)
        self._io_thread.start()
        follow_parent()
        self._ready.wait(timeout)
        if self.endpoint is None:
            raise RuntimeError(f"host runtime failed to start: {self._startup_error!r}")
        return self.endpoint

    def stop(self) -> None:
        """Stop serving and remove the endpoint; safe from any thread."""
        token, stop = self._loop_token, self._stop
        if token is not None and stop is not None:
            with contextlib.suppress(Exception):
                anyio.from_thread.run_sync(stop.set, token=token)
        if isinstance(self.app_thread, QueueAppThread):
            self.app_thread.stop()
        if self._io_thread is not None and self._io_thread is not threading.current_thread():
            self._io_thread.join(timeout=5)

    def run(self, timeout: float = 10.0, prepare: Callable[[anyio.abc.TaskGroup], Any] | None = None) -> None:
        """Serve until SIGINT/SIGTERM with the calling thread as the application thread
        (``timeout`` and ``prepare`` as for :meth:`start`).

        The signal handler only sets flags (no locks), so a second signal while stopping cannot
        deadlock; a third one ends the process at once, endpoint removed. An application thread
        still busy ``STOP_GRACE`` s after the first (a call stuck in a wait) ends it too.
        """
        if not isinstance(self.app_thread, QueueAppThread):
            raise RuntimeError("run() drives a QueueAppThread; with a callback app thread call start()")
        app_thread = self.app_thread
        signals = {"count": 0, "returned": 0, "signum": int(signal.SIGTERM)}

        def end_now(signum: int) -> None:
            if self.endpoint is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.endpoint)
            os._exit(128 + signum)

        def on_signal(signum: int, frame: Any) -> None:
            signals["count"] += 1
            app_thread.stop()
            self.dispatcher.cancel_running()  # a running script stops (and rolls back) first
            signals["signum"] = signum
            if signals["count"] >= 3:
                end_now(signum)

        def stop_or_end() -> None:
            """Started before any signal (a handler must not start threads: that takes locks)."""
            while not signals["count"]:
                time.sleep(0.25)
            time.sleep(STOP_GRACE)
            if signals["returned"]:  # the app thread stopped: the host ends its own way (recovery copies)
                return
            print(
                f"cadmcp host: the application thread did not stop within {STOP_GRACE:g} s of the signal "
                "(a call stuck in a wait); ending without recovery copies of unsaved changes",
                file=sys.stderr,
                flush=True,
            )
            end_now(signals["signum"])

        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError):
                signal.signal(sig, on_signal)
        self.start(timeout, prepare)
        # a call stuck in a C wait (a toolset's sleep) does not see the stop: end after a grace
        threading.Thread(target=stop_or_end, name="cadmcp-stop-grace", daemon=True).start()
        try:
            app_thread.run_forever()
        finally:
            signals["returned"] = 1
            self.stop()
