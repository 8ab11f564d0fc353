"""The sample toolsets in samples/toolsets run against the real DXF and IFC documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "toolsets"
CONFIRM = {"confirm": {"action": "accept", "content": {"confirm": True}}}


async def run_confirmed(session: Any, tool: str, args: dict[str, Any]) -> Any:
    first = await session.call_tool(tool, args, allow_input_required=True)
    assert first.result_type == "input_required", first
    assert "confirm" in first.input_requests
    return await session.call_tool(
        tool, args, input_responses=CONFIRM, request_state=first.request_state, allow_input_required=True
    )


async def test_ifc_sample_counts_lists_removes_with_dry_run_and_confirms_deletes(
    inproc_host: Any, tmp_path: Path
) -> None:
    from cadmcp.hosts.ifc import create_server
    from cadmcp.hosts.ifc.modelgen import build_house

    model = tmp_path / "house.ifc"
    build_house().write(str(model))
    builtins = create_server([str(model)])
    host = inproc_host(
        [SAMPLES / "ifc"], builtins=builtins.server, application=builtins.adapter, host_app="IFC"
    )
    assert [e for ts in host.manager.state() for m in ts["modules"] if (e := m.get("error"))] == []
    async with host.client() as session:
        counted = await session.call_tool("count_elements", {"ifcClass": "IfcDoor"})
        doors = counted.structured_content
        assert doors["ifcClass"] == "IfcDoor" and doors["count"] == sum(doors["byStorey"].values()) > 0
        read = await session.read_resource("ifc-sample://storey/Ground%20Floor")
        storey = json.loads(read.contents[0].text)
        assert storey["count"] > 0 and {"IfcWall", "IfcDoor"} <= {e["class"] for e in storey["elements"]}

        dry = await session.call_tool("remove_elements_by_class", {"ifcClass": "IfcDoor"})
        assert dry.structured_content["dryRun"] is True and dry.structured_content["count"] == doors["count"]
        again = await session.call_tool("count_elements", {"ifcClass": "IfcDoor"})
        assert again.structured_content["count"] == doors["count"]  # nothing removed by a dry run
        real = await session.call_tool("remove_elements_by_class", {"ifcClass": "IfcDoor", "dryRun": False})
        assert real.structured_content["count"] == doors["count"]
        gone = await session.call_tool("count_elements", {"ifcClass": "IfcDoor"})
        assert gone.structured_content["count"] == 0
        undo = await session.call_tool("navigate_history", {"direction": "back"})
        assert not undo.is_error
        back = await session.call_tool("count_elements", {"ifcClass": "IfcDoor"})
        assert back.structured_content["count"] == doors["count"]

        walls = builtins.adapter.workspace.require_active().file.by_type("IfcWall")
        done = await run_confirmed(session, "delete_element", {"globalId": walls[0].GlobalId})
        assert done.structured_content == {"globalId": walls[0].GlobalId, "deleted": True}
        after = await session.call_tool("count_elements", {"ifcClass": "IfcWall"})
        assert after.structured_content["count"] == len(walls) - 1
        bad = await session.call_tool("count_elements", {"ifcClass": "IfcNotAThing"})
        assert bad.is_error and "not an IFC class" in bad.content[0].text


async def test_dxf_sample_summarises_purges_with_dry_run_and_confirms_layer_delete(
    inproc_host: Any,
) -> None:
    from cadmcp.hosts.dxf.documents import DocumentSet

    documents = DocumentSet()
    entry = documents.new()
    entry.doc.layers.add("WALLS")
    entry.doc.layers.add("NOTES")
    msp = entry.doc.modelspace()
    for i in range(3):
        msp.add_line((0, i), (10, i), dxfattribs={"layer": "WALLS"})
    msp.add_circle((5, 5), 1, dxfattribs={"layer": "WALLS"})
    msp.add_text("note", dxfattribs={"layer": "NOTES"})
    # the DXF host's application object is its DocumentSet (the surface's application)
    host = inproc_host([SAMPLES / "dxf"], application=documents, host_app="DXF")
    assert [e for ts in host.manager.state() for m in ts["modules"] if (e := m.get("error"))] == []
    async with host.client() as session:
        summary = (await session.call_tool("layer_summary", {})).structured_content
        layers = {row["name"]: row["entities"] for row in summary["layers"]}
        assert layers["WALLS"] == 4 and layers["NOTES"] == 1 and "0" in summary["emptyLayers"]
        walls = json.loads((await session.read_resource("dxf-sample://layer/WALLS")).contents[0].text)
        assert walls["byType"] == {"LINE": 3, "CIRCLE": 1}

        args = {"layer": "WALLS", "entityType": "line"}
        dry = (await session.call_tool("purge_layer_entities", args)).structured_content
        assert dry["dryRun"] is True and dry["count"] == 3
        assert len(msp.query('LINE[layer=="WALLS"]')) == 3
        real = (await session.call_tool("purge_layer_entities", {**args, "dryRun": False})).structured_content
        assert real["count"] == 3 and len(msp.query('LINE[layer=="WALLS"]')) == 0
        assert entry.history.undo_names() == ["Purge 3 entities on WALLS"]
        entry.history.navigate("back")
        assert len(msp.query('LINE[layer=="WALLS"]')) == 3  # the purge was one undoable step

        done = await run_confirmed(session, "delete_layer", {"layer": "NOTES"})
        assert done.structured_content == {"layer": "NOTES", "deleted": True, "entities": 1}
        assert "NOTES" not in entry.doc.layers
        refused = await session.call_tool("delete_layer", {"layer": "0"}, allow_input_required=True)
        assert refused.is_error and "cannot be deleted" in refused.content[0].text
