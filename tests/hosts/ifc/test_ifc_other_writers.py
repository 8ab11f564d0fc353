"""Models shaped as other writers make them, read through the host's resources: an IFC4X3 model
(IfcOpenShell names its schema IFC4X3_ADD2, the file says IFC4X3), an IFC2X3 model with standard-case
walls and its quantities in a set named `BaseQuantities` (as ArchiCAD and Revit's IFC2X3 export write),
and spaces placed under their storey by aggregation. Each file is generated here in that shape."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.api
import pytest
from mcp import Client

from cadmcp.hosts.ifc import create_server

pytestmark = pytest.mark.anyio


def _model(schema: str, path: Path, wall_class: str = "IfcWall") -> None:
    f = ifcopenshell.api.run("project.create_file", version=schema)
    if schema == "IFC2X3":  # its objects need an owner history, made from the file's first user
        person = ifcopenshell.api.run("owner.add_person", f)
        organisation = ifcopenshell.api.run("owner.add_organisation", f)
        ifcopenshell.api.run("owner.add_person_and_organisation", f, person=person, organisation=organisation)
        ifcopenshell.api.run("owner.add_application", f)
    project = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcProject", name="Other Writer")
    ifcopenshell.api.run("unit.assign_unit", f)
    context = ifcopenshell.api.run("context.add_context", f, context_type="Model")
    ifcopenshell.api.run(
        "context.add_context", f, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW",
        parent=context,
    )  # fmt: skip
    site = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcSite", name="Site")
    building = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcBuilding", name="Building")
    storey = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcBuildingStorey", name="Level 1")
    ifcopenshell.api.run("aggregate.assign_object", f, products=[site], relating_object=project)
    ifcopenshell.api.run("aggregate.assign_object", f, products=[building], relating_object=site)
    ifcopenshell.api.run("aggregate.assign_object", f, products=[storey], relating_object=building)
    space = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcSpace", name="A102")
    ifcopenshell.api.run("aggregate.assign_object", f, products=[space], relating_object=storey)
    quantities = ifcopenshell.api.run("pset.add_qto", f, product=space, name="BaseQuantities")
    measures = {"NetFloorArea": 21.41, "Height": 2500.0}  # the project is in millimetres
    ifcopenshell.api.run("pset.edit_qto", f, qto=quantities, properties=measures)
    for n in range(3):
        wall = ifcopenshell.api.run("root.create_entity", f, ifc_class=wall_class, name=f"W{n}")
        ifcopenshell.api.run("spatial.assign_container", f, products=[wall], relating_structure=storey)
        common = ifcopenshell.api.run("pset.add_pset", f, product=wall, name="Pset_WallCommon")
        ifcopenshell.api.run("pset.edit_pset", f, pset=common, properties={"IsExternal": n == 0})
    door = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcDoor", name="D1")
    ifcopenshell.api.run("spatial.assign_container", f, products=[door], relating_structure=storey)
    f.write(str(path))


async def _json(client: Client, uri: str) -> Any:
    return json.loads((await client.read_resource(uri)).contents[0].text)


async def _rows(client: Client, schedule: str) -> list[dict[str, str]]:
    text = (await client.read_resource(f"ifc://schedule/{schedule}/preview")).contents[0].text
    return [r for r in csv.DictReader(io.StringIO(text)) if not r["GlobalId"].startswith("#")]


async def test_an_ifc4x3_model_counts_its_elements_and_lists_its_schedules(tmp_path: Path) -> None:
    """The model context said 0 elements and there were no schedules, for any IFC4X3 model."""
    path = tmp_path / "road.ifc"
    _model("IFC4X3", path)
    assert ifcopenshell.open(str(path)).schema_identifier == "IFC4X3_ADD2"
    async with Client(create_server([str(path)], exec_timeout=20).server) as client:
        context = await _json(client, "ifc://model/context")
        assert context["elementCounts"] == {"IfcWall": 3, "IfcDoor": 1, "IfcSpace": 1}, context
        schedules = await _json(client, "ifc://schedules")
        listed = {s["id"]: s["rows"] for s in schedules["schedules"]}
        assert listed == {"IfcWall": 3, "IfcDoor": 1, "IfcSpace": 1}


async def test_an_ifc2x3_model_of_another_writer_fills_its_schedules_and_storeys(tmp_path: Path) -> None:
    """Spaces under their storey by aggregation had no storey in their element view (IFC2X3 has no
    IfcSpatialElement); quantities in `BaseQuantities` left the standard columns empty; a standard-case
    wall's columns named a property set no file has (Pset_WallStandardCaseCommon)."""
    path = tmp_path / "duplex.ifc"
    _model("IFC2X3", path, wall_class="IfcWallStandardCase")
    async with Client(create_server([str(path)], exec_timeout=20).server) as client:
        (space,) = await _rows(client, "IfcSpace")
        assert space["Storey"] == "Level 1"
        assert space["Qto_SpaceBaseQuantities.NetFloorArea"] == "21.41"
        assert space["Qto_SpaceBaseQuantities.Height"] == "2500"
        units = (await _json(client, "ifc://schedules"))["quantityUnits"]  # what the columns are in
        assert units == {"length": "MILLIMETRE", "area": "SQUARE_METRE", "volume": "CUBIC_METRE"}
        walls = await _rows(client, "IfcWallStandardCase")
        assert [w["Pset_WallCommon.IsExternal"] for w in walls] == ["True", "False", "False"]
        space_id = ifcopenshell.open(str(path)).by_type("IfcSpace")[0].id()
        element = await _json(client, f"ifc://element/{space_id}")
        assert element["storey"]["name"] == "Level 1", element


async def test_a_model_changed_and_saved_says_when_and_by_what_it_was_written(tmp_path: Path) -> None:
    """A Revit model edited and saved still said "Autodesk Revit Architecture 2011, 2011-09-07": the
    next tool could not tell it was changed. Saved unchanged, the header stays as it was."""
    path = tmp_path / "duplex.ifc"
    _model("IFC2X3", path, wall_class="IfcWallStandardCase")
    model = ifcopenshell.open(str(path))
    model.header.file_name.time_stamp = "2011-09-07T10:00:00"
    model.header.file_name.preprocessor_version = "Autodesk Revit Architecture 2011"
    model.header.file_name.originating_system = "20110407_1515(x64)"
    model.write(str(path))
    async with Client(create_server([str(path)], exec_timeout=20).server) as client:
        untouched = tmp_path / "untouched.ifc"
        assert not (await client.call_tool("save_document", {"filePath": str(untouched)})).is_error
        edit = "model.by_type('IfcDoor')[0].Name = 'D1 (EI60)'"
        assert not (await client.call_tool("execute_python_code", {"code": edit})).is_error
        changed = tmp_path / "changed.ifc"  # (the model now lives in untouched.ifc)
        assert not (await client.call_tool("save_document", {"filePath": str(changed)})).is_error
    kept = ifcopenshell.open(str(untouched)).header.file_name
    assert kept.time_stamp == "2011-09-07T10:00:00"
    stamped = ifcopenshell.open(str(changed)).header.file_name
    assert not stamped.time_stamp.startswith("2011")
    assert stamped.preprocessor_version.startswith("IfcOpenShell")
    assert stamped.originating_system == "20110407_1515(x64)"  # who made the data stays


async def test_storeys_count_what_their_spaces_hold_and_a_road_lists_its_parts(tmp_path: Path) -> None:
    """Revit's Office_A placed 38 furnishings and terminals in its spaces: the storeys did not count
    them (deleting all furniture left Level 1 at 463), so they did not add up to the model's total;
    KIT's IFC4X3 road listed no storeys and nothing of its road and its parts."""
    path = tmp_path / "office.ifc"
    _model("IFC4", path)
    f = ifcopenshell.open(str(path))
    (space,) = f.by_type("IfcSpace")
    f.by_type("IfcBuildingStorey")[0].Elevation = 3.100000000000378  # as Revit's duplex writes it
    for n in range(2):
        chair = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcFurniture", name=f"Chair {n}")
        ifcopenshell.api.run("spatial.assign_container", f, products=[chair], relating_structure=space)
    f.write(str(path))
    road = tmp_path / "road.ifc"
    _model("IFC4X3", road)
    r = ifcopenshell.open(str(road))
    (site,) = r.by_type("IfcSite")
    facility = ifcopenshell.api.run("root.create_entity", r, ifc_class="IfcRoad", name="Road Network")
    ifcopenshell.api.run("aggregate.assign_object", r, products=[facility], relating_object=site)
    for n in range(2):
        part = ifcopenshell.api.run("root.create_entity", r, ifc_class="IfcRoadPart", name=f"Segment {n}")
        part.PredefinedType = "ROADSEGMENT"
        ifcopenshell.api.run("aggregate.assign_object", r, products=[part], relating_object=facility)
        kerb = ifcopenshell.api.run("root.create_entity", r, ifc_class="IfcKerb", name=f"Kerb {n}")
        ifcopenshell.api.run("spatial.assign_container", r, products=[kerb], relating_structure=part)
    r.write(str(road))
    async with Client(create_server([str(path), str(road)], exec_timeout=20).server) as client:
        await client.call_tool("activate_document", {"document": "office.ifc"})
        context = await _json(client, "ifc://model/context")
        (level,) = context["storeys"]
        # 3 walls, a door, a space and the 2 chairs in it
        assert level["elements"] == context["totalElements"] == 7, context
        assert level["elevation"] == 3.1
        assert "facilities" not in context
        await client.call_tool("activate_document", {"document": "road.ifc"})
        context = await _json(client, "ifc://model/context")
        (network,) = context["facilities"]
        assert (network["name"], network["class"], network["elements"]) == ("Road Network", "IfcRoad", 2)
        assert [(p["name"], p["type"], p["elements"]) for p in network["parts"]] == [
            ("Segment 0", "ROADSEGMENT", 1),
            ("Segment 1", "ROADSEGMENT", 1),
        ]
