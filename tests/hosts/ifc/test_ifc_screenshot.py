"""view_screenshot renders real geometry and follows edits."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from ifc_helpers import run, text
from mcp import Client
from PIL import Image

from cadmcp.hosts.ifc import create_server

pytestmark = pytest.mark.anyio


def roof_red(pixels: np.ndarray) -> np.ndarray:
    """Pixels of the roof's terracotta (doors are browner: their red is under 1.7x their green)."""
    return (pixels[..., 0] > 1.7 * pixels[..., 1]) & (pixels[..., 0] > pixels[..., 2] + 60)


async def shot(client, notes: list[str] | None = None, **args) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The picture; with ``notes``, the notes beside it go there (else there must be none)."""
    result = await client.call_tool("view_screenshot", args)
    assert not result.is_error, text(result)
    image, *said = result.content
    if notes is None:
        assert not said, said  # no note: everything was drawn
    else:
        notes.extend(n.text for n in said)
    assert image.type == "image" and image.mime_type == "image/png"
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")).astype(np.int16)


async def test_axonometric_shows_the_building_in_class_colours(client) -> None:
    pixels = await shot(client, width=640)
    assert pixels.shape[1] == 640 and 256 <= pixels.shape[0] <= 800
    background = np.array([246, 246, 243])
    assert (np.abs(pixels - background).sum(axis=2) > 30).mean() > 0.3  # the house fills the frame
    window_blue = pixels[..., 2] > pixels[..., 0] + 30
    assert roof_red(pixels).mean() > 0.05 and window_blue.any()


async def test_screenshot_changes_after_an_edit_and_back_after_undo(client) -> None:
    before = await shot(client, width=400, height=300)
    result = await run(
        client, "api.root.remove_product(model, product=model.by_type('IfcSlab')[-1])", "remove roof"
    )
    assert not result.is_error, text(result)
    after = await shot(client, width=400, height=300)
    assert after.shape == before.shape == (300, 400, 3)
    assert (after != before).any(axis=2).mean() > 0.05
    await client.call_tool("navigate_history", {"direction": "back"})
    assert np.array_equal(await shot(client, width=400, height=300), before)


async def test_plan_of_a_storey_shows_its_walls_not_the_roof(client) -> None:
    ground = await shot(client, width=500, view="plan")
    notes: list[str] = []
    first = await shot(client, notes, width=500, view="plan", storey="First Floor")
    assert not roof_red(first).any()
    # the roof slab is cut like a wall, not drawn beneath like a floor: wholly above, it is named
    assert notes == [
        "[ABOVE THE CUT] 1 elements are wholly above the section plane 1.2 m above the floor and not in "
        "the plan (IfcSlab x1); view='axonometric' with this storey shows them."
    ]
    assert roof_red(await shot(client, width=500, view="axonometric", storey="First Floor")).mean() > 0.05
    assert not np.array_equal(ground, first)  # the ground floor has the front door
    lower = await shot(client, width=500, view="plan", storey="ground floor")
    assert np.array_equal(lower, ground)


async def test_top_shows_the_roof_from_above_and_isometric_is_the_axonometric_view(client) -> None:
    """The view names FreeCAD uses work here too: 'top' looks down on the whole house (its roof,
    where a plan cuts below it), 'isometric' is the default 3D view."""
    top = await shot(client, width=500, view="top")
    assert roof_red(top).mean() > 0.3  # the roof covers the house seen from above
    assert not np.array_equal(top, await shot(client, width=500, view="plan"))
    assert not np.array_equal(top, await shot(client, width=500))
    assert np.array_equal(await shot(client, width=500, view="isometric"), await shot(client, width=500))
    ground_top = await shot(client, width=500, view="top", storey="Ground Floor")
    assert not np.array_equal(ground_top, top)  # one storey from above, without the roof's storey


async def test_the_dashboards_view_choices_leave_out_the_other_names_of_a_view(client) -> None:
    """'isometric' is taken as 'axonometric': a person choosing a view is offered one of them."""
    from types import SimpleNamespace

    from cadmcp.daemon.dashboard.hostsview import view_options

    (tool,) = [t for t in (await client.list_tools()).tools if t.name == "view_screenshot"]
    raw = tool.model_dump(by_alias=True, exclude_none=True)
    assert raw["inputSchema"]["properties"]["view"]["x-cadmcp-aliases"] == {"isometric": "axonometric"}
    entry = SimpleNamespace(find=lambda kind, name: SimpleNamespace(raw=raw))  # as the daemon lists it
    (choice,) = [o for o in view_options(entry) if o["name"] == "view"]
    assert choice["enum"] == ["axonometric", "plan", "top"] and choice["default"] == "axonometric"


async def test_bad_arguments_are_clear_errors(client) -> None:
    unknown = await client.call_tool("view_screenshot", {"view": "plan", "storey": "Basement"})
    assert unknown.is_error and "Ground Floor" in text(unknown)
    huge = await client.call_tool("view_screenshot", {"width": 100_000})
    assert huge.is_error and "between" in text(huge)
    wrong_view = await client.call_tool("view_screenshot", {"view": "perspective"})
    assert wrong_view.is_error


async def test_empty_project_renders_a_blank_frame_that_says_why() -> None:
    async with Client(create_server().server) as client:
        result = await client.call_tool("view_screenshot", {"width": 320})
        image, note = result.content
        pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB"))
        assert pixels.shape == (240, 320, 3)
        assert note.text.startswith("[BLANK VIEW]") and "no products with geometry" in note.text
        assert result.structured_content["blank"] is True


async def test_an_element_with_broken_geometry_is_named_and_the_rest_is_drawn(client) -> None:
    before = await shot(client, width=300, height=200)
    broken = (
        "body = util.representation.get_context(model, 'Model', 'Body', 'MODEL_VIEW')\n"
        "w = api.root.create_entity(model, ifc_class='IfcWall', name='broken')\n"
        "solid = model.createIfcExtrudedAreaSolid(None, None, None, 3.0)\n"
        "rep = model.createIfcShapeRepresentation(body, 'Body', 'SweptSolid', [solid])\n"
        "w.Representation = model.createIfcProductDefinitionShape(None, None, [rep])"
    )
    assert not (await run(client, broken)).is_error
    wall_id = int(text(await run(client, "model.by_type('IfcWall')[-1].id()")).split()[-1])
    result = await client.call_tool("view_screenshot", {"width": 300, "height": 200})
    image, note = result.content
    assert note.type == "text" and note.text.startswith("[INCOMPLETE VIEW] Drew 22 of 23 elements")
    assert f"#{wall_id} IfcWall 'broken': Failed to process shape (Body: SweptSolid)" in note.text
    after = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")).astype(np.int16)
    assert np.array_equal(before, after)  # everything else is drawn as before


MAPPED = """
body = util.representation.get_context(model, 'Model', 'Body', 'MODEL_VIEW')
origin = model.createIfcAxis2Placement3D(model.createIfcCartesianPoint((0.0, 0.0, 0.0)), None, None)
broken = model.createIfcExtrudedAreaSolid(None, origin, model.createIfcDirection((0.0, 0.0, 1.0)), 0.7)
solid = model.createIfcShapeRepresentation(body, 'Body', 'SweptSolid', [broken])
shared = model.createIfcRepresentationMap(origin, solid)
zero = model.createIfcCartesianPoint((0.0, 0.0, 0.0))
identity = model.createIfcCartesianTransformationOperator3D(None, None, zero, 1.0, None)
ground = model.by_type('IfcBuildingStorey')[0]
for name in ('Bath 1', 'Bath 2'):
    bath = api.root.create_entity(model, ifc_class='IfcSanitaryTerminal', name=name)
    item = model.createIfcMappedItem(shared, identity)
    mapped = model.createIfcShapeRepresentation(body, 'Body', 'MappedRepresentation', [item])
    bath.Representation = model.createIfcProductDefinitionShape(None, None, [mapped])
    api.spatial.assign_container(model, products=[bath], relating_structure=ground)
"""


async def test_shared_type_shapes_that_fail_are_named_with_their_representation(client) -> None:
    """Like the buildingSMART stirrup sample: a type's mapped shape IfcOpenShell cannot build."""
    before = await shot(client, width=300, height=200)
    assert not (await run(client, MAPPED)).is_error
    result = await client.call_tool("view_screenshot", {"width": 300, "height": 200})
    image, note = result.content
    assert image.type == "image" and note.text.startswith("[INCOMPLETE VIEW] Drew 22 of 24 elements")
    assert "could not build the shape of 2" in note.text
    assert "IfcSanitaryTerminal 'Bath 1'" in note.text and "IfcSanitaryTerminal 'Bath 2'" in note.text
    assert note.text.count("(Body: MappedRepresentation)") == 2
    after = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")).astype(np.int16)
    assert np.array_equal(before, after)  # the house is drawn in full beside the two failures
    plan = await client.call_tool("view_screenshot", {"width": 300, "view": "plan"})
    assert "Bath 1" in plan.content[1].text  # the plan of their storey says so too


FOUNDATION = """
import numpy as np
site = model.by_type("IfcBuilding")[0]
footing = api.root.create_entity(model, ifc_class="IfcBuildingStorey", name="T/FDN")
footing.Elevation = -1.25
api.aggregate.assign_object(model, products=[footing], relating_object=site)
body = util.representation.get_context(model, "Model", "Body", "MODEL_VIEW")
wall = api.root.create_entity(model, ifc_class="IfcFooting", name="Strip footing")
rep = api.geometry.add_wall_representation(model, context=body, length=10.0, height=0.5, thickness=0.6)
api.geometry.assign_representation(model, product=wall, representation=rep)
api.spatial.assign_container(model, products=[wall], relating_structure=footing)
"""


async def test_a_plan_defaults_to_the_ground_floor_not_a_foundation_below_it(client) -> None:
    """Revit's Duplex model has a foundation level T/FDN at -1.25 below Level 1: a plan with no storey
    showed the footings, the lowest storey, and named no other."""
    built = await run(client, FOUNDATION)
    assert not built.is_error, text(built)
    result = await client.call_tool("view_screenshot", {"width": 400, "view": "plan"})
    assert not result.is_error, text(result)
    assert result.structured_content["storey"]["name"] == "Ground Floor"
    said = text(result)
    chosen = "[STOREY] A plan of 'Ground Floor' (elevation 0.0), the ground floor (not the lowest storey)"
    assert chosen in said, said
    assert "'T/FDN' (-1.25)" in said and "'First Floor' (3.0)" in said
    footing = await client.call_tool("view_screenshot", {"width": 400, "view": "plan", "storey": "T/FDN"})
    assert footing.structured_content["storey"]["name"] == "T/FDN" and "[STOREY]" not in text(footing)


async def test_a_marked_element_hidden_behind_others_is_said_to_be(client) -> None:
    """A wall moved 3 m and marked was almost wholly behind the building in the picture, with no note;
    an interior wall marked from outside shows nothing orange at all."""
    inner = (await client.call_tool("execute_python_code", {"code": (
        "[w.id() for w in model.by_type('IfcWall') if w.Name == 'GF-INT-1'][0]"
    )}))  # fmt: skip
    wall = text(inner).split("Result:", 1)[1].strip()
    outside = await client.call_tool("view_screenshot", {"width": 400, "mark": [wall]})
    assert outside.structured_content["markedHidden"] == [wall], outside.structured_content
    assert f"[MARK HIDDEN] #{wall} marked but hidden behind other elements" in text(outside)
    plan = await client.call_tool(
        "view_screenshot", {"width": 400, "view": "plan", "storey": "Ground Floor", "mark": [wall]}
    )
    assert "markedHidden" not in plan.structured_content and "[MARK HIDDEN]" not in text(plan)
    assert plan.structured_content["marked"] == [wall]
