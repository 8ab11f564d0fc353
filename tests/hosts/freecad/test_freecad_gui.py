"""FreeCAD's window as a host (Xvfb): every call runs on the Qt GUI thread, the window keeps
processing events while a runaway script is stopped, and the macro serves a session that was
already running."""

from __future__ import annotations

import ast
import base64
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import FreeCAD, padded_sketch, text_of, wait_for_freecad
from PIL import Image, ImageChops

from cadmcp.wire.endpoints import list_endpoints

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
GUI_START_S = 120.0


async def test_calls_run_on_the_gui_thread_and_the_screenshot_shows_the_new_part(
    gui_env: dict[str, str], hosts: Any, daemon: Any, sample: Path
) -> None:
    host = hosts.start("freecad", "--gui", str(sample), timeout=GUI_START_S)
    async with daemon(**gui_env) as session:
        (entry,) = await wait_for_freecad(session)
        assert entry["pid"] == host.pid
        fc = FreeCAD(session)
        where = ast.literal_eval(
            await fc.value(
                "import threading\nfrom PySide2 import QtCore, QtWidgets\n"
                "(QtCore.QThread.currentThread() == QtWidgets.QApplication.instance().thread(), "
                "threading.current_thread() is threading.main_thread(), App.GuiUp)"
            )
        )
        assert where == (True, True, 1)
        version = await fc.read("freecad://version")
        assert version["gui"] is True

        assert (await fc.run("App.newDocument('Blank')")).is_error is False
        empty = await fc.screenshot(width=400, height=300, view="front")
        padded = await fc.run(padded_sketch(), "Add a padded sketch")
        assert not padded.is_error, text_of(padded)
        part = await fc.screenshot(width=400, height=300, view="front")
        left, top, right, bottom = ImageChops.difference(empty, part).getbbox()
        assert left > 5 and top > 5 and right < 395 and bottom < 295  # the part, fitted, inside the margins
        assert part.getpixel((200, 150)) != empty.getpixel((200, 150))

        # FreeCAD's own undo stack (Edit > Undo) holds the step; undoing it empties the picture again
        names = ast.literal_eval(await fc.value("Gui.ActiveDocument.Document.UndoNames"))
        assert names == ["Add a padded sketch"]
        await fc.invoke("navigate_history", {"direction": "back"})
        assert (
            ImageChops.difference(empty, await fc.screenshot(width=400, height=300, view="front")).getbbox()
            is None
        )
        listed = (await fc.invoke("list_documents", {})).structured_content
        titles = [d["title"] for d in listed["documents"]]
        assert titles[0] == "bracket.FCStd" and titles[1].startswith("Blank")
        assert listed["active"] == titles[1]


ROW_FAR_AND_EMPTY = """
doc = App.newDocument("Row")
for i in range(12):
    box = doc.addObject("Part::Box", f"Box{i}")
    box.Placement.Base = Vector(i * 20, 0, 0)
doc.addObject("Part::Box", "Far").Placement.Base = Vector(1e6, 0, 0)
doc.addObject("Part::Feature", "Empty")
doc.recompute()
doc.getObject("Box0").Length = 0  # its recompute fails: the window keeps drawing the last box
"""


async def test_a_window_picture_frames_the_model_and_names_what_it_leaves_out(
    gui_env: dict[str, str], hosts: Any, daemon: Any
) -> None:
    hosts.start("freecad", "--gui", timeout=GUI_START_S)
    async with daemon(**gui_env) as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        assert not (await fc.run(ROW_FAR_AND_EMPTY)).is_error
        result = await fc.invoke("view_screenshot", {"width": 400, "height": 300, "view": "isometric"})
        assert not result.is_error, text_of(result)
        seen = result.structured_content
        reasons = {o["object"]: o["reason"] for o in seen["omitted"]}
        assert reasons.keys() == {"Far", "Empty"} and "far from the rest" in reasons["Far"], reasons
        assert "empty shape" in reasons["Empty"]
        assert seen["drawnCount"] == 12 and [o["object"] for o in seen["outdated"]] == ["Box0"]
        notes = text_of(result)
        assert "[INCOMPLETE VIEW]" in notes and "Far" in notes and "[OUTDATED VIEW]" in notes
        image = next(c for c in result.content if c.type == "image")
        picture = Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")
        left, _, right, _ = ImageChops.difference(picture, Image.new("RGB", picture.size, "white")).getbbox()
        assert right - left > 200, "the row of boxes fills the frame instead of shrinking to a dot"
        current = (await fc.invoke("view_screenshot", {"width": 400, "view": "current"})).structured_content
        assert current["view"] == "current"  # the user's camera: nothing is framed out, only outside it
        assert not [o for o in current["omitted"] if "far from the rest" in o["reason"]]


TICKER = """
import time
from PySide2 import QtCore
App._ticks = []
App._ticker = QtCore.QTimer()
App._ticker.timeout.connect(lambda: App._ticks.append(time.monotonic()))
App._ticker.start(100)
"""


async def test_a_runaway_script_is_stopped_while_the_window_keeps_processing_events(
    gui_env: dict[str, str], hosts: Any, daemon: Any, sample: Path
) -> None:
    hosts.start("freecad", "--gui", "--exec-timeout", "2", str(sample), timeout=GUI_START_S)
    async with daemon(**gui_env) as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        before = await fc.fingerprint()
        assert not (await fc.run(TICKER)).is_error  # a Qt timer on the GUI thread, 10 ticks a second

        for runaway in ("while True:\n    pass", "time.sleep(1000)"):
            started = time.monotonic()
            result = await fc.run(
                "import time\nApp._started = time.monotonic()\n"
                f"doc.addObject('Part::Box', 'Runaway')\n{runaway}"
            )
            elapsed = time.monotonic() - started
            assert result.is_error and "[TIMEOUT]" in text_of(result) and "[ROLLBACK]" in text_of(result)
            assert elapsed < 15
            ticks = ast.literal_eval(
                await fc.value("len([t for t in App._ticks if App._started < t < App._started + 1.9])")
            )
            assert ticks >= 5, f"the GUI processed {ticks} timer events during {runaway!r}"
            assert await fc.fingerprint() == before
        assert not (await fc.run("App._ticker.stop()")).is_error


async def test_the_installed_macro_serves_a_running_freecad_and_stops_and_restarts(
    gui_env: dict[str, str], daemon: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    macros = tmp_path / "macros"
    installed = subprocess.run(
        [sys.executable, "-m", "cadmcp", "freecad", "install", "--macro-dir", str(macros)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    assert "Installed cadmcp_start.FCMacro and cadmcp_stop.FCMacro" in installed.stdout
    start, stop = macros / "cadmcp_start.FCMacro", macros / "cadmcp_stop.FCMacro"
    # a user's FreeCAD, started without cadmcp; it runs the macro once its window is up
    freecad = subprocess.Popen(
        ["freecad", str(start)],
        env={**os.environ, **gui_env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with daemon(**gui_env) as session:
            (entry,) = await wait_for_freecad(session, timeout=GUI_START_S)
            assert entry["pid"] == freecad.pid
            fc = FreeCAD(session)
            status = ast.literal_eval(
                await fc.value("from cadmcp.hosts.freecad import session\nsession.status()")
            )
            assert status.startswith("cadmcp: serving FreeCAD") and f"pid {freecad.pid}" in status
            (endpoint,) = [e for e in list_endpoints(runtime_dir) if e.pid == freecad.pid]
            assert str(endpoint.path) in status
            on_gui = await fc.value(
                "from PySide2 import QtCore, QtWidgets\n"
                "QtCore.QThread.currentThread() == QtWidgets.QApplication.instance().thread()"
            )
            assert on_gui == "True"

            # the user stops it from the Macro menu, and starts it again a little later
            schedule = (
                "from PySide2 import QtCore\n"
                "def run_macro(path):\n"
                "    exec(open(path).read(), {'__name__': '__main__'})\n"
                f"QtCore.QTimer.singleShot(200, lambda: run_macro({str(stop)!r}))\n"
                f"QtCore.QTimer.singleShot(3000, lambda: run_macro({str(start)!r}))"
            )
            assert not (await fc.run(schedule)).is_error
            gone = await wait_until(
                lambda: not [e for e in list_endpoints(runtime_dir) if e.pid == freecad.pid]
            )
            assert gone, "the stop macro did not stop serving"
            back = await wait_until(
                lambda: [e for e in list_endpoints(runtime_dir) if e.pid == freecad.pid], 30
            )
            assert back, "the start macro did not serve again"
            await wait_for_freecad(session)
            restarted = FreeCAD(session)
            assert await restarted.value("import os\nos.getpid()") == str(freecad.pid)
            assert freecad.poll() is None  # FreeCAD itself kept running throughout
    finally:
        freecad.send_signal(signal.SIGTERM)
        try:
            freecad.wait(timeout=15)
        except subprocess.TimeoutExpired:
            freecad.kill()
            freecad.wait()


async def wait_until(predicate: Any, timeout: float = 15.0) -> Any:
    import anyio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await anyio.sleep(0.1)
    return predicate()


async def test_closing_a_changed_document_in_the_window_asks_no_question_and_drops_it(
    gui_env: dict[str, str], hosts: Any, daemon: Any, sample: Path, tmp_path: Path
) -> None:
    """close_document with discard=true in FreeCAD's window: no save dialog holds the GUI thread."""
    copy = tmp_path / "copy.FCStd"
    copy.write_bytes(sample.read_bytes())
    hosts.start("freecad", "--gui", str(sample), timeout=GUI_START_S)
    async with daemon(**gui_env) as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        assert not (await fc.invoke("open_document", {"filePath": str(copy)})).is_error
        assert not (await fc.run("App.ActiveDocument.addObject('Part::Box', 'Extra')", "Add a box")).is_error
        closed = await fc.invoke("close_document", {"discard": True})
        assert not closed.is_error, text_of(closed)
        assert [d["title"] for d in closed.structured_content["documents"]] == ["bracket.FCStd"]
        assert await fc.value("sorted(App.listDocuments())") == "['bracket']"
