"""How many undo steps FreeCAD keeps, said where an agent looks: each recorded step's note and
navigate_history say how many remain and when the oldest one fell off. Headless FreeCAD keeps
its fixed 20; with the window, CADMCP_UNDO_DEPTH sets FreeCAD's own preference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import FreeCAD, text_of, wait_for_freecad
from tests.core.helpers import structured

from cadmcp.host.history import UNDO_DEPTH_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def add_box(i: int) -> str:
    return f"# Box {i}\nb = doc.addObject('Part::Box', 'Box')\nb.Length = {i}"


async def fill(fc: FreeCAD, count: int) -> list[str]:
    notes = []
    for i in range(1, count + 1):
        result = await fc.run(add_box(i))
        assert not result.is_error, text_of(result)
        notes.append(text_of(result))
    return notes


async def test_headless_freecad_says_when_the_oldest_of_its_20_steps_falls_off(daemon: Any) -> None:
    async with daemon(**{UNDO_DEPTH_ENV: "50"}) as session:  # FreeCAD without a window cannot keep more
        launched = await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session, launched["hostInstanceId"])
        assert (await fc.read("freecad://version"))["undo_depth"] == 20
        notes = await fill(fc, 21)
        assert "20 steps can be undone now (the history keeps 20)." in notes[19]
        assert "fell off" not in notes[19]
        assert "The oldest step, 'Box 1', fell off the history to make room" in notes[20]

        back = (await fc.invoke("navigate_history", {"direction": "back", "steps": 30})).structured_content
        assert back["navigated"] == 20 and back["operations"][-1] == "Box 2"
        assert back["depth"] == 20 and back["dropped"] == 1
        assert "1 step older than these fell off the history (it keeps 20)" in back["message"]
        assert (await fc.value("len([o for o in doc.Objects if o.TypeId == 'Part::Box'])")) == "1"


async def test_with_the_window_the_depth_is_the_one_asked_for(
    display: str, freecad_env: dict[str, str], hosts: Any, daemon: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPLAY", display)
    monkeypatch.setenv(UNDO_DEPTH_ENV, "3")
    hosts.start("freecad", "--gui", timeout=120.0)
    async with daemon(DISPLAY=display) as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        assert (await fc.read("freecad://version"))["undo_depth"] == 3
        assert not (await fc.run("App.newDocument('Kept')")).is_error
        notes = await fill(fc, 4)
        assert "3 steps can be undone now (the history keeps 3)." in notes[2]
        assert "The oldest step, 'Box 1', fell off" in notes[3]
        back = (await fc.invoke("navigate_history", {"direction": "back", "steps": 9})).structured_content
        assert back["navigated"] == 3 and back["dropped"] == 1


def test_the_variable_is_documented() -> None:
    docs = Path(__file__).resolve().parents[3] / "docs"
    assert any(UNDO_DEPTH_ENV in p.read_text(encoding="utf-8") for p in docs.rglob("*.md"))
