"""Exact undo and redo on FreeCAD's own undo stack, over random edit sequences (hypothesis), through
a real daemon: undoing every step gives back the document as opened, redoing them the edited one."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from freecad_helpers import SAMPLE, FreeCAD, text_of
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.core.helpers import structured

pytestmark = pytest.mark.slow
EXAMPLES = itertools.count()

EDITS = st.one_of(
    st.builds("doc.getObject('Params').set('thickness', '{}')".format, st.integers(2, 30)),
    st.builds("doc.getObject('Params').set('hole', '{}')".format, st.integers(2, 20)),
    st.builds(
        "b = doc.addObject('Part::Box', 'Box')\nb.Length, b.Width, b.Height = {}, {}, {}\n"
        "b.Placement.Base = Vector({}, 0, 0)".format,
        st.integers(1, 50),
        st.integers(1, 50),
        st.integers(1, 50),
        st.integers(-100, 100),
    ),
    st.builds(
        "doc.getObject('{}').Label = '{}'".format,
        st.sampled_from(["Bracket", "Plate", "Hole"]),
        st.text("abcXYZ 12", min_size=1, max_size=10),
    ),
    st.just(
        "boxes = [o for o in doc.Objects if o.TypeId == 'Part::Box']\n"
        "if boxes:\n    doc.removeObject(boxes[-1].Name)"
    ),
    st.just("doc.getObject('Hole').Reversed = not doc.getObject('Hole').Reversed"),
    st.sampled_from([  # what FreeCAD's own undo of a spreadsheet gets wrong
        "doc.getObject('Params').insertRows('1', 1)",
        "doc.getObject('Params').insertColumns('A', 1)",
        "doc.getObject('Params').clear('A1')",
        "p = doc.getObject('Params')\np.setAlias('B2', 'width_' if p.getAlias('B2') == 'width' else 'width')",
        "doc.getObject('Params').clearAll()",
    ]),
    st.just("len(doc.Objects)  # reads only: no step"),
)  # fmt: skip


@pytest.fixture
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as running:
        yield running


@pytest.fixture
def freecad_host(portal: BlockingPortal, daemon: Any, tmp_path: Path) -> Iterator[tuple[FreeCAD, Path]]:
    """One headless FreeCAD host through one daemon session, for every example."""
    with portal.wrap_async_context_manager(daemon()) as session:
        launched = portal.call(structured, session, "launch_host", {"hostApp": "FreeCAD"})
        yield FreeCAD(session, launched["hostInstanceId"]), tmp_path


def test_a_cell_set_again_to_its_value_then_everything_undone_restores_the_document(
    portal: BlockingPortal, freecad_host: tuple[FreeCAD, Path]
) -> None:
    # the same script twice is two steps of one name: each undo finds its own step's values
    _undo_then_redo_everything(portal, freecad_host, ["doc.getObject('Params').set('thickness', '2')"] * 2)


def test_a_cell_set_to_the_value_it_holds_after_another_step_restores_the_document(
    portal: BlockingPortal, freecad_host: tuple[FreeCAD, Path]
) -> None:
    scripts = ["doc.getObject('Hole').Reversed = not doc.getObject('Hole').Reversed"]
    _undo_then_redo_everything(portal, freecad_host, [*scripts, "doc.getObject('Params').set('hole', '10')"])


@settings(
    max_examples=10,
    deadline=None,
    # each example runs real FreeCAD calls: a failure is reported as found, not shrunk for minutes
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(scripts=st.lists(EDITS, min_size=1, max_size=5))
def test_undoing_every_step_restores_the_exact_document(
    portal: BlockingPortal, freecad_host: tuple[FreeCAD, Path], scripts: list[str]
) -> None:
    _undo_then_redo_everything(portal, freecad_host, scripts)


def _undo_then_redo_everything(
    portal: BlockingPortal, freecad_host: tuple[FreeCAD, Path], scripts: list[str]
) -> None:
    fc, folder = freecad_host
    copy = folder / f"bracket-{next(EXAMPLES)}.FCStd"  # a fresh document for every example
    shutil.copyfile(SAMPLE, copy)
    opened = portal.call(fc.invoke, "open_document", {"filePath": str(copy)})
    assert not opened.is_error, text_of(opened)
    original = portal.call(fc.fingerprint)

    recorded = 0
    for script in scripts:
        result = portal.call(fc.run, script)  # one that fails (a cell gone) is rolled back, no step
        assert not result.is_error or "[ROLLBACK]" in text_of(result), text_of(result)
        recorded += "[UNDO STEP]" in text_of(result)

    edited = portal.call(fc.fingerprint)

    back = portal.call(fc.invoke, "navigate_history", {"direction": "back", "steps": len(scripts) + 2})
    assert not back.is_error, text_of(back)
    assert back.structured_content["navigated"] == recorded and back.structured_content["back_remaining"] == 0
    assert portal.call(fc.fingerprint) == original
    forward = portal.call(fc.invoke, "navigate_history", {"direction": "forward", "steps": len(scripts) + 2})
    assert forward.structured_content["navigated"] == recorded
    assert portal.call(fc.fingerprint) == edited
