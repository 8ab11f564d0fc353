"""The IFC host's warm-up: runs on the application thread in small jobs once the endpoint serves,
and calls that arrive meanwhile queue between its steps and still answer correctly."""

from __future__ import annotations

import base64
import json
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from ifc_helpers import text
from mcp import Client, ClientSession

from cadmcp.host import HostRuntime
from cadmcp.host.appthread import CallbackAppThread
from cadmcp.hosts.ifc import create_server
from cadmcp.hosts.ifc.documents import DocumentError
from cadmcp.hosts.ifc.shapes import drawable_elements
from cadmcp.wire.sockets import connect

pytestmark = pytest.mark.anyio


class GatedAppThread:
    """An application thread that starts running its queued jobs only when `open()` is called."""

    def __init__(self, log: list[tuple[str, str, int]]) -> None:
        self.log = log
        self.jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.posted = 0
        self.gate = threading.Event()
        self.thread = threading.Thread(target=self._run, name="test-app-thread", daemon=True)
        self.thread.start()

    def post(self, job: Callable[[], None]) -> None:
        self.posted += 1
        self.jobs.put(job)

    def _run(self) -> None:
        self.gate.wait()
        while (job := self.jobs.get()) is not None:
            self.log.append(("job", "", threading.get_ident()))
            job()

    def stop(self) -> None:
        self.gate.set()
        self.jobs.put(None)
        self.thread.join(timeout=10)


def recorded(steps: Callable[[], Iterator[str]], log: list[tuple[str, str, int]]) -> Callable[[], Any]:
    """Wrap a warm-up so every step notes its name and thread, and the end is an event."""
    done = threading.Event()

    def warm_up() -> Iterator[None]:
        log.append(("warm", "start", threading.get_ident()))
        for name in steps():
            log.append(("warm", name, threading.get_ident()))
            yield
        done.set()

    warm_up.done = done  # type: ignore[attr-defined]
    return warm_up


async def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


def png_bytes(result: Any) -> bytes:
    assert not result.is_error, text(result)
    (image,) = result.content
    return base64.b64decode(image.data)


async def cold_answers(house: Path) -> tuple[bytes, dict[str, Any]]:
    """Screenshot and model context from a host that never warmed up (the reference)."""
    async with Client(create_server([str(house)], exec_timeout=30).server) as client:
        shot = png_bytes(await client.call_tool("view_screenshot", {"width": 320}))
        context = json.loads((await client.read_resource("ifc://model/context")).contents[0].text)
    return shot, context


async def test_calls_during_warm_up_queue_between_its_steps_and_answer_correctly(
    house: Path, tmp_path: Path
) -> None:
    reference_shot, reference_context = await cold_answers(house)

    log: list[tuple[str, str, int]] = []
    app = GatedAppThread(log)
    runtime = HostRuntime("IFC", "warm-up-test", app_thread=CallbackAppThread(app.post), runtime_dir=tmp_path)
    server = create_server([str(house)], exec_timeout=30)
    host = server.adapter
    runtime.add_server(server.server)
    warm_up = recorded(server.warm_up, log)
    runtime.after_ready(warm_up)
    try:
        endpoint = runtime.start()
        await wait_until(lambda: app.posted == 1)  # the warm-up is queued; the app thread is held
        results: dict[str, Any] = {}
        async with connect(endpoint) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} >= {"view_screenshot"}
            assert app.posted == 1  # listing never touches the application thread

            async def screenshot() -> None:
                results["shot"] = await session.call_tool("view_screenshot", {"width": 320})

            async def context() -> None:
                results["context"] = await session.read_resource("ifc://model/context")

            async with anyio.create_task_group() as tg:
                tg.start_soon(screenshot)
                await wait_until(lambda: app.posted == 2)
                tg.start_soon(context)
                await wait_until(lambda: app.posted == 3)
                app.gate.set()  # now the app thread runs: warm-up's first job, then the two calls
            await wait_until(warm_up.done.is_set)
            # a tool call after the warm-up finds every element tessellated already
            doc = host.workspace.active
            cached = dict(host.geometry(doc).meshes)
            after = png_bytes(await session.call_tool("view_screenshot", {"width": 320}))
    finally:
        runtime.stop()
        app.stop()

    assert png_bytes(results["shot"]) == reference_shot
    assert json.loads(results["context"].contents[0].text) == reference_context
    assert after == reference_shot

    # every warm-up step and every call ran on the one application thread
    assert {ident for _, _, ident in log} == {app.thread.ident}
    # the calls did not wait for the whole warm-up (J: an app-thread job starts, W: a warm-up step
    # ran in it): job 1 made the warm-up's generator, jobs 2-3 are the calls (which loaded the model
    # themselves), job 4 ran the first step and each later step is a job of its own
    kinds = "".join("J" if kind == "job" else "W" for kind, _, _ in log)
    assert kinds.startswith("JJJJWWJWJW"), kinds
    assert [name for kind, name, _ in log if kind == "warm"][:3] == ["start", "ifcopenshell", "documents"]
    steps = [name for kind, name, _ in log if kind == "warm"]
    assert steps[-1] == "render" and any(s.startswith("geometry") for s in steps)

    # the warm-up filled the cache the later screenshot used, so that one tessellated nothing
    wanted = {e.id() for e in drawable_elements(doc.file)}
    assert wanted <= cached.keys()
    assert all(host.geometry(doc).meshes[i] is cached[i] for i in wanted)


async def test_warm_up_registered_after_start_runs_too(tmp_path: Path) -> None:
    runtime = HostRuntime("IFC", "late-warm-up", runtime_dir=tmp_path)
    ran: list[int] = []
    finished = threading.Event()

    def warm_up() -> None:
        ran.append(threading.get_ident())
        finished.set()

    app_thread = threading.Thread(target=runtime.app_thread.run_forever, daemon=True)  # type: ignore[attr-defined]
    try:
        runtime.start()
        app_thread.start()
        runtime.after_ready(warm_up)
        await wait_until(finished.is_set)
    finally:
        runtime.stop()
        app_thread.join(timeout=10)
    assert ran == [app_thread.ident]


def test_a_model_that_fails_to_load_during_warm_up_is_reported_by_the_first_call(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ifc"
    broken.write_text(
        "ISO-10303-21;\nHEADER;\nFILE_SCHEMA(('IFC4'));\nENDSEC;\nDATA;\n#1=IFCWALL(,,,;\nnot step at all\n"
    )
    server = create_server([str(broken)])
    steps = list(server.warm_up())
    assert steps == ["ifcopenshell"]  # nothing loaded: nothing further to warm
    with pytest.raises(DocumentError, match=r"could not parse .broken\.ifc"):
        server.adapter.documents()
