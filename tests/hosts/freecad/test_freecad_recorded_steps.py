"""FreeCAD's history numbers the steps of a document (`undoIds` in its history and each checkpoint):
undoing a step and making another of the same name leaves the undo names as they were, and only the
numbers tell the stacks apart (an agent's revert would otherwise undo the new step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import FreeCAD, text_of
from tests.core.helpers import structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_step_undone_and_made_again_under_its_name_gets_another_number(
    daemon: Any, sample: Path
) -> None:
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        made = await fc.run("doc.addObject('Part::Box', 'Mine')\ndoc.recompute()", "Add a box")
        assert not made.is_error, text_of(made)
        after = await fc.read("freecad://model/history")
        assert after["undo"] == ["Add a box"] and after["undoIds"][0] is not None
        assert not (await fc.run("len(doc.Objects)")).is_error  # a read is no step
        assert not (await fc.invoke("navigate_history", {"direction": "back"})).is_error
        assert not (await fc.invoke("navigate_history", {"direction": "forward"})).is_error
        assert await fc.read("freecad://model/history") == after  # undone and redone: the same step
        assert not (await fc.invoke("navigate_history", {"direction": "back"})).is_error
        again = await fc.run("doc.addObject('Part::Cylinder', 'Theirs')\ndoc.recompute()", "Add a box")
        assert not again.is_error, text_of(again)
        now = await fc.read("freecad://model/history")
        assert now["undo"] == after["undo"] and now["undoIds"] != after["undoIds"]
