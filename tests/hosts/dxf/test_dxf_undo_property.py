"""Undo is exact: random edits, undo all → the document exports the same tags as before."""

from __future__ import annotations

from pathlib import Path

import ezdxf
import pytest
from dxf_helpers import SAMPLE, export_tags
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cadmcp.host.builtins.preview import Difference
from cadmcp.hosts.dxf.documents import DocumentSet
from cadmcp.hosts.dxf.execution import execute
from cadmcp.hosts.dxf.inventory import inventory

# Each edit is agent code run through execute_python_code's engine; `n` varies the edit.
EDITS: dict[str, str] = {
    "add_line": "msp.add_line(({n}, 0), ({n}, 500), dxfattribs={{'layer': 'A-WALL'}})",
    "add_lwpolyline": "msp.add_lwpolyline([(0, {n}), (100, {n}), (100, {n} + 50)], close=True)",
    "delete_entity": "es = list(msp)\nmsp.delete_entity(es[{n} % len(es)]) if es else None",
    "move_entity": "es = list(msp)\nes[{n} % len(es)].translate(10, 20, 0) if es else None",
    "change_layer": "es = list(msp)\nes[{n} % len(es)].dxf.layer = 'A-FURN' if es else None",
    "edit_attrib": (
        "ds = msp.query('INSERT[name==\"DOOR\"]')\n"
        "ds[{n} % len(ds)].get_attrib('FIRE_RATING').dxf.text = 'EI{n}' if len(ds) else None"
    ),
    "edit_points": (
        "ps = msp.query('LWPOLYLINE')\n"
        "if len(ps):\n    p = ps[{n} % len(ps)]\n    p[0] = ({n}, {n})\n    p.append((1, 2))"
    ),
    "add_polyline": "msp.add_polyline2d([({n}, 0), ({n}, 50), (50, {n})], dxfattribs={{'layer': 'A-WALL'}})",
    "add_layer": "doc.layers.add(f'L{n}_{{len(doc.layers)}}', color={n} % 255 + 1)",
    "layer_off": "doc.layers.get('A-FURN').off()",
    "add_block": (
        "b = doc.blocks.new(f'B{n}_{{len(doc.blocks)}}')\nb.add_circle((0, 0), {n} + 1)\n"
        "msp.add_blockref(b.name, ({n}, {n}))"
    ),
    "header_var": "doc.header['$INSUNITS'] = {n} % 20",
    "mtext_edit": "ms = msp.query('MTEXT')\nms[{n} % len(ms)].text = 'ROOM {n}' if len(ms) else None",
    "xdata": "es = list(msp)\nes[{n} % len(es)].set_xdata('ACAD', [(1000, 'note {n}')]) if es else None",
    "delete_block_refs": "for e in msp.query('INSERT[name==\"WINDOW\"]')[:2]:\n    msp.delete_entity(e)",
    "paperspace_text": "doc.layouts.get('A1 Plan').add_text('REV {n}', height=5)",
    "explode_door": (
        "ds = msp.query('INSERT[name==\"DOOR\"]')\nds[{n} % len(ds)].explode() if len(ds) else None"
    ),
    "unset_header_var": "doc.header.__delitem__('$INSUNITS') if '$INSUNITS' in doc.header else None",
}

edit = st.tuples(st.sampled_from(sorted(EDITS)), st.integers(min_value=0, max_value=999))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(edit, min_size=1, max_size=8))
def test_random_edits_then_undo_all_restore_the_document_and_redo_all_replays(
    edits: list[tuple[str, int]],
) -> None:
    entry = DocumentSet().open(str(SAMPLE))
    original = export_tags(entry.doc)
    for kind, n in edits:
        result = execute(entry, EDITS[kind].format(n=n), kind, 30)
        assert not result.is_error, (kind, result.text())
    edited = export_tags(entry.doc)
    steps = entry.history.back_remaining
    back = entry.history.navigate("back", steps + 3)
    assert back["navigated"] == steps
    assert export_tags(entry.doc) == original
    if steps:  # edits that changed nothing (e.g. setting a value it already had) record no step
        entry.history.navigate("forward", steps)
    assert export_tags(entry.doc) == edited


def test_undo_on_a_larger_drawing_restores_exactly(tmp_path: Path) -> None:
    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    for i in range(5_000):
        msp.add_line((i, 0), (i, 1))
    path = tmp_path / "large.dxf"
    doc.saveas(path)
    entry = DocumentSet().open(str(path))
    original = export_tags(entry.doc)
    code = "msp.add_circle((0, 0), 10)\nlist(msp)[5].dxf.layer = 'X'\nmsp.delete_entity(list(msp)[7])"
    result = execute(entry, code, "edit", 30)
    assert not result.is_error, result.text()
    assert "1 created, 1 deleted" in result.text()
    entry.history.navigate("back")
    assert export_tags(entry.doc) == original


def test_state_that_cannot_be_copied_is_reported_not_hidden(sample_path: Path) -> None:
    entry = DocumentSet().open(str(sample_path))
    code = (
        "import threading\n"
        "e = list(msp)[0]\n"
        "e.lock = threading.Lock()\n"  # a lock cannot be deep-copied
        "e.__dict__['lock2'] = threading.Lock()\n"
        "list(msp)[0].translate(1, 0, 0)\n"
    )
    first = execute(entry, code, "attach lock", 30)
    assert not first.is_error, first.text()
    second = execute(entry, "list(msp)[0].translate(5, 0, 0)", "move", 30)
    assert not second.is_error
    assert "[WARNING] Undo of this step cannot restore" in second.text()


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_an_undo_step_counts_what_a_preview_of_the_same_edit_counts(kind: str) -> None:
    """The step's note (``1 created, 3 deleted, 1 modified objects``) and the approval's preview
    describe the same change: a block whose entity list changed is not itself modified, and an
    edited ATTRIB is one object, not also its INSERT."""
    entry = DocumentSet().open(str(SAMPLE))
    before = inventory(entry.doc)
    result = execute(entry, EDITS[kind].format(n=7), kind, 30)
    assert not result.is_error, result.text()
    seen = Difference.between(before, inventory(entry.doc))
    created, deleted, modified = len(seen.created), len(seen.deleted), len(seen.modified)
    said = f"{created} created, {deleted} deleted, {modified} modified objects"
    assert said in result.text(), (seen.sentence(), result.text())


def test_moving_a_polyline_is_one_polyline_modified_in_the_step_and_its_preview() -> None:
    """Moving 2 POLYLINEs of a third-party drawing was previewed as "modifies 57 (57 VERTEX)", handles
    only: the person could not see which polylines would move."""
    entry = DocumentSet().open(str(SAMPLE))
    made = (
        "for y in (0, 100):\n"
        "    msp.add_polyline2d([(0, y), (40, y), (40, y + 20)], dxfattribs={'layer': 'A-WALL'})"
    )
    assert not execute(entry, made, "two polylines", 30).is_error
    before = inventory(entry.doc)
    code = "ps = msp.query('POLYLINE')\nfor p in ps:\n    p.translate(5, 0, 0)\nps[0].append_vertex((9, 9))"
    result = execute(entry, code, "move them", 30)
    assert not result.is_error, result.text()
    seen = Difference.between(before, inventory(entry.doc))
    assert [(kind, name) for _, kind, name in seen.modified] == [("POLYLINE", "on layer A-WALL")] * 2
    assert not seen.created and not seen.deleted
    assert "0 created, 0 deleted, 2 modified objects" in result.text(), result.text()
    touched = entry.history.last_touched()  # what the dashboard marks in its pictures
    assert touched is not None and touched.created == () and touched.deleted == ()
    assert sorted(touched.modified) == sorted(h for h, _, _ in seen.modified)


def test_a_preview_names_a_changed_header_variable_and_every_kind_it_counts() -> None:
    """Setting the drawing's units is a change a person approves knowing; a sentence that names four
    kinds of what a script created counts the rest instead of dropping them."""
    entry = DocumentSet().open(str(SAMPLE))
    before = inventory(entry.doc)
    code = (
        "doc.header['$INSUNITS'] = 5\nb = doc.blocks.new('BX')\nb.add_circle((0, 0), 1)\n"
        "msp.add_blockref('BX', (1, 1))"
    )
    assert not execute(entry, code, "units and a block", 30).is_error
    seen = Difference.between(before, inventory(entry.doc))
    assert [(kind, name) for _, kind, name in seen.modified] == [("header variable", "$INSUNITS")]
    said = seen.sentence()
    assert said.startswith("creates 5 (") and ", 1 more)" in said and "modifies 1 (1 header variable)" in said
