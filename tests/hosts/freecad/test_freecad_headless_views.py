"""Headless FreeCAD pictures that are true, through a real daemon and host: every visible shape is
drawn through groups, App::Part containers and links (also when a hidden section plane uses the
group, as in FreeCAD's own Arch examples), a blind pocket seen from the top shows its rim, and
what a view cannot draw is named beside the image and in its structured content."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from typing import Any

import pytest
from freecad_helpers import FreeCAD, text_of
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
