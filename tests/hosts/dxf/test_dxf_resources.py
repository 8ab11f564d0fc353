"""Resources and templates: cheatsheet, version, live context, warnings, schedules, elements."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from dxf_helpers import text_of
from mcp import Client
from mcp.shared.exceptions import MCPError
from tests.hosts.builtins.builtins_helpers import BUILTIN_TOOLS

pytestmark = pytest.mark.anyio


async def read_json(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    return json.loads(result.contents[0].text)


async def test_catalog_lists_every_resource_and_template(client: Client) -> None:
    resources = {str(r.uri) for r in (await client.list_resources()).resources}
    assert {
        "dxf://python-cheatsheet",
        "dxf://version",
        "dxf://model/context",
        "dxf://model/warnings",
        "dxf://schedules",
    } <= resources
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {"dxf://element/{elementId}", "dxf://schedule/{scheduleId}/preview"} <= templates
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == BUILTIN_TOOLS
    assert all(len(tool.description or "") > 40 for tool in tools.values())


async def test_cheatsheet_and_version(client: Client) -> None:
    sheet = (await client.read_resource("dxf://python-cheatsheet")).contents[0].text
    assert "`msp`" in sheet and "navigate_history" in sheet
    version = await read_json(client, "dxf://version")
    assert version["host"] == "DXF" and version["ezdxf"].startswith("1.")


async def test_model_context_reflects_the_last_mutation(client: Client) -> None:
    context = await read_json(client, "dxf://model/context")
    assert context["title"] == "floorplan.dxf" and context["acadver"] == "AC1032"
    assert context["units"] == "Millimeters"
    layers = {layer["name"]: layer for layer in context["layers"]}
    assert layers["A-DOOR"]["entities"] == 4 and layers["G-VPRT"]["on"] is False
    model = next(layout for layout in context["layouts"] if layout["kind"] == "model")
    assert model["by_type"]["INSERT"] == 16 and model["by_type"]["DIMENSION"] == 3
    assert {"DOOR", "WINDOW", "DESK"} <= {block["name"] for block in context["blocks"]}
    assert context["extents"]["max"][0] > 15000
    await client.call_tool(
        "execute_python_code", {"code": "msp.add_line((0, 0), (1, 1), dxfattribs={'layer': 'A-DOOR'})"}
    )
    after = await read_json(client, "dxf://model/context")
    assert {layer["name"]: layer for layer in after["layers"]}["A-DOOR"]["entities"] == 5
    assert after["history"]["undo"] == 1 and after["modified"] is True


async def test_warnings_report_audit_without_changing_the_document(client: Client) -> None:
    warnings = await read_json(client, "dxf://model/warnings")
    assert warnings["current_errors"]["total"] == 0
    # break a reference: an entity on a layer whose linetype does not exist
    await client.call_tool(
        "execute_python_code", {"code": "msp.add_line((0, 0), (1, 1)).dxf.linetype = 'NO_SUCH_LTYPE'"}
    )
    warnings = await read_json(client, "dxf://model/warnings")
    fixable = warnings["current_fixable"]
    assert fixable["total"] >= 1 and fixable["groups"]
    again = await read_json(client, "dxf://model/warnings")
    assert again["current_fixable"]["total"] == fixable["total"]  # the audit's fixes were not kept


async def test_schedules_list_and_door_preview(client: Client) -> None:
    schedules = {s["id"]: s for s in (await read_json(client, "dxf://schedules"))["schedules"]}
    assert schedules["DOOR"]["rows"] == 4 and schedules["WINDOW"]["rows"] == 6 and "layers" in schedules
    assert "DESK" not in schedules  # no attributes
    text = (await client.read_resource("dxf://schedule/DOOR/preview")).contents[0].text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["NUMBER"] for r in rows] == ["D100", "D101", "D102", "D103"]
    assert rows[3]["FIRE_RATING"] == "EI60" and rows[0]["layer"] == "A-DOOR"
    layers = list(
        csv.DictReader(
            io.StringIO((await client.read_resource("dxf://schedule/layers/preview")).contents[0].text)
        )
    )
    assert {"name", "color", "entities"} <= set(layers[0])


async def test_schedule_preview_is_limited_to_30_rows(client: Client) -> None:
    await client.call_tool(
        "execute_python_code",
        {"code": "for i in range(40):\n    msp.add_blockref('DOOR', (i * 2000, -5000)).add_auto_attribs({})"},
    )
    text = (await client.read_resource("dxf://schedule/DOOR/preview")).contents[0].text
    assert len(text.strip().splitlines()) == 31


async def test_unknown_schedule_is_a_clear_error(client: Client) -> None:
    with pytest.raises(MCPError, match="Available schedules"):
        await client.read_resource("dxf://schedule/NOPE/preview")


async def test_element_by_handle(client: Client) -> None:
    handle = (
        text_of(
            await client.call_tool(
                "execute_python_code", {"code": "msp.query('INSERT[name==\"DOOR\"]')[1].dxf.handle"}
            )
        )
        .split("Result: ")[1]
        .strip("'\n")
    )
    element = await read_json(client, f"dxf://element/{handle}")
    assert element["dxftype"] == "INSERT" and element["block"] == "DOOR" and element["layer"] == "A-DOOR"
    assert element["block_attributes"]["NUMBER"] == "D101"
    assert element["bbox"]["min"][0] < element["bbox"]["max"][0]
    assert element["attributes"]["insert"] == [3000.0, 6000.0, 0.0]


async def test_element_for_non_graphical_object_and_unknown_handle(client: Client) -> None:
    layer_handle = (
        text_of(
            await client.call_tool("execute_python_code", {"code": "doc.layers.get('A-WALL').dxf.handle"})
        )
        .split("Result: ")[1]
        .strip("'\n")
    )
    layer = await read_json(client, f"dxf://element/{layer_handle}")
    assert layer["dxftype"] == "LAYER" and layer["attributes"]["name"] == "A-WALL"
    with pytest.raises(MCPError, match="No entity has handle"):
        await client.read_resource("dxf://element/FFFFFF")


async def test_layers_the_table_lacks_are_listed_with_their_entities(tmp_path: Path) -> None:
    """ezdxf's own mtext_columns drawing has its three MTEXT on layers DYNAMIC and STATIC, which its
    layer table lacks: the context listed only 0 and Defpoints, with 0 entities each, and the
    warnings said nothing. Made here in the same shape: entities written on layers never added."""
    import ezdxf

    from cadmcp.hosts.dxf import create_server

    path = tmp_path / "columns.dxf"
    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    msp.add_mtext("a", dxfattribs={"layer": "DYNAMIC"})
    msp.add_mtext("b", dxfattribs={"layer": "STATIC"})
    msp.add_mtext("c", dxfattribs={"layer": "static"})  # DXF layer names ignore case
    for name in ("DYNAMIC", "STATIC"):
        doc.layers.remove(name) if name in doc.layers else None
    doc.saveas(path)
    assert "STATIC" not in ezdxf.readfile(path).layers
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        context = await read_json(client, "dxf://model/context")
        missing = {layer["name"]: layer for layer in context["layers"] if layer.get("inTable") is False}
        assert missing == {
            "DYNAMIC": {"name": "DYNAMIC", "inTable": False, "entities": 1},
            "STATIC": {"name": "STATIC", "inTable": False, "entities": 2},
        }
        warnings = await read_json(client, "dxf://model/warnings")
        assert warnings["undefined_layers"]["layers"] == {"DYNAMIC": 1, "STATIC": 2}
        await client.call_tool("execute_python_code", {"code": "doc.layers.add('Dynamic')"})
        after = await read_json(client, "dxf://model/context")
        layers = {layer["name"]: layer for layer in after["layers"]}
        assert layers["Dynamic"]["entities"] == 1 and "DYNAMIC" not in layers  # the table's spelling


async def test_a_multi_insert_counts_the_copies_it_places(tmp_path: Path) -> None:
    """ezdxf's multi_insert_with_attribs drawing places 25 flags with one MINSERT (5 x 5): its
    schedule said "1 references" and one row, while the picture shows 25."""
    import ezdxf

    from cadmcp.hosts.dxf import create_server

    path = tmp_path / "flags.dxf"
    doc = ezdxf.new("R2018")
    flag = doc.blocks.new("FLAG")
    flag.add_line((0, 0), (0, 2))
    flag.add_attdef("NAME", (0, 2))
    msp = doc.modelspace()
    grid = msp.add_blockref("FLAG", (0, 0))
    grid.add_attrib("NAME", "grid", (0, 2))
    grid.grid(size=(5, 5), spacing=(3, 3))
    single = msp.add_blockref("FLAG", (50, 0))
    single.add_attrib("NAME", "alone", (50, 2))
    doc.saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        listed = {s["id"]: s for s in (await read_json(client, "dxf://schedules"))["schedules"]}
        assert listed["FLAG"]["title"] == "FLAG schedule (2 references, 26 copies placed)"
        text = (await client.read_resource("dxf://schedule/FLAG/preview")).contents[0].text
        rows = list(csv.DictReader(io.StringIO(text)))
        assert sorted((r["NAME"], r["copies"]) for r in rows) == [("alone", "1"), ("grid", "25")]


async def test_a_dynamic_blocks_references_are_one_schedule_under_its_name(tmp_path: Path) -> None:
    """gdsestimating's cw750 details: dxf://schedules listed *U33, *U34, *U35, *U36 and *U41, all
    of them "Section Callout" (12 references), and no "Section Callout" schedule; the context said
    nothing of how often the block is placed. Each state of a dynamic block is an anonymous block
    whose record names the dynamic block."""
    import ezdxf

    from cadmcp.hosts.dxf import create_server

    path = tmp_path / "callouts.dxf"
    doc = ezdxf.new("R2018")
    for app in ("AcDbDynamicBlockGUID", "AcDbBlockRepBTag"):
        doc.appids.add(app)
    dynamic = doc.blocks.new("Section Callout")
    dynamic.add_circle((0, 0), 5)
    dynamic.add_attdef("SHEETNO", (0, 0))
    dynamic.block_record.set_xdata("AcDbDynamicBlockGUID", [(1000, "{8E0F1D12-AB12-4C3A-9D7E-0A1B2C3D4E5F}")])
    msp = doc.modelspace()
    for n, sheet in enumerate(("A3", "A4")):
        state = doc.blocks.new_anonymous_block("U")
        state.add_circle((0, 0), 5 + n)
        state.add_attdef("SHEETNO", (0, 0))
        state.block_record.set_xdata("AcDbBlockRepBTag", [(1070, 1), (1005, dynamic.block_record.dxf.handle)])
        msp.add_blockref(state.name, (n * 20, 0)).add_auto_attribs({"SHEETNO": sheet})
    msp.add_blockref("Section Callout", (60, 0)).add_auto_attribs({"SHEETNO": "A5"})
    doc.saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        listed = {s["id"]: s for s in (await read_json(client, "dxf://schedules"))["schedules"]}
        assert not [name for name in listed if name.startswith("*")], listed
        callouts = listed["Section Callout"]
        assert callouts["rows"] == 3 and "block" in callouts["columns"], callouts
        context = await read_json(client, "dxf://model/context")
        (block,) = [b for b in context["blocks"] if b["name"] == "Section Callout"]
        assert block["references"] == 3
        recipe = (
            "from ezdxf import dynblkhelper\n"
            "len([r for r in msp.query('INSERT') if (b := dynblkhelper.get_dynamic_block_definition(r)) "
            "is not None and b.name == 'Section Callout'])"
        )
        counted = await client.call_tool("execute_python_code", {"code": recipe})
        assert "Result: 3" in text_of(counted), text_of(counted)


async def test_an_r12_drawing_says_its_units_are_not_in_the_file(tmp_path: Path) -> None:
    """LibreDWG's example_r12.dxf: the context said units 'Unitless' and measurement 'metric',
    which the file does not say (R12 has neither variable; read_file_info said null)."""
    import ezdxf

    from cadmcp.hosts.dxf import create_server

    path = tmp_path / "r12.dxf"
    ezdxf.new("R12").saveas(path)
    assert "$INSUNITS" not in ezdxf.readfile(path).header
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        context = await read_json(client, "dxf://model/context")
        assert context["units"] is None and context["measurement"] is None, context
