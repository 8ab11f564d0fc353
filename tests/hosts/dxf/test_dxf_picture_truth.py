"""A DXF picture is true or says why not: framing robust to far outliers, what is not drawn named,
and no silent blank (each case a generated drawing of the shape found in third-party files)."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ezdxf
import pytest
from dxf_helpers import text_of
from mcp import Client
from PIL import Image, ImageChops

from cadmcp.hosts.dxf import create_server

pytestmark = pytest.mark.anyio


def far_insert(doc: Any) -> None:
    """67 entities around the origin and one INSERT 3.4 million units away (a real drawing's shape)."""
    msp = doc.modelspace()
    block = doc.blocks.new("FAR_BLOCK")
    block.add_circle((0, 0), 50)
    for i in range(30):
        msp.add_line((i * 100, 0), (i * 100, 2000), dxfattribs={"layer": "GRID"})
        msp.add_circle((i * 100 + 50, 1000), 40, dxfattribs={"layer": "HOLES"})
    for i in range(7):
        msp.add_text(f"T{i}", height=80, dxfattribs={"layer": "TEXT"}).set_placement((i * 400, -200))
    msp.add_blockref("FAR_BLOCK", (3_400_000, 1_200_000), dxfattribs={"layer": "STRAY"})


def undrawable_parts(doc: Any) -> None:
    """Blocks nested in blocks, an external reference at the top and inside a block, ACIS solids."""
    msp = doc.modelspace()
    doc.add_xref_def("site_survey.dxf", "SITE")
    bolt = doc.blocks.new("BOLT")
    bolt.add_circle((0, 0), 5)
    plate = doc.blocks.new("PLATE")
    plate.add_lwpolyline([(0, 0), (100, 0), (100, 50), (0, 50)], close=True)
    plate.add_blockref("BOLT", (10, 10))
    plate.add_blockref("SITE", (0, 0))
    for i in range(6):
        msp.add_blockref("PLATE", (i * 150, 0))
    msp.add_blockref("SITE", (0, 0))
    msp.add_3dsolid().sat = ["400 0 1 0", "body $-1 -1 $-1 $1 $-1 $-1 #", "End-of-ACIS-data"]


def everything_on_a_layer_that_is_off(doc: Any) -> None:
    doc.layers.add("HIDDEN").off()
    for i in range(5):
        doc.modelspace().add_line((0, i), (10, i), dxfattribs={"layer": "HIDDEN"})


@pytest.fixture
def drawing(tmp_path: Path) -> Callable[[Callable[[Any], None]], Any]:
    def make(shape: Callable[[Any], None]) -> Any:
        doc = ezdxf.new("R2010")
        shape(doc)
        path = tmp_path / f"{shape.__name__}.dxf"
        doc.saveas(path)
        return _connect(path)

    return make


class _connect:
    def __init__(self, path: Path) -> None:
        self.path = path

    async def __aenter__(self) -> Client:
        self.client = Client(create_server([str(self.path)], exec_timeout=10).server)
        return await self.client.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(*exc)


async def shot(client: Client, **args: object) -> tuple[Image.Image, str, dict[str, Any]]:
    result = await client.call_tool("view_screenshot", {"width": 640, **args})
    assert not result.is_error, text_of(result)
    image = Image.open(io.BytesIO(base64.b64decode(result.content[0].data))).convert("RGB")
    return image, text_of(result), result.structured_content


def ink_box(image: Image.Image) -> tuple[int, int, int, int] | None:
    return ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()


async def test_a_far_insert_is_left_out_of_the_frame_and_named(drawing: Any) -> None:
    async with drawing(far_insert) as client:
        image, text, view = await shot(client)
        box = ink_box(image)
        assert box is not None and box[2] - box[0] > 0.8 * image.width  # the 67 entities fill the view
        assert "[PARTLY FRAMED]" in text and "INSERT" in text and "FAR_BLOCK" in text and "STRAY" in text
        assert "extents='all'" in text
        assert view["entities"]["outsideFrame"] == 1 and view["entities"]["drawn"] == 68
        (left_out,) = view["outsideFrame"]
        assert left_out["type"] == "INSERT" and left_out["layer"] == "STRAY"
        assert left_out["min"][0] > 3_000_000 and view["frame"]["max"][0] < 5_000
        assert view["complete"] is False and view["blank"] is False

        everything, text_all, view_all = await shot(client, extents="all")
        assert view_all["frame"]["max"][0] > 3_000_000 and view_all["entities"]["outsideFrame"] == 0
        assert "[PARTLY FRAMED]" not in text_all and view_all["complete"] is True
        assert ink_box(everything) is not None

        bad = await client.call_tool("view_screenshot", {"extents": "most"})
        assert bad.is_error


async def test_xrefs_and_acis_solids_at_any_depth_are_named_as_not_drawn(drawing: Any) -> None:
    async with drawing(undrawable_parts) as client:
        image, text, view = await shot(client)
        assert ink_box(image) is not None  # the plates and their nested bolts are drawn
        assert "[NOT DRAWN]" in text and "site_survey.dxf" in text and "3DSOLID" in text
        reasons = {item["type"]: item["reason"] for item in view["notDrawn"]}
        assert "external reference" in reasons["INSERT"] and "ACIS" in reasons["3DSOLID"]
        assert view["entities"]["notDrawn"] == 2 and view["entities"]["drawn"] == 6
        # the xref inside each plate's block is named although the plate itself is drawn
        assert len(view["partlyDrawn"]) == 6
        assert all("SITE" in item["reason"] for item in view["partlyDrawn"])


async def test_a_picture_with_everything_hidden_says_why_it_is_blank(drawing: Any) -> None:
    async with drawing(everything_on_a_layer_that_is_off) as client:
        image, text, view = await shot(client)
        assert ink_box(image) is None
        assert "[BLANK VIEW]" in text and "hidden" in text and view["blank"] is True
        assert view["entities"]["hidden"] == 5


async def test_an_empty_window_and_an_empty_drawing_say_why_they_are_blank(drawing: Any) -> None:
    async with drawing(far_insert) as client:
        image, text, view = await shot(client, window=[-90_000, -90_000, -80_000, -80_000])
        assert ink_box(image) is None and view["blank"] is True
        assert "[BLANK VIEW]" in text and "window" in text
    async with drawing(lambda doc: None) as client:
        image, text, view = await shot(client)
        assert ink_box(image) is None and "[BLANK VIEW]" in text and "no entities" in text


async def test_an_ordinary_drawing_is_complete_and_says_nothing(client: Client) -> None:
    _, text, view = await shot(client)
    assert text == "" and view["complete"] is True and view["blank"] is False
    assert view["entities"]["drawn"] == view["entities"]["visited"] > 0


def test_attributes_count_as_their_insert_and_destroyed_entities_are_skipped() -> None:
    """Shapes of LibreDWG's example drawings: a far INSERT with an ATTRIB; a damaged file whose
    entity space still lists a destroyed entity."""
    from cadmcp.hosts.dxf.screenshot import render

    doc = ezdxf.new("R2010")
    far_insert(doc)
    msp = doc.modelspace()
    stray = msp.query("INSERT").first
    stray.add_attrib("TAG", "far away", (3_400_100, 1_200_100))
    ghost = msp.add_line((0, 0), (10, 10))
    ghost.destroy()  # gone, yet still in the entity space as a damaged file leaves it
    shot = render(doc, width=400)
    assert shot.coverage is not None
    assert [item["type"] for item in shot.coverage["outsideFrame"]] == ["INSERT"]
    assert shot.coverage["entities"]["visited"] == 68


async def test_a_preview_whose_pictures_are_the_same_says_the_view_does_not_show_the_change(
    tmp_path: Path,
) -> None:
    """Deleting all the furniture inside a building gave the same before- and after-picture, seen from
    outside, with no word: the person could think nothing happens."""
    path = tmp_path / "plan.dxf"
    doc = ezdxf.new("R2018")
    doc.modelspace().add_lwpolyline([(0, 0), (100, 0), (100, 60), (0, 60)], close=True)
    doc.saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        unseen = await client.call_tool(
            "execute_python_code", {"code": "doc.layers.add('FURNITURE-OLD')", "dryRun": True}
        )
        assert not unseen.is_error, text_of(unseen)
        assert "[SAME PICTURES]" in text_of(unseen)
        assert any("pictures are the same" in n for n in unseen.structured_content["notes"])
        seen = await client.call_tool(
            "execute_python_code", {"code": "msp.add_circle((50, 30), 20)", "dryRun": True}
        )
        assert not seen.is_error and "[SAME PICTURES]" not in text_of(seen)


async def test_a_view_that_hides_most_of_the_drawing_says_which_layers_hide_it(tmp_path: Path) -> None:
    """A curtain-wall detail with 1,147 of its 1,372 entities on layers that are off showed an almost
    empty picture, its notes naming only what could not be drawn."""
    path = tmp_path / "detail.dxf"
    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    for n in range(30):
        msp.add_line((n, 0), (n, 10), dxfattribs={"layer": "DETAIL"})
    msp.add_line((0, 0), (30, 0), dxfattribs={"layer": "OUTLINE"})
    doc.layers.add("DETAIL").off()
    doc.saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        shot = await client.call_tool("view_screenshot", {"width": 400})
        assert not shot.is_error, text_of(shot)
        said = text_of(shot)
        assert "[HIDDEN] 30 of the 31 entities are not drawn because their layers are off" in said, said
        assert "on 'DETAIL' (30)" in said
        shown = await client.call_tool("view_screenshot", {"width": 400, "layers": ["DETAIL", "OUTLINE"]})
        assert "[HIDDEN]" not in text_of(shown), text_of(shown)


async def test_a_preview_names_the_entities_not_their_vertices(tmp_path: Path) -> None:
    """Deleting everything of LibreDWG's example drawing was put as "deletes 115 (13 VERTEX, 12 SEQEND,
    ...)" with samples "on layer 0, on layer 0": a polyline's parts came before what a drafter names.
    A polyline's vertices and end marker are part of it: they are not counted of their own."""
    path = tmp_path / "polylines.dxf"
    doc = ezdxf.new("R2000")
    msp = doc.modelspace()
    for n in range(3):
        msp.add_polyline2d([(0, 0), (1, n), (2, 0), (3, 1)], dxfattribs={"layer": "WALLS"})
    msp.add_line((0, 0), (1, 1), dxfattribs={"layer": "GRID"})
    doc.saveas(path)
    code = "for e in list(msp):\n    msp.delete_entity(e)"
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        preview = await client.call_tool("execute_python_code", {"code": code, "dryRun": True})
        assert "deletes 4 (3 POLYLINE, 1 LINE)" in text_of(preview), text_of(preview)
        sample = preview.structured_content["deleted"]["sample"]
        assert [s["kind"] for s in sample[:4]] == ["LINE", "POLYLINE", "POLYLINE", "POLYLINE"], sample


def _sheet(path: Path, *, active: bool) -> None:
    """A part in model space and a sheet whose viewport shows it (plus one in a 3D view), written as
    AutoCAD writes a layout that is not the active one (every viewport's id and status 0) or as the
    active one."""
    doc = ezdxf.new("R2018")
    doc.modelspace().add_circle((50, 50), 20, dxfattribs={"layer": "PART"})
    sheet = doc.layouts.new("Sheet 2")
    sheet.page_setup(size=(420, 297), margins=(10, 10, 10, 10), units="mm")
    sheet.add_viewport(center=(150, 150), size=(120, 120), view_center_point=(50, 50), view_height=60)
    side = sheet.add_viewport(center=(330, 150), size=(80, 80), view_center_point=(50, 50), view_height=60)
    side.dxf.view_direction_vector = (1, -1, 1)  # an isometric view
    if not active:
        for vp in sheet.viewports():
            vp.dxf.status, vp.dxf.id = 0, 0
    else:
        doc.layouts.set_active_layout("Sheet 2")
    doc.saveas(path)


@pytest.mark.parametrize("active", [False, True])
async def test_a_sheets_viewports_show_model_space_whichever_layout_is_active(
    tmp_path: Path, active: bool
) -> None:
    """gdsestimating's cw750 details: sheets 2-4 came out with only their title block, and LibreDWG's
    Dynblocks.dwg Layout1 as '[BLANK VIEW] None of the 2 entities ... produced anything visible':
    AutoCAD writes status 0 for the viewports of every layout but the active one, and ezdxf's
    renderer draws only those with a positive status."""
    path = tmp_path / "sheets.dxf"
    _sheet(path, active=active)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        shot = await client.call_tool(
            "view_screenshot", {"width": 400, "layout": "Sheet 2", "extents": "all"}
        )
        assert not shot.is_error, text_of(shot)
        view, said = shot.structured_content, text_of(shot)
        assert not view["blank"] and "[BLANK VIEW]" not in said, said
        # the circle (radius 20 at 2x) fills 110..190 of the sheet: the viewport's content is drawn
        assert view["extents"]["min"][0] <= 110 and view["extents"]["max"][0] >= 190, view
        assert "[VIEWPORT NOT DRAWN] 1 viewport(s) of this layout show model space in a 3D view" in said
        assert len(view["viewportsNotDrawn"]) == 1


async def test_a_layout_is_framed_as_a_whole_sheet_by_default(tmp_path: Path) -> None:
    """LibreDWG's gh44 drawing: Layout1 came out framed on a dense corner, its border and title block
    (236 entities) left out as outliers; an AutoCAD user opens a sheet to see all of it."""
    path = tmp_path / "sheet.dxf"
    doc = ezdxf.new("R2018")
    sheet = doc.layouts.new("A1")
    sheet.add_lwpolyline([(0, 0), (841, 0), (841, 594), (0, 594)], close=True)  # the border
    sheet.add_text("TITLE", height=10).set_placement((800, 10))
    for n in range(60):  # a dense detail in one corner
        sheet.add_circle((200 + n % 10, 400 + n // 10), 0.4)
    doc.saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        whole = (await client.call_tool("view_screenshot", {"width": 400, "layout": "A1"})).structured_content
        assert whole["framing"] == "all" and whole["frame"]["max"][0] >= 841, whole
        main = await client.call_tool("view_screenshot", {"width": 400, "layout": "A1", "extents": "main"})
        assert main.structured_content["framing"] == "main"
        model = (await client.call_tool("view_screenshot", {"width": 400})).structured_content
        assert model["framing"] == "main"  # modelspace keeps leaving far outliers out


def texts_no_font_here_can_draw(doc: Any) -> None:
    """A Chinese plan's room names (code page ANSI_936), one character no font has (U+0378 is
    unassigned), and a plain text."""
    msp = doc.modelspace()
    msp.add_text("房间 \u0378", height=2.5, dxfattribs={"layer": "ROOMS"}).set_placement((0, 0))
    msp.add_mtext("天正单行文字输入", dxfattribs={"char_height": 2.5, "insert": (0, 10), "layer": "ROOMS"})
    msp.add_text("plain", height=2.5, dxfattribs={"layer": "NOTES"}).set_placement((0, 20))


async def test_text_drawn_as_empty_boxes_is_named(drawing: Any) -> None:
    """gh109_1.dwg, a Chinese plan, showed its room names as rows of empty boxes on a machine with
    no CJK font, and the view said nothing: the agent took the boxes for the drawing's text."""
    async with drawing(texts_no_font_here_can_draw) as client:
        _, text, view = await shot(client)
        assert "[TEXT AS BOXES]" in text and "fonts-noto-cjk" in text, text
        boxes = {b["characters"]: b for b in view["textAsBoxes"]}
        assert any("\u0378" in chars for chars in boxes), boxes
        assert all(b["font"] for b in boxes.values()) and view["complete"] is False
        assert "NOTES" not in text.split("[TEXT AS BOXES]")[1]  # the plain text is not named
