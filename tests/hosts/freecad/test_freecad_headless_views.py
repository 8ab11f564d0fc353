"""Headless FreeCAD pictures that are true, through a real daemon and host: every visible shape is
drawn through groups, App::Part containers and links (also when a hidden section plane uses the
group, as in FreeCAD's own Arch examples), a blind pocket seen from the top shows its rim, and
what a view cannot draw is named beside the image and in its structured content."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from freecad_helpers import FreeCAD, padded_sketch, text_of
from PIL import Image
from tests.core.helpers import structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ARCH = """
import Arch, ArchSectionPlane, Draft
building = doc.addObject("App::DocumentObjectGroup", "Building")
for i in range(6):
    column = Arch.makeStructure(length=30, width=30, height=300)
    column.Placement.Base = Vector(i * 100, 0, 0)
    building.addObject(column)
section = doc.addObject("App::FeaturePython", "Section")
ArchSectionPlane._SectionPlane(section)
section.Objects = [building]
section.Visibility = False
assembly = doc.addObject("App::Part", "Assembly")
assembly.Placement.Base = Vector(0, 400, 0)
block = doc.addObject("Part::Box", "Block")
block.Length = block.Width = block.Height = 80
assembly.addObject(block)
link = doc.addObject("App::Link", "BlockCopy")
link.LinkedObject = assembly
link.Placement.Base = Vector(300, 400, 0)
guide = Draft.makeWire(  # a two-point wire: Draft names it Line
    [Vector(0, -100, 0), Vector(500, -100, 0)])
"""

PLATE = """
plate = doc.addObject("Part::Box", "Plate")
plate.Length, plate.Width, plate.Height = 100, 60, 10
cutter = doc.addObject("Part::Box", "Cutter")
cutter.Length, cutter.Width, cutter.Height = 40, 20, 6
cutter.Placement.Base = Vector(30, 20, 6)
POCKET
"""


@pytest.fixture
async def fc(daemon: Any) -> AsyncIterator[FreeCAD]:
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        yield FreeCAD(session, launched["hostInstanceId"])


async def shot(fc: FreeCAD, view: str) -> tuple[Image.Image, str, dict[str, Any]]:
    result = await fc.invoke("view_screenshot", {"width": 600, "height": 400, "view": view})
    assert not result.is_error, text_of(result)
    image = next(c for c in result.content if c.type == "image")
    picture = Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")
    return picture, text_of(result), result.structured_content


async def test_shapes_in_groups_parts_and_links_are_drawn_and_what_is_not_is_named(fc: FreeCAD) -> None:
    built = await fc.run(ARCH, "An Arch group, an App::Part and a link")
    assert not built.is_error, text_of(built)
    picture, notes, coverage = await shot(fc, "top")
    drawn = set(coverage["drawn"])
    assert {f"Structure{n}" for n in ("", "001", "002", "003", "004", "005")} <= drawn
    assert {"Block", "BlockCopy"} <= drawn and "Section" not in drawn
    assert coverage["omitted"] == [
        {
            "object": "Line",
            "label": "Line",
            "type": "Part::Part2DObjectPython",
            "reason": "without faces (wires, sketches, lines; headless views draw faces only)",
        }
    ]
    assert "[INCOMPLETE VIEW] Drew 8 objects; 1 visible ones are not in the picture: 1 without faces" in notes

    # the block is drawn where its App::Part puts it, and its linked copy beside it
    hidden = await fc.run("doc.getObject('BlockCopy').Visibility = False", "Hide the copy")
    assert not hidden.is_error
    without_copy, _, coverage = await shot(fc, "top")
    assert "BlockCopy" not in coverage["drawn"]
    assert picture.getbbox() is not None and picture != without_copy


def _dark_runs(picture: Image.Image, row: int, start: int, end: int) -> int:
    """Runs of outline-dark pixels along one row, between two columns."""
    runs, dark = 0, False
    for x in range(start, end):
        pixel_dark = sum(picture.getpixel((x, row))) < 300
        runs += pixel_dark and not dark
        dark = pixel_dark
    return runs


@pytest.mark.parametrize(
    ("pocket", "rims"),
    [
        pytest.param(
            "cut = doc.addObject('Part::Cut', 'Pocketed')\ncut.Base, cut.Tool = plate, cutter", 2, id="pocket"
        ),
        pytest.param("cutter.Visibility = False", 0, id="plain-plate"),
    ],
)
async def test_a_blind_pocket_seen_from_the_top_shows_its_rim(fc: FreeCAD, pocket: str, rims: int) -> None:
    built = await fc.run(PLATE.replace("POCKET", pocket))
    assert not built.is_error, text_of(built)
    picture, _, coverage = await shot(fc, "top")
    assert coverage["drawnCount"] == 1  # the cut, or the plate alone: the cutter is used or hidden
    # the plate fills the fitted view; the middle row crosses the pocket's two long-side walls
    inside = picture.crop((60, 60, 540, 340)).getbbox()
    assert inside is not None
    assert _dark_runs(picture, 200, 60, 540) == rims


PAD_AND_POCKET = """
def rectangle(name, x, y, w, h, z):
    sketch = body.newObject("Sketcher::SketchObject", name)
    sketch.Support = (body.Origin.OriginFeatures[3], [""])
    sketch.MapMode = "FlatFace"
    sketch.AttachmentOffset.Base = Vector(0, 0, z)
    corners = [Vector(x, y, 0), Vector(x + w, y, 0), Vector(x + w, y + h, 0), Vector(x, y + h, 0)]
    for i in range(4):
        sketch.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
    return sketch
pad = body.newObject("PartDesign::Pad", "Pad")
pad.Profile = rectangle("Outline", 0, 0, 100, 60, 0)
pad.Length = 10
pocket = body.newObject("PartDesign::Pocket", "Pocket")
pocket.Profile = rectangle("Hole", 30, 20, 40, 20, 10)
pocket.Type = "ThroughAll"
"""
"""A Body's 100 x 60 x 10 Pad with a 40 x 20 Pocket through it (the script needs `body`)."""

POCKETED = (
    """
body = doc.addObject("PartDesign::Body", "Body")
body.Placement.Base = Vector(0, 0, 50)
"""
    + PAD_AND_POCKET
    + """doc.recompute()
pocket.BaseFeature = None  # the features follow one another through the Body alone, as in that file
for o in doc.Objects:
    o.Visibility = True  # as a file saved without FreeCAD's window keeps every feature
doc.saveAs(PATH)
App.closeDocument(doc.Name)
"""
)


def _empty_body_shape(path: Any) -> None:
    """Rewrite the .FCStd with the Body's saved shape empty, as PartDesignExample.FCStd has it."""
    import re
    import zipfile

    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    document = files["Document.xml"].decode("utf-8")
    data = document[document.index("<ObjectData") :]
    body = re.search(r'<Object name="Body"[^>]*>(.*?)</Object>', data, re.S)
    assert body is not None
    shape = r'<Property name="Shape" type="Part::PropertyPartShape"[^>]*>\s*<Part file="([^"]+)"'
    brep = re.search(shape, body[1])
    assert brep is not None
    files[brep[1]] = b""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)


async def test_a_body_saved_without_its_shape_is_drawn_as_its_tip(fc: FreeCAD, tmp_path: Any) -> None:
    path = tmp_path / "pocketed.FCStd"
    built = await fc.run(f"doc = App.newDocument('gen')\nPATH = {str(path)!r}\n{POCKETED}", "A pocketed body")
    assert not built.is_error, text_of(built)
    _empty_body_shape(path)
    opened = await fc.invoke("open_document", {"filePath": str(path)})
    assert not opened.is_error, text_of(opened)
    state = await fc.value("doc.Name, doc.getObject('Body').Shape.isNull()")
    assert state == "('pocketed', True)"  # the file's state, as opened

    picture, _, coverage = await shot(fc, "top")
    assert coverage["drawn"] == ["Body"]  # not the Pad under the Pocket, nor the Pocket beside it
    # seen from the top the hole is open: the background shows through at the plate's middle
    background = picture.getpixel((2, 2))
    box = picture.getbbox()
    assert box is not None
    middle = ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)
    assert picture.getpixel(middle) == background


async def test_a_picture_of_nothing_is_blank_and_one_of_a_failed_recompute_says_so(fc: FreeCAD) -> None:
    """Only the caption drawn (a document holding a wire alone) was reported `blank: false`; a Pad that
    failed its recompute is drawn as its last good shape, and the picture now says so."""
    _, said, found = await shot(fc, "isometric")
    assert found["blank"] is True and "Nothing to draw: the document has no objects" in said, said
    assert not (
        await fc.run("import Part\nPart.show(Part.makePolygon([Vector(0, 0, 0), Vector(9, 0, 0)]))")
    ).is_error
    _, said, found = await shot(fc, "isometric")
    assert found["blank"] is True and "Nothing to draw: none of the 1 objects" in said, said
    assert not (await fc.run(padded_sketch())).is_error
    _, said, found = await shot(fc, "isometric")
    assert found["blank"] is False and "[IN ERROR]" not in said
    assert not (await fc.run("doc.getObject('Pad').Length = 0")).is_error
    _, said, found = await shot(fc, "isometric")
    assert "[IN ERROR] 1 object(s) failed their last recompute (Pad (PartDesign::Pad)" in said, said


async def test_visible_objects_without_a_shape_are_named_as_left_out(fc: FreeCAD) -> None:
    """A mesh (as a toolpath, a FEM mesh or a point cloud) has no shape to draw headless: it is named
    in `omitted`, where it used to vanish with `omittedCount: 0`."""
    made = await fc.run(
        "import Mesh\ndoc.addObject('Mesh::Feature', 'Scan').Mesh = Mesh.createBox(10, 10, 10)"
    )
    assert not made.is_error, text_of(made)
    _, said, found = await shot(fc, "isometric")
    assert found["omittedCount"] == 1 and found["omitted"][0]["object"] == "Scan", found
    assert "that headless views do not draw" in said, said


MARKS = (
    """
body = doc.addObject("PartDesign::Body", "Body")
"""
    + PAD_AND_POCKET
    + """spare = doc.addObject("Part::Box", "Spare")
spare.Placement.Base = Vector(200, 0, 0)
spare.Visibility = False
doc.recompute()
"""
)


async def test_a_mark_on_a_feature_another_one_was_made_from_shows_on_that_one(fc: FreeCAD) -> None:
    """Marking what a change modified (a Pad under a Pocket) drew nothing in orange: the Pad is not
    drawn itself. It is now marked on the shape that holds it; a hidden or unknown name is said."""
    built = await fc.run(MARKS)
    assert not built.is_error, text_of(built)
    plain = await fc.invoke("view_screenshot", {"width": 400, "view": "top"})
    marked = await fc.invoke(
        "view_screenshot", {"width": 400, "view": "top", "mark": ["Pad", "Spare", "Nothing"]}
    )
    assert not marked.is_error, text_of(marked)
    coverage = marked.structured_content
    assert coverage["marked"] == ["Body"], coverage
    why = {m["object"]: m for m in coverage["markedNotShown"]}
    assert why["Pad"]["shownAs"] == ["Body"] and "is part of Body: marked there" in why["Pad"]["reason"]
    assert why["Spare"]["reason"].startswith("is hidden")
    assert why["Nothing"]["reason"] == "is no object of this document"
    assert "[MARK] 3 marked object(s) are not drawn themselves" in text_of(marked)

    def orange(result: Any) -> int:
        image = next(c for c in result.content if c.type == "image")
        rgb = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")).astype(int)
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        return int(((r > 200) & (g > 60) & (g < 160) & (b < 60)).sum())

    assert orange(plain) == 0 and orange(marked) > 1000  # the body is drawn in the mark's orange


ASSEMBLY = """
model = doc.addObject("App::Part", "Model")
rod = doc.addObject("Part::Box", "Rod")
rod.Length, rod.Width, rod.Height = 40, 10, 5
model.addObject(rod)
lcs = doc.addObject("PartDesign::CoordinateSystem", "LCS_Rod")
model.addObject(lcs)
lcs.Support = [(rod, "Vertex1")]
lcs.MapMode = "Translate"
copy = doc.addObject("App::Link", "RodCopy")
copy.LinkedObject = model
copy.Placement.Base = Vector(0, 50, 0)
doc.recompute()
sorted(o.Name for o in rod.InList)
"""


async def test_an_assembly_with_coordinate_systems_is_drawn_and_measured_without_their_infinite_planes(
    fc: FreeCAD,
) -> None:
    """Assembly4's shape (FreeCAD_Assembly4's asm_Bielle): a part with a coordinate system attached
    to it, in an App::Part, placed again by a link. The attached LCS counted as built from the part,
    so the part was left out of every view; the LCS's plane (FreeCAD: ±1e100) made the App::Part's
    and the link's boxes infinite and their volumes 1e153."""
    built = await fc.run(ASSEMBLY, "A part, its LCS and a linked copy")
    assert not built.is_error and "'LCS_Rod'" in text_of(built), text_of(built)
    _, _, coverage = await shot(fc, "top")
    assert {"Rod", "RodCopy"} <= set(coverage["drawn"]) and "LCS_Rod" not in coverage["drawn"], coverage
    context = await fc.read("freecad://model/context")
    assert context["boundingBox"] == {"min": [0.0, 0.0, 0.0], "max": [40.0, 60.0, 5.0]}, context
    model = await fc.read("freecad://element/{elementId}", elementId="Model")
    assert model["shape"]["volume"] == pytest.approx(2000) and "left out" in model["shape"]["measured"]
    assert model["shape"]["boundingBox"] == {"min": [0.0, 0.0, 0.0], "max": [40.0, 10.0, 5.0]}
    preview = await fc.invoke("freecad://schedule/{scheduleId}/preview", {"scheduleId": "objects"})
    row = next(line for line in preview.content[0].resource.text.splitlines() if line.startswith("Model,"))
    assert row.split(",")[3:5] == ["2000", "1300"], row  # volume and area of the rod alone
