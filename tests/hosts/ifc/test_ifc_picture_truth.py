"""An IFC picture is true or says why not (each case a generated model of a shape found in
third-party files): a storey holding only assemblies draws their parts, nested components and
elements in spaces are drawn, a far element is left out of the frame and named, elements in no
storey and above the section plane are named, and no blank is silent."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import ifcopenshell.api
import ifcopenshell.api.nest
import numpy as np
import pytest
from ifc_helpers import text
from mcp import Client
from PIL import Image

from cadmcp.hosts.ifc import create_server
from cadmcp.hosts.ifc.modelgen import _placement, new_project

pytestmark = pytest.mark.anyio
BACKGROUND = np.array([246, 246, 243])


def _box(
    f: Any, body: Any, product: Any, size: tuple[float, float, float], at: tuple[float, float, float]
) -> None:
    """Give ``product`` a box body of ``size`` (metres) with its corner at ``at``."""
    rep = ifcopenshell.api.geometry.add_wall_representation(
        f, context=body, length=size[0], thickness=size[1], height=size[2]
    )
    ifcopenshell.api.geometry.assign_representation(f, product=product, representation=rep)
    ifcopenshell.api.geometry.edit_object_placement(f, product=product, matrix=_placement(*at))


def assemblies_only_storey(path: Path, *, far_element: bool = False, in_no_storey: bool = False) -> None:
    """A storey that directly contains only IfcElementAssembly objects (no geometry of their own):
    frames of columns (aggregated parts) with a beam above the plan's cut, a plate nested in a column
    (IfcRelNests), a member contained in a space of the storey."""
    project = new_project("Frames", storeys=(("Level 0", 0.0),))
    f, body, (storey,) = project.file, project.body, project.storeys
    for i in range(4):
        frame = ifcopenshell.api.root.create_entity(f, ifc_class="IfcElementAssembly", name=f"Frame {i}")
        ifcopenshell.api.spatial.assign_container(f, products=[frame], relating_structure=storey)
        parts = []
        for j, x in enumerate((0.0, 5.7)):
            column = ifcopenshell.api.root.create_entity(f, ifc_class="IfcColumn", name=f"C{i}{j}")
            _box(f, body, column, (0.3, 0.3, 3.0), (x, i * 4.0, 0.0))
            parts.append(column)
        beam = ifcopenshell.api.root.create_entity(f, ifc_class="IfcBeam", name=f"B{i}")
        _box(f, body, beam, (6.0, 0.3, 0.4), (0.0, i * 4.0, 3.0))
        parts.append(beam)
        ifcopenshell.api.aggregate.assign_object(f, products=parts, relating_object=frame)
        plate = ifcopenshell.api.root.create_entity(f, ifc_class="IfcPlate", name=f"Base plate {i}")
        _box(f, body, plate, (0.6, 0.6, 0.05), (-0.15, i * 4.0 - 0.15, 0.0))
        ifcopenshell.api.nest.assign_object(f, related_objects=[plate], relating_object=parts[0])
    space = ifcopenshell.api.root.create_entity(f, ifc_class="IfcSpace", name="Hall")
    ifcopenshell.api.aggregate.assign_object(f, products=[space], relating_object=storey)
    member = ifcopenshell.api.root.create_entity(f, ifc_class="IfcMember", name="Brace in the hall")
    _box(f, body, member, (5.0, 0.2, 0.2), (0.5, 14.0, 0.5))
    ifcopenshell.api.spatial.assign_container(f, products=[member], relating_structure=space)
    if far_element:
        stray = ifcopenshell.api.root.create_entity(
            f, ifc_class="IfcBuildingElementProxy", name="Survey marker"
        )
        _box(f, body, stray, (0.5, 0.5, 0.5), (3_400_000.0, 1_200_000.0, 0.0))
        ifcopenshell.api.spatial.assign_container(f, products=[stray], relating_structure=storey)
    if in_no_storey:
        loose = ifcopenshell.api.root.create_entity(f, ifc_class="IfcWall", name="Loose wall")
        _box(f, body, loose, (3.0, 0.2, 2.5), (0.0, -3.0, 0.0))
    f.write(str(path))


async def shot(client: Client, **args: Any) -> tuple[np.ndarray, str, dict[str, Any]]:
    result = await client.call_tool("view_screenshot", {"width": 480, **args})
    assert not result.is_error, text(result)
    image = result.content[0]
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")).astype(np.int16)
    return pixels, text(result), result.structured_content


def drawn_fraction(pixels: np.ndarray) -> float:
    return float((np.abs(pixels - BACKGROUND).sum(axis=2) > 30).mean())


async def test_a_plan_of_a_storey_with_only_assemblies_draws_their_parts(tmp_path: Path) -> None:
    path = tmp_path / "frames.ifc"
    assemblies_only_storey(path)
    async with Client(create_server([str(path)]).server) as client:
        plan, note, view = await shot(client, view="plan")
        assert drawn_fraction(plan) > 0.01  # columns, base plates and the brace cut by the plan
        assert view["blank"] is False
        assert view["elements"]["drawn"] == 4 * 4 + 1  # 2 columns, beam, plate per frame; the brace
        assert "[ABOVE THE CUT]" in note and "IfcBeam x4" in note  # the beams at 3 m are named
        assert {item["class"] for item in view["aboveCut"]} == {"IfcBeam"}
        storey, _, storey_view = await shot(client, storey="Level 0")
        assert drawn_fraction(storey) > 0.03 and storey_view["elements"]["drawn"] == 17
        assert storey_view["complete"] is True


async def test_a_far_element_is_left_out_of_the_frame_and_named(tmp_path: Path) -> None:
    path = tmp_path / "far.ifc"
    assemblies_only_storey(path, far_element=True)
    async with Client(create_server([str(path)]).server) as client:
        main, note, view = await shot(client)
        assert drawn_fraction(main) > 0.03  # the frames fill the view, not one marker and a dot
        assert "[PARTLY FRAMED]" in note and "Survey marker" in note and "extents='all'" in note
        (far,) = view["outsideFrame"]
        assert far["class"] == "IfcBuildingElementProxy" and far["at"][0] > 3_000_000
        everything, note_all, view_all = await shot(client, extents="all")
        assert view_all["outsideFrame"] == [] and "[PARTLY FRAMED]" not in note_all
        assert drawn_fraction(everything) < drawn_fraction(main)


async def test_elements_in_no_storey_are_named_in_storey_views(tmp_path: Path) -> None:
    path = tmp_path / "loose.ifc"
    assemblies_only_storey(path, in_no_storey=True)
    async with Client(create_server([str(path)]).server) as client:
        _, note, view = await shot(client, storey="Level 0")
        assert "[NOT IN THIS STOREY]" in note and "IfcWall x1" in note and view["inNoStorey"] == 1
        _, note_all, view_all = await shot(client)
        assert view_all["elements"]["drawn"] == 18 and "[NOT IN THIS STOREY]" not in note_all


async def test_a_plan_with_nothing_at_the_cut_shows_the_storey_from_above(tmp_path: Path) -> None:
    project = new_project("Roof only", storeys=(("Roof", 0.0),))
    f, body, (storey,) = project.file, project.body, project.storeys
    for i in range(3):
        beam = ifcopenshell.api.root.create_entity(f, ifc_class="IfcBeam", name=f"Rafter {i}")
        _box(f, body, beam, (6.0, 0.2, 0.3), (0.0, i * 2.0, 2.5))
        ifcopenshell.api.spatial.assign_container(f, products=[beam], relating_structure=storey)
    path = tmp_path / "roof.ifc"
    f.write(str(path))
    async with Client(create_server([str(path)]).server) as client:
        plan, note, view = await shot(client, view="plan")
        assert drawn_fraction(plan) > 0.01 and view["blank"] is False
        assert "[OVERHEAD]" in note and "IfcBeam x3" in note


async def test_a_model_whose_geometry_is_only_in_types_says_so(tmp_path: Path) -> None:
    """Shape of the IFC4.3 texture samples: a representation map on a type, no occurrence of it."""
    project = new_project("Types only")
    f, body = project.file, project.body
    boiler = ifcopenshell.api.root.create_entity(f, ifc_class="IfcBoilerType", name="Boiler")
    rep = ifcopenshell.api.geometry.add_wall_representation(f, context=body, length=1, thickness=1, height=1)
    ifcopenshell.api.geometry.assign_representation(f, product=boiler, representation=rep)
    path = tmp_path / "types.ifc"
    f.write(str(path))
    async with Client(create_server([str(path)]).server) as client:
        _, note, view = await shot(client)
        assert view["blank"] is True and "[BLANK VIEW]" in note
        assert "1 type definitions (IfcBoilerType x1)" in note
