"""Undo and redo give back the whole FreeCAD document, derived geometry and recompute marks included.

Through a real daemon and a headless FreeCAD host, on a document FreeCAD itself generates with
the shapes that went wrong on FreeCAD's own examples: a spreadsheet alias driving a sketch
constraint through an expression, the Body it pads inside an App::Part container, and an Arch
structure inside a group that a hidden section plane uses, with a sketch attached to its top
face. After navigate_history every object's placement, shape (containers' shapes included),
bounding box and "touched" mark equal those of that step, a recompute changes nothing, and a
saved copy reopens with that geometry.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import FreeCAD, result_value, text_of
from tests.core.helpers import structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BUILD = """
import Arch, ArchSectionPlane, Draft
gen = App.newDocument("chain")
sheet = gen.addObject("Spreadsheet::Sheet", "Params")
sheet.set("A1", "75")
sheet.setAlias("A1", "throw")
crank = gen.addObject("App::Part", "Crank")
body = gen.addObject("PartDesign::Body", "Body")
crank.addObject(body)
sketch = body.newObject("Sketcher::SketchObject", "Profile")
sketch.Support = (body.Origin.OriginFeatures[3], [""])
sketch.MapMode = "FlatFace"
corners = [Vector(0, 0, 0), Vector(40, 0, 0), Vector(40, 20, 0), Vector(0, 20, 0)]
for i in range(4):
    sketch.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
for i in range(4):
    sketch.addConstraint(Sketcher.Constraint("Coincident", i, 2, (i + 1) % 4, 1))
for kind, line in (("Horizontal", 0), ("Horizontal", 2), ("Vertical", 1), ("Vertical", 3)):
    sketch.addConstraint(Sketcher.Constraint(kind, line))
sketch.addConstraint(Sketcher.Constraint("DistanceX", 0, 1, 0, 2, 40))
height = sketch.addConstraint(Sketcher.Constraint("DistanceY", 1, 1, 1, 2, 20))
sketch.setExpression(f"Constraints[{height}]", "Params.throw")
pad = body.newObject("PartDesign::Pad", "Pad")
pad.Profile = sketch
pad.Length = 10
structure = Arch.makeStructure(Draft.makeRectangle(100, 50), height=300)
top = gen.addObject("Sketcher::SketchObject", "OnTop")
top.Support = (structure, ["Face6"])
top.MapMode = "FlatFace"
top.addGeometry(Part.Circle(Vector(10, 10, 0), Vector(0, 0, 1), 5))
building = gen.addObject("App::DocumentObjectGroup", "Building")
building.addObject(structure)
section = gen.addObject("App::FeaturePython", "Section")
ArchSectionPlane._SectionPlane(section)
section.Objects = [building]
section.Visibility = False
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
    if hasattr(o, "Placement"):
        p = o.Placement
        entry["placement"] = [_r(v) for v in (*p.Base, *p.Rotation.Q)]
    shape = Part.getShape(o)
    if not shape.isNull():
        b = shape.BoundBox
        entry["box"] = [_r(v) for v in (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)]
        entry["volume"] = _r(shape.Volume)
    state[o.Name] = entry
json.dumps(state, sort_keys=True)
"""

EDITS = [
    pytest.param(
        "doc.getObject('Params').set('throw', '80')", {"Crank", "Pad"}, id="spreadsheet-in-app-part"
    ),
    pytest.param(
        "doc.getObject('Structure').Height = 305", {"Building", "OnTop"}, id="arch-structure-in-group"
    ),
]


async def dump(fc: FreeCAD) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(ast.literal_eval(await fc.value(DUMP)))
    return state


def without_marks(state: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: v for k, v in entry.items() if k != "touched"} for name, entry in state.items()}


@pytest.fixture
async def chain(daemon: Any, tmp_path: Path) -> Any:
    """A FreeCAD host with the generated document open (fresh undo history)."""
    path = tmp_path / "chain.FCStd"
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session, launched["hostInstanceId"])
        built = await fc.run(f"PATH = {str(path)!r}\n{BUILD}", "Generate the test document")
        assert not built.is_error, text_of(built)
        opened = await fc.invoke("open_document", {"filePath": str(path)})
        assert not opened.is_error, text_of(opened)
        yield fc, path


@pytest.mark.parametrize(("edit", "derived"), EDITS)
async def test_undo_and_redo_give_back_derived_geometry_and_marks(
    chain: tuple[FreeCAD, Path], edit: str, derived: set[str], tmp_path: Path
) -> None:
    fc, _ = chain
    original = await dump(fc)
    changed = await fc.run(edit, "Change a driving value")
    assert "[UNDO STEP]" in text_of(changed), text_of(changed)
    edited = await dump(fc)
    moved = {name for name in original if original[name] != edited[name]}
    assert derived <= moved  # the containers and the attached sketch follow the change

    back = await fc.invoke("navigate_history", {"direction": "back"})
    assert back.structured_content["navigated"] == 1
    assert await dump(fc) == original  # shapes, boxes and touched marks as they were

    forward = await fc.invoke("navigate_history", {"direction": "forward"})
    assert forward.structured_content["navigated"] == 1
    assert without_marks(await dump(fc)) == without_marks(edited)
    await fc.invoke("navigate_history", {"direction": "back"})
    assert await dump(fc) == original

    recomputed = await fc.run("doc.recompute()\ndoc.Objects[0].Name", "Recompute")
    assert not recomputed.is_error, text_of(recomputed)
    assert without_marks(await dump(fc)) == without_marks(original)  # nothing was left stale

    copy = tmp_path / "undone.FCStd"
    saved = await fc.invoke("save_document", {"filePath": str(copy)})
    assert not saved.is_error, text_of(saved)
    check = tmp_path / "check.FCStd"  # a second file: the saved one is the open document
    shutil.copyfile(copy, check)
    reopened = await fc.value(
        f"r = App.openDocument({str(check)!r})\nr.recompute()\n"
        "boxes = {o.Name: Part.getShape(o).BoundBox for o in r.Objects if not Part.getShape(o).isNull()}\n"
        "App.closeDocument(r.Name)\n{name: [round(b.ZMax, 6), round(b.YMax, 6)] for name, b in boxes.items()}"
    )
    saved_boxes = ast.literal_eval(reopened)
    for name in derived:
        assert saved_boxes[name] == [original[name]["box"][5], original[name]["box"][4]]


async def test_a_failed_script_leaves_derived_geometry_as_it_was(chain: tuple[FreeCAD, Path]) -> None:
    fc, _ = chain
    original = await dump(fc)
    failed = await fc.run(
        "doc.getObject('Structure').Height = 305\ndoc.recompute()\nraise ValueError('stop')"
    )
    assert failed.is_error and "[ROLLBACK]" in text_of(failed)
    assert await dump(fc) == original
    assert result_value(await fc.run("len(doc.UndoNames)")) == "0"
