"""The host runtime: endpoint, application thread, catalog changes, many clients."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.subscriptions import listen
from mcp.server.mcpserver import MCPServer

from cadmcp.host import HostRuntime
from cadmcp.wire import endpoints
from cadmcp.wire.sockets import connect

pytestmark = pytest.mark.anyio


@pytest.fixture
def running(runtime_dir: Path) -> Iterator[tuple[HostRuntime, MCPServer[Any], dict[str, Any]]]:
    """A runtime whose application thread is a dedicated thread draining its queue."""
    runtime = HostRuntime("Probe", "3.1")
    server: MCPServer[Any] = MCPServer("probe")
    seen: dict[str, Any] = {"threads": set(), "ran": []}
    release = threading.Event()

    @server.tool()
    def block(label: str) -> str:
        """Hold the application thread until released."""
        seen["threads"].add(threading.get_ident())
        seen["ran"].append(label)
        release.wait(20)
        return label

    @server.tool()
    def whoami() -> int:
        """The id of the thread the tool ran on."""
        seen["threads"].add(threading.get_ident())
        return threading.get_ident()

    seen["release"] = release
    runtime.add_server(server)
    app = threading.Thread(target=runtime.app_thread.run_forever, name="app", daemon=True)  # type: ignore[attr-defined]
    app.start()
    seen["app_ident"] = app.ident
    runtime.start()
    yield runtime, server, seen
    release.set()
    runtime.stop()
    app.join(5)


def test_endpoint_is_named_and_private(runtime_dir: Path, running: Any) -> None:
    runtime, _, _ = running
    assert runtime.endpoint is not None
    assert runtime.endpoint.name == f"cadmcp_Probe_3.1_{os.getpid()}.sock"
    assert stat.S_IMODE(runtime_dir.stat().st_mode) == 0o700
    assert endpoints.list_endpoints(runtime_dir)[0].pid == os.getpid()


def test_runtime_dir_is_created_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "fresh"
    monkeypatch.setenv(endpoints.RUNTIME_DIR_ENV, str(target))
    assert endpoints.runtime_dir() == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    os.chmod(target, 0o755)
    endpoints.runtime_dir()
    assert stat.S_IMODE(target.stat().st_mode) == 0o700


def test_endpoint_names_round_trip_and_reject_strangers(tmp_path: Path) -> None:
    for host_app, version in (("Auto CAD_x", "2026_1"), ("Raw_cursorloop", "1.0"), ("Café", "v2+b")):
        name = endpoints.endpoint_name(host_app, version, 42)
        assert name.count("_") == 3  # `_` only between the parts
        parsed = endpoints.parse_endpoint(tmp_path / name)
        assert parsed is not None and (parsed.host_app, parsed.version, parsed.pid) == (host_app, version, 42)
    assert endpoints.endpoint_name("Raw_cursorloop", "1.0", 7) == "cadmcp_Raw%5Fcursorloop_1.0_7.sock"
    old = endpoints.parse_endpoint(tmp_path / "cadmcp_Auto-CAD_2026_42.sock")  # written before escapes
    assert old is not None and old.host_app == "Auto-CAD"
    assert endpoints.parse_endpoint(tmp_path / "other.sock") is None
    assert not endpoints.round_trips("_" * 40) and len(endpoints.endpoint_name("_" * 40, "1", 1)) < 90


def test_a_long_name_listens_with_its_version_cut_short(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A socket path is at most about 104 bytes: where name, version and runtime folder are longer,
    the version is cut (the name must read back whole), and a folder too long for the name at all
    is refused with what to shorten."""
    import tempfile

    name, version = "ProjectManagementIntegrationServer-mcp12", "2026.10.19-rc.1+linux.x86_64"
    base = Path(tempfile.mkdtemp(prefix="c", dir="/tmp"))  # pytest's own folder is too long already
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    length = endpoints.SOCKET_PATH_BYTES - len(f"/cadmcp_{name}__{os.getpid()}.sock") - 5  # 5 for the version
    folder = base / ("d" * (length - len(str(base)) - 1))
    folder.mkdir(mode=0o700)
    monkeypatch.setenv(endpoints.RUNTIME_DIR_ENV, str(folder))
    runtime = HostRuntime(name, version)
    runtime.add_server(MCPServer("long"))
    runtime.start()
    try:
        assert runtime.endpoint is not None
        assert len(os.fsencode(str(runtime.endpoint))) <= endpoints.SOCKET_PATH_BYTES
        found = endpoints.list_endpoints(folder)
        assert [(ep.host_app, ep.version) for ep in found] == [(name, version[:5])]
    finally:
        runtime.stop()
    deeper = folder / ("e" * 20)
    deeper.mkdir(mode=0o700)
    with pytest.raises(endpoints.EndpointTooLong, match=f"shorter name, or set {endpoints.RUNTIME_DIR_ENV}"):
        endpoints.endpoint_path(deeper, name, version, 1)
    assert endpoints.endpoint_problem(deeper, "Short") is None


async def _session(runtime: HostRuntime) -> Any:
    assert runtime.endpoint is not None
    return connect(runtime.endpoint)


async def test_tools_run_on_the_app_thread_and_a_slow_tool_never_blocks_ping_or_lists(running: Any) -> None:
    runtime, _, seen = running
    async with connect(runtime.endpoint) as (r1, w1), ClientSession(r1, w1) as busy:
        await busy.discover()
        async with connect(runtime.endpoint) as (r2, w2), ClientSession(r2, w2) as other:
            await other.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(busy.call_tool, "block", {"label": "long"})
                with anyio.fail_after(5):
                    while "long" not in seen["ran"]:
                        await anyio.sleep(0.01)
                # The tool holds the app thread until released below: if ping or list waited for
                # the app thread, this would deadlock and fail_after would fire.
                with anyio.fail_after(10):
                    await other.send_ping()  # ping exists up to 2025-11-25; 2026-07-28 clients list instead
                    await busy.list_resources()
                    names = [t.name for t in (await other.list_tools()).tools]
                assert names == ["block", "whoami"]
                assert seen["ran"] == ["long"]
                seen["release"].set()
            result = await other.call_tool("whoami", {})
            assert result.structured_content == {"result": seen["app_ident"]}
            assert seen["threads"] == {seen["app_ident"]}


async def test_cancellation_reaches_a_call_waiting_for_the_app_thread(running: Any) -> None:
    runtime, _, seen = running
    withdrawn = threading.Event()

    async def watch_cancellations(ctx: Any, call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except anyio.get_cancelled_exc_class():
            if ctx.method == "tools/call":
                withdrawn.set()  # the waiting call has unwound through the runtime
            raise

    runtime.server.middleware.insert(0, watch_cancellations)
    async with connect(runtime.endpoint) as (r, w), ClientSession(r, w) as session:
        await session.discover()
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "block", {"label": "first"})
            with anyio.fail_after(5):
                while "first" not in seen["ran"]:
                    await anyio.sleep(0.01)
            with anyio.move_on_after(0.3):  # abandon: the SDK sends notifications/cancelled
                await session.call_tool("block", {"label": "queued"})
            with anyio.fail_after(10):
                while not withdrawn.is_set():
                    await anyio.sleep(0.01)
            seen["release"].set()
        await session.call_tool("whoami", {})
        assert seen["ran"] == ["first"]  # the cancelled call never ran


async def test_catalog_changes_reach_modern_and_legacy_clients(running: Any) -> None:
    runtime, server, _ = running
    legacy_events: list[str] = []

    async def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", "")
        legacy_events.append(method)

    async with (
        connect(runtime.endpoint) as (r1, w1),
        ClientSession(r1, w1) as modern,
        connect(runtime.endpoint) as (r2, w2),
        ClientSession(r2, w2, message_handler=on_message) as legacy,
    ):
        await modern.discover()
        await legacy.initialize()
        await legacy.list_tools()  # the runtime learns of legacy sessions from their requests
        async with listen(modern, tools_list_changed=True) as events:

            def added() -> str:
                return "added"

            server.add_tool(added, name="added", description="Added later.")
            runtime.catalog_changed()
            with anyio.fail_after(5):
                event = await events.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
        with anyio.fail_after(5):
            while "notifications/tools/list_changed" not in legacy_events:
                await anyio.sleep(0.02)
        assert "added" in [t.name for t in (await modern.list_tools()).tools]


async def test_many_connections_at_once(running: Any) -> None:
    runtime, _, _ = running

    async def one(n: int) -> None:
        async with connect(runtime.endpoint) as (r, w), ClientSession(r, w) as s:
            await s.discover()
            assert len((await s.list_tools()).tools) == 2

    async with anyio.create_task_group() as tg:
        for n in range(12):
            tg.start_soon(one, n)


async def test_garbage_on_the_socket_does_not_hurt_the_host(running: Any) -> None:
    runtime, _, _ = running
    stream = await anyio.connect_unix(str(runtime.endpoint))
    await stream.send(b'this is not json\n{"jsonrpc": "2.0", "id": 1}\n\xff\xfe\n')
    await stream.aclose()
    async with connect(runtime.endpoint) as (r, w), ClientSession(r, w) as s:
        await s.discover()
        assert [t.name for t in (await s.list_tools()).tools] == ["block", "whoami"]


def test_stop_removes_the_endpoint(runtime_dir: Path) -> None:
    runtime = HostRuntime("Gone", "1")
    path = runtime.start()
    assert path.exists()
    runtime.stop()
    assert not path.exists()


def test_a_ui_loop_supplies_its_own_post_hook(runtime_dir: Path) -> None:
    """An application with its own UI loop hands calls to it through `CallbackAppThread`."""
    import queue

    from cadmcp.host import CallbackAppThread

    ui_queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
    ui_threads: set[int] = set()

    def ui_loop() -> None:
        while (job := ui_queue.get()) is not None:
            ui_threads.add(threading.get_ident())
            job()

    ui = threading.Thread(target=ui_loop, daemon=True)
    ui.start()
    runtime = HostRuntime("UiApp", "1", app_thread=CallbackAppThread(ui_queue.put))
    server: MCPServer[Any] = MCPServer("ui")

    @server.tool()
    def where() -> int:
        """The thread id this ran on."""
        return threading.get_ident()

    runtime.add_server(server)
    runtime.start()
    try:

        async def call() -> Any:
            async with connect(runtime.endpoint) as (r, w), ClientSession(r, w) as s:
                await s.discover()
                return await s.call_tool("where", {})

        result = anyio.run(call)
        assert result.structured_content == {"result": ui.ident}
        assert ui_threads == {ui.ident}
    finally:
        runtime.stop()
        ui_queue.put(None)


async def test_host_state_rides_on_tools_list_and_changes_are_announced(running: Any) -> None:
    runtime, _, _ = running
    async with connect(runtime.endpoint) as (r, w), ClientSession(r, w) as session:
        await session.discover()
        first = await session.list_tools()
        assert first.meta["io.cadmcp/hostState"] == {"phase": "ready"}
        async with listen(session, tools_list_changed=True) as events:
            runtime.update_state(activeDocument="plan.dxf", documents=[{"title": "plan.dxf"}])
            with anyio.fail_after(5):
                await events.__anext__()
            runtime.update_state(activeDocument="plan.dxf")  # unchanged: no announcement
        state = (await session.list_tools()).meta["io.cadmcp/hostState"]
        assert state == {"phase": "ready", "activeDocument": "plan.dxf", "documents": [{"title": "plan.dxf"}]}
        runtime.update_state(documents=None)
        assert "documents" not in runtime.state


def test_loading_until_the_documents_opened_and_warm_ups_never_delay_ready(runtime_dir: Path) -> None:
    runtime = HostRuntime("Warm", "1")
    opening, warming = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def open_documents() -> Iterator[str]:
        seen["while opening"] = dict(runtime.state)
        yield "first document"
        opening.wait(10)

    def warm_up() -> Iterator[str]:
        seen["while warming"] = dict(runtime.state)
        yield "first step"
        warming.wait(10)

    runtime.before_ready(open_documents)
    runtime.after_ready(warm_up)
    app = threading.Thread(target=runtime.app_thread.run_forever, daemon=True)  # type: ignore[attr-defined]
    app.start()
    runtime.start()

    def wait_for(check: Callable[[], bool]) -> None:
        for _ in range(200):
            if check():
                return
            time.sleep(0.05)
        raise AssertionError(runtime.state)

    try:
        assert runtime.state["phase"] == "loading"
        time.sleep(0.3)
        assert "while warming" not in seen  # no warm-up competes with opening the documents
        opening.set()
        wait_for(lambda: "while warming" in seen)
        assert seen["while opening"]["phase"] == "loading"
        assert seen["while warming"]["phase"] == "ready"  # the warm-up runs after ready
        assert runtime.state["phase"] == "ready" and runtime.state["warmingUp"] is True
        warming.set()
        wait_for(lambda: "warmingUp" not in runtime.state)
        assert runtime.state["phase"] == "ready"
    finally:
        opening.set()
        warming.set()
        runtime.stop()
        app.join(5)


async def test_a_wedged_app_thread_is_announced_once_not_every_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every host-state change makes every client re-list: the state must not tick with the clock."""
    runtime = HostRuntime("Wedge", "1")
    started = time.monotonic()

    def wedged() -> dict[str, Any]:
        now = time.monotonic()
        return {
            "running": "execute_python_code",
            "since": "2026-01-01T00:00:00Z",
            "runningSeconds": round(now - started) + 20,
            "stopRequestedSeconds": round(now - started) + 10,
        }

    announced: list[dict[str, Any]] = []
    monkeypatch.setattr(runtime.dispatcher, "busy_report", wedged)
    monkeypatch.setattr(runtime, "_announce", lambda: announced.append(dict(runtime._state)))
    with anyio.move_on_after(3.5):
        await runtime._watch_app_thread()
    assert len(announced) == 1, announced
    assert announced[0]["wedged"]["running"] == "execute_python_code"


def test_code_that_reports_progress_stops_once_its_call_is_cancelled() -> None:
    """Every adapter loop that reports progress (DXF drawing, IFC tessellation) is cancellable."""
    from cadmcp.host import appthread
    from cadmcp.host.progress import report_progress

    call = appthread.AppCall("view_screenshot")
    appthread._local.call = call
    try:
        report_progress(0.25, "drawing")  # running normally: nothing to send, nothing raised
        call.request_stop()
        with pytest.raises(appthread.AppCallCancelled, match="stopped while it ran"):
            report_progress(0.5, "drawing")
    finally:
        del appthread._local.call
