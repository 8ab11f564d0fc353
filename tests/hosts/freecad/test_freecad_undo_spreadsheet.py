"""Undo and redo give back spreadsheet cells exactly: contents, computed values, aliases, styles and
the expressions that read them, with the shapes those cells drive.

Through a real daemon and a headless FreeCAD host, on a document FreeCAD itself generates in the shape
of third-party parametric models: a ``Params`` sheet whose aliased cells (some formulas over other
aliases, one with a display unit) drive a body's sketch and pad and a box through expressions, and a
second sheet reading the first. Each edit is one script; undoing it gives back the document as
opened, redoing it the edited one, and a recompute after the undo changes nothing. The edits include
those FreeCAD's own undo gets wrong on 0.20 (rows or columns inserted or removed, a cell cleared,
``clearAll``, which no observer hears and FreeCAD's undo does not give back).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import FreeCAD, history_round, text_of
from tests.core.helpers import structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BUILD = """
gen = App.newDocument("params")
sheet = gen.addObject("Spreadsheet::Sheet", "Params")
for row, (name, content) in enumerate(
    [("length", "60"), ("thickness", "8"), ("double", "=thickness * 2"), ("half", "=length / 2")], 1
):
    sheet.set(f"A{row}", name)
    sheet.set(f"B{row}", content)
    sheet.setAlias(f"B{row}", name)
sheet.set("C1", "=B1 + B2")
sheet.setDisplayUnit("B1", "mm")
sheet.setStyle("A1", "bold")
sheet.setColumnWidth("A", 140)
gen.recompute()
body = gen.addObject("PartDesign::Body", "Body")
sketch = body.newObject("Sketcher::SketchObject", "Sketch")
sketch.Support = (body.Origin.OriginFeatures[3], [""])
sketch.MapMode = "FlatFace"
corners = [Vector(0, 0, 0), Vector(60, 0, 0), Vector(60, 40, 0), Vector(0, 40, 0)]
for i in range(4):
    sketch.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
for i in range(4):
    sketch.addConstraint(Sketcher.Constraint("Coincident", i, 2, (i + 1) % 4, 1))
for kind, line in (("Horizontal", 0), ("Horizontal", 2), ("Vertical", 1), ("Vertical", 3)):
    sketch.addConstraint(Sketcher.Constraint(kind, line))
sketch.addConstraint(Sketcher.Constraint("Coincident", 0, 1, -1, 1))
length = sketch.addConstraint(Sketcher.Constraint("DistanceX", 0, 1, 0, 2, 60))
sketch.addConstraint(Sketcher.Constraint("DistanceY", 1, 1, 1, 2, 40))
sketch.setExpression(f"Constraints[{length}]", "Params.length")
pad = body.newObject("PartDesign::Pad", "Pad")
pad.Profile = sketch
pad.setExpression("Length", "Params.thickness")
box = gen.addObject("Part::Box", "Box")
box.setExpression("Height", "Params.double")
box.setExpression("Length", "Params.half")
derived = gen.addObject("Spreadsheet::Sheet", "Derived")
derived.set("A1", "=Params.double + 1")
derived.setAlias("A1", "more")
box.setExpression("Width", "Derived.more")
gen.recompute()
gen.saveAs(PATH)
App.closeDocument(gen.Name)
"""

DUMP = """
import json
def _r(v):
    return round(v, 6)
state = {}
for o in doc.Objects:
    entry = {"touched": "Touched" in o.State}
    entry["expressions"] = sorted([str(p), str(e)] for p, e in o.ExpressionEngine)
    for p in o.PropertiesList:
        if p not in ("Shape", "AddSubShape", "ExpressionEngine", "Proxy", "cells"):
            try:
                entry[p] = repr(getattr(o, p))
            except Exception:
                pass
    shape = Part.getShape(o)
    if not shape.isNull():
        b = shape.BoundBox
        box = (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)
        entry["shape"] = [_r(shape.Volume), *(_r(v) for v in box)]
    if o.TypeId == "Spreadsheet::Sheet":
        cells = {}
        for column in "ABCDEF":
            entry["width " + column] = o.getColumnWidth(column)
            for row in range(1, 9):
                a = f"{column}{row}"
                if o.getContents(a) or o.getAlias(a):
                    cells[a] = [o.getContents(a), repr(o.get(a)), o.getAlias(a), sorted(o.getStyle(a) or []),
                                repr(o.getDisplayUnit(a)), sorted(o.getAlignment(a) or []),
                                o.getBackground(a)]
        entry["cells"] = cells
    state[o.Name] = entry
json.dumps(state, sort_keys=True)
"""

SHEET = "doc.getObject('Params')"
EDITS = {
    "value": f"{SHEET}.set('B2', '12')",
    "the value it holds": f"{SHEET}.set('B2', '8')",
    "formula": f"{SHEET}.set('B2', '=length / 10')",
    "label": f"{SHEET}.set('A1', 'len')",
    "alias renamed": f"{SHEET}.setAlias('B2', 'thick')",
    "alias removed": f"{SHEET}.setAlias('B2', '')",
    "new cell and alias": f"{SHEET}.set('D1', '=thickness + 1')\n{SHEET}.setAlias('D1', 'extra')",
    "cell cleared": f"{SHEET}.clear('B4')",
    "row inserted": f"{SHEET}.insertRows('2', 1)",
    "row removed": f"{SHEET}.removeRows('4', 1)",
    "column inserted": f"{SHEET}.insertColumns('B', 1)",
    "everything cleared": f"{SHEET}.clearAll()",
    "style, unit, alignment, colour": f"{SHEET}.setStyle('B2', 'italic')\n"
    f"{SHEET}.setDisplayUnit('B2', 'cm')\n{SHEET}.setAlignment('B2', 'center')\n"
    f"{SHEET}.setBackground('B2', (1.0, 0.0, 0.0))",
    "sizes": f"{SHEET}.setColumnWidth('B', 200)\n{SHEET}.setRowHeight('2', 40)",
    "expression rebound": "doc.getObject('Box').setExpression('Height', 'Params.length')",
}  # fmt: skip


async def dump(fc: FreeCAD) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(ast.literal_eval(await fc.value(DUMP)))
    return state


def without_marks(state: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: v for k, v in entry.items() if k != "touched"} for name, entry in state.items()}


async def test_spreadsheet_cells_come_back_exactly_after_undo_and_redo(daemon: Any, tmp_path: Path) -> None:
    source = tmp_path / "params.FCStd"
    failures: dict[str, list[str]] = {}
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session, launched["hostInstanceId"])
        built = await fc.run(f"PATH = {str(source)!r}\n{BUILD}", "Generate the test document")
        assert not built.is_error, text_of(built)
        for i, (what, edit) in enumerate(EDITS.items()):
            copy = tmp_path / f"params-{i}.FCStd"  # a fresh document and undo history for every edit
            shutil.copyfile(source, copy)
            opened = await fc.invoke("open_document", {"filePath": str(copy)})
            assert not opened.is_error, text_of(opened)
            original = await dump(fc)
            assert original["Box"]["shape"][6] == 16 and original["Derived"]["cells"]["A1"][1] == "17"

            changed = await fc.run(edit, what)
            assert "[UNDO STEP]" in text_of(changed), text_of(changed)
            edited = await dump(fc)
            assert (edited == original) == (what == "the value it holds"), what

            found = await history_round(fc, dump, original, edited, without_marks)
            if found:
                failures[what] = found[:6]
    assert not failures, json.dumps(failures, indent=1)
