"""Model context, element data, schedules and validation warnings read as MCP resources."""

from __future__ import annotations

import csv
import io

import pytest
from ifc_helpers import ADD_WALL, read_json, run
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio


async def preview(client, schedule_id: str) -> str:  # type: ignore[no-untyped-def]
    return (await client.read_resource(f"ifc://schedule/{schedule_id}/preview")).contents[0].text


async def test_model_context_describes_the_live_model(client) -> None:
    context = await read_json(client, "ifc://model/context")
    assert context["title"] == "house.ifc" and context["schema"] == "IFC4"
    assert context["project"] == "Sample House" and context["units"] == {"length": "METRE"}
    assert [(s["name"], s["elevation"]) for s in context["storeys"]] == [
        ("Ground Floor", 0.0),
        ("First Floor", 3.0),
    ]
    assert context["elementCounts"] == {
        "IfcWall": 10,
        "IfcWindow": 6,
        "IfcSpace": 4,
        "IfcDoor": 3,
        "IfcSlab": 3,
    }
    assert "IfcOpeningElement" not in context["elementCounts"]
    assert context["history"]["undoSteps"] == 0

    await run(client, ADD_WALL, description="add wall")
    context = await read_json(client, "ifc://model/context")
    assert context["elementCounts"]["IfcWall"] == 11
    assert context["storeys"][0]["elements"] == 14  # 12 contained and its 2 spaces
    assert sum(s["elements"] for s in context["storeys"]) == sum(context["elementCounts"].values())
    assert context["history"] == {"undoSteps": 1, "redoSteps": 0, "lastSteps": ["add wall"]}
    assert context["modified"] is True


async def test_element_by_step_id_and_global_id(client) -> None:
    door_id = int((await run(client, "model.by_type('IfcDoor')[0].id()")).content[0].text.split()[-1])
    by_id = await read_json(client, f"ifc://element/{door_id}")
    assert by_id["class"] == "IfcDoor" and by_id["Name"] == "GF-D-1"
    assert by_id["storey"]["name"] == "Ground Floor"
    assert by_id["type"]["name"] == "D-900 Single Swing"
    assert by_id["psets"]["Pset_DoorCommon"]["FireRating"] == "EI30"
    assert by_id["qtos"]["Qto_DoorBaseQuantities"]["Width"] == pytest.approx(0.9)
    assert by_id["attributes"]["OverallWidth"] == pytest.approx(0.9)
    bbox = by_id["boundingBox"]
    assert bbox["min"][2] == pytest.approx(0.0, abs=0.01) and bbox["max"][2] == pytest.approx(2.1, abs=0.05)

    by_guid = await read_json(client, f"ifc://element/{by_id['GlobalId']}")
    assert by_guid["id"] == door_id
    hashed = await read_json(client, f"ifc://element/%23{door_id}")
    assert hashed["id"] == door_id


@pytest.mark.parametrize("element_id", ["999999", "0000000000000000000000", "not-an-id"])
async def test_unknown_element_is_a_clear_error(client, element_id: str) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(f"ifc://element/{element_id}")
    assert "step id" in str(caught.value) and "GlobalId" in str(caught.value)


async def test_element_bounding_box_follows_edits(client) -> None:
    wall_id = int((await run(client, "model.by_type('IfcWall')[0].id()")).content[0].text.split()[-1])
    before = (await read_json(client, f"ifc://element/{wall_id}"))["boundingBox"]
    move = (
        f"w = model.by_id({wall_id})\nm = util.placement.get_local_placement(w.ObjectPlacement)\n"
        "m[2, 3] += 5.0\napi.geometry.edit_object_placement(model, product=w, matrix=m)"
    )
    assert not (await run(client, move)).is_error
    after = (await read_json(client, f"ifc://element/{wall_id}"))["boundingBox"]
    assert after["min"][2] == pytest.approx(before["min"][2] + 5.0, abs=1e-3)
    await client.call_tool("navigate_history", {"direction": "back"})
    undone = (await read_json(client, f"ifc://element/{wall_id}"))["boundingBox"]
    assert undone == before


async def test_schedules_list_every_element_class(client) -> None:
    schedules = (await read_json(client, "ifc://schedules"))["schedules"]
    assert {s["id"]: s["rows"] for s in schedules} == {
        "IfcWall": 10,
        "IfcWindow": 6,
        "IfcSpace": 4,
        "IfcDoor": 3,
        "IfcSlab": 3,
    }
    assert all(s["uri"] == f"ifc://schedule/{s['id']}/preview" for s in schedules)


async def test_door_schedule_preview_is_csv_with_key_properties(client) -> None:
    body = await preview(client, "IfcDoor")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == 3
    assert {"GlobalId", "Name", "Storey", "Type", "Pset_DoorCommon.FireRating", "OverallWidth"} <= set(
        rows[0]
    )
    assert [(r["Name"], r["Storey"], r["Pset_DoorCommon.FireRating"]) for r in rows] == [
        ("GF-D-1", "Ground Floor", "EI30"),
        ("GF-D-2", "Ground Floor", "EI60"),
        ("FF-D-2", "First Floor", "EI30"),
    ]
    walls = list(csv.DictReader(io.StringIO(await preview(client, "ifcwall"))))
    assert len(walls) == 10 and walls[0]["Qto_WallBaseQuantities.Length"] == "10"
    spaces = list(csv.DictReader(io.StringIO(await preview(client, "IfcSpace"))))
    assert {r["LongName"] for r in spaces} == {"Living", "Kitchen"}


async def test_unknown_schedule_lists_the_available_ones(client) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource("ifc://schedule/IfcBeam/preview")
    assert "IfcDoor" in str(caught.value)


async def test_warnings_follow_the_model(client) -> None:
    clean = await read_json(client, "ifc://model/warnings")
    assert clean["total"] == 0 and clean["issues"] == []
    await run(client, "model.create_entity('IfcWall')", description="add a broken wall")
    broken = await read_json(client, "ifc://model/warnings")
    assert broken["total"] >= 1
    assert any(i.get("attribute") == "IfcWall.GlobalId" for i in broken["issues"])
    await client.call_tool("navigate_history", {"direction": "back"})
    assert (await read_json(client, "ifc://model/warnings"))["total"] == 0


async def test_global_ids_with_dollar_signs_resolve(client) -> None:
    context = await read_json(client, "ifc://model/context")
    guid = next(s["globalId"] for s in context["storeys"] if "$" in s["globalId"])
    storey = await read_json(client, f"ifc://element/{guid}")
    assert storey["class"] == "IfcBuildingStorey" and storey["GlobalId"] == guid
    assert "boundingBox" not in storey
