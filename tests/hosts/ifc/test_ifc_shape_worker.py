"""Tessellation in a worker process: views drawn from its shapes are the host's own, a view asked
before it finished says what it lacks, edits made meanwhile win over its shapes, and the worker
goes away with the host."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ifc_helpers import run, text
from mcp import Client

from cadmcp.hosts.ifc import create_server
from cadmcp.hosts.ifc.shapes import drawable_elements
from cadmcp.hosts.ifc.tessellator import WORKER_MB_ENV

pytestmark = pytest.mark.anyio

MOVE_WALL = """
wall = model.by_type('IfcWall')[0]
api.geometry.edit_object_placement(model, product=wall, matrix=__import__('numpy').array(
    [[1, 0, 0, 3.0], [0, 1, 0, -4.0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float))
"""


@pytest.fixture
def with_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKER_MB_ENV, "0")  # every model, however small, goes to a worker


async def picture(client: Client, **args: Any) -> tuple[bytes, dict[str, Any]]:
    result = await client.call_tool("view_screenshot", {"width": 320, **args})
    assert not result.is_error, text(result)
    image = next(c for c in result.content if c.type == "image")
    return image.data, result.structured_content or {}


async def reference(house: Path, monkeypatch: pytest.MonkeyPatch, code: str | None = None) -> bytes:
    """The picture the host draws by itself (no worker), after ``code`` if given."""
    with monkeypatch.context() as m:
        m.setenv(WORKER_MB_ENV, "off")
        server = create_server([str(house)], exec_timeout=30)
        server.adapter.prepare_shapes(server.adapter.active())
        assert not server.adapter.shape_workers()
        async with Client(server.server) as client:
            if code is not None:
                assert not (await run(client, code, "move")).is_error
            data, _ = await picture(client, complete=True)
    return data


def the_worker(server: Any) -> Any:
    """Start the worker as the warm-up does once the host is ready, and return it."""
    assert not server.adapter.shape_workers()
    server.adapter.prepare_shapes(server.adapter.active())
    (worker,) = server.adapter.shape_workers()
    return worker


@pytest.fixture
def stopped() -> Iterator[list[int]]:
    """Pids this test stopped (SIGSTOP); they are let go again at the end."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


async def test_views_drawn_from_the_workers_shapes_equal_the_hosts_own(
    house: Path, monkeypatch: pytest.MonkeyPatch, with_worker: None
) -> None:
    expected = await reference(house, monkeypatch)
    server = create_server([str(house)], exec_timeout=30)
    worker = the_worker(server)
    async with Client(server.server) as client:
        data, view = await picture(client, complete=True)
        assert view["complete"] and not view["notes"]
    assert data == expected
    doc = server.adapter.active()
    assert worker.process.wait(timeout=30) == 0  # it ends by itself once done
    worker._reader.join(timeout=10)
    assert worker.delivered == len(worker.ids) >= len(drawable_elements(doc.file))


async def test_a_view_before_the_worker_sent_anything_names_every_element_it_lacks(
    house: Path, monkeypatch: pytest.MonkeyPatch, with_worker: None, stopped: list[int]
) -> None:
    monkeypatch.setenv("CADMCP_SCREENSHOT_BUDGET", "0")  # nothing built in the host either
    expected = await reference(house, monkeypatch)
    server = create_server([str(house)], exec_timeout=30)
    worker = the_worker(server)
    os.kill(worker.pid, signal.SIGSTOP)  # it sends nothing until let go
    stopped.append(worker.pid)
    async with Client(server.server) as client:
        result = await client.call_tool("view_screenshot", {"width": 320})
        view = result.structured_content
        said = text(result)
        total = len(drawable_elements(server.adapter.active().file))
        assert view["complete"] is False and view["notPreparedYet"] == total
        assert view["elements"]["drawn"] == 0
        assert "[INCOMPLETE VIEW]" in said and f"{total} elements are not in this image yet" in said
        assert "IfcWall" in said and "a separate process tessellates them" in said
        assert "complete=true" in said
        os.kill(worker.pid, signal.SIGCONT)
        data, view = await picture(client, complete=True)
    assert view["complete"] and data == expected


async def test_an_edit_made_while_the_worker_runs_wins_over_its_shapes(
    house: Path, monkeypatch: pytest.MonkeyPatch, with_worker: None, stopped: list[int]
) -> None:
    expected = await reference(house, monkeypatch, MOVE_WALL)
    assert expected != await reference(house, monkeypatch)  # the edit shows
    server = create_server([str(house)], exec_timeout=30)
    worker = the_worker(server)
    os.kill(worker.pid, signal.SIGSTOP)  # its shapes are of the file as it was opened
    stopped.append(worker.pid)
    async with Client(server.server) as client:
        assert not (await run(client, MOVE_WALL, "move")).is_error
        os.kill(worker.pid, signal.SIGCONT)
        data, view = await picture(client, complete=True)
    assert view["complete"] and data == expected


async def test_a_worker_that_dies_leaves_the_host_to_draw_everything_itself(
    house: Path, monkeypatch: pytest.MonkeyPatch, with_worker: None
) -> None:
    expected = await reference(house, monkeypatch)
    server = create_server([str(house)], exec_timeout=30)
    worker = the_worker(server)
    os.kill(worker.pid, signal.SIGKILL)
    async with Client(server.server) as client:
        data, view = await picture(client, complete=True)
    assert view["complete"] and data == expected
    assert worker.error is not None and "stopped early" in worker.error


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        raw = (task / "children").read_text().split()
        found.update(int(p) for p in raw)
    return found


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return status.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie no one reaped: it ended


def _wait(predicate: Any, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_the_worker_ends_with_its_host(house: Path, runtime_dir: Path, how: signal.Signals) -> None:
    env = {**os.environ, WORKER_MB_ENV: "0"}
    host = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", "ifc", str(house)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = 0
    try:
        assert _wait(lambda: bool(_children(host.pid))), "the host started no worker"
        (worker,) = _children(host.pid)
        # it follows its parent before it imports IfcOpenShell; the host handles signals once it serves
        assert _wait(lambda: "ifcopenshell_wrapper" in Path(f"/proc/{worker}/maps").read_text())
        assert _wait(lambda: any(runtime_dir.glob("*.sock")))
        os.kill(worker, signal.SIGSTOP)  # held alive: it cannot finish and leave by itself
        assert not _gone(worker)
        host.send_signal(how)
        host.wait(timeout=60)
        assert _wait(lambda: _gone(worker)), f"the worker {worker} outlived its host ({how.name})"
    finally:
        if host.poll() is None:
            host.kill()
        if worker and not _gone(worker):
            os.kill(worker, signal.SIGKILL)


def test_once_the_worker_sends_a_view_waits_for_its_shapes_instead_of_building_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_worker: None, stopped: list[int]
) -> None:
    from cadmcp.hosts.ifc import geometry
    from cadmcp.hosts.ifc.modelgen import build_wall_grid

    path = tmp_path / "grid.ifc"
    build_wall_grid(600).write(str(path))
    server = create_server([str(path)], exec_timeout=30)
    adapter = server.adapter
    worker = the_worker(server)
    until = time.monotonic() + 60
    while worker.reading and time.monotonic() < until:
        time.sleep(0.005)
    os.kill(worker.pid, signal.SIGSTOP)  # it has read the file and said what it sends; no more now
    stopped.append(worker.pid)
    pending = {i for i in worker.ids if worker.will_send(i)}
    assert len(pending) > 100, "the worker sent nearly everything before it was stopped"
    built: list[int] = []
    iterate = geometry.iterate_shapes

    def counted(f: Any, elements: list[Any], threads: int = 1) -> Any:
        built.extend(e.id() for e in elements)
        return iterate(f, elements, threads)

    monkeypatch.setattr(geometry, "iterate_shapes", counted)
    monkeypatch.setenv("CADMCP_SCREENSHOT_BUDGET", "1")
    shot = adapter.screenshot(320, None, {})
    assert shot.coverage is not None and shot.coverage["notPreparedYet"] >= len(pending) - 1
    assert not pending & set(built)  # nothing the worker is still to send was built here
    edited = next(iter(pending))
    worker.ignore([edited])  # as an edit does: the worker's shape of it would be stale
    adapter.screenshot(320, None, {})
    assert edited in built  # built here, beside the wait for the rest
    os.kill(worker.pid, signal.SIGCONT)


def test_the_rate_a_view_estimates_from_leaves_out_the_workers_reading_of_the_file() -> None:
    """A 17.7 MB model: the first view said "about 7318 s more", the next "about 89 s", and the
    whole model was ready 17.7 s later: the rate counted the worker's reading of the file."""
    from cadmcp.hosts.ifc.tessellator import RATE_AFTER_S, ShapeWorker

    worker = ShapeWorker.__new__(ShapeWorker)  # its counters only: no process
    worker.started, worker.delivered, worker.listed_at = time.monotonic() - 12.0, 0, None
    assert worker.rate == 0.0  # still reading: no estimate
    worker.listed_at, worker.delivered = time.monotonic() - 2.0, 600
    assert 250 < worker.rate <= 300  # 600 in the 2 s since it listed them, not in 14 s
    worker.listed_at = time.monotonic() - RATE_AFTER_S / 4
    assert worker.rate == 0.0  # too short a span to tell
