"""execute_python_code: output and values, error classes, rollback, timeout, undo steps."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from ifc_helpers import ADD_WALL, counts, run, text
from PIL import Image

pytestmark = pytest.mark.anyio


async def test_output_and_final_expression_come_back(client) -> None:
    result = await run(client, "print('walls:', len(model.by_type('IfcWall')))\nmodel.schema")
    assert not result.is_error
    assert "walls: 10" in text(result)
    assert "Result: 'IFC4'" in text(result)


async def test_namespace_has_model_api_util_element(client) -> None:
    code = (
        "door = model.by_type('IfcDoor')[0]\n"
        "(element.get_psets(door)['Pset_DoorCommon']['FireRating'], api.run, util.unit)"
    )
    result = await run(client, code)
    assert not result.is_error, text(result)
    assert "EI30" in text(result)


async def test_syntax_error_runs_nothing(client) -> None:
    result = await run(client, "model.by_type('IfcWall'")
    assert result.is_error
    assert text(result).startswith("[SYNTAX ERROR]")


async def test_raising_script_is_rolled_back(client) -> None:
    before = await counts(client)
    result = await run(client, ADD_WALL + "\nraise ValueError('changed my mind')")
    assert result.is_error
    body = text(result)
    assert body.startswith("[RUNTIME ERROR]")
    assert "changed my mind" in body and "[ROLLBACK]" in body
    assert "cadmcp" not in body.split("changed my mind")[0].split("Traceback")[-1]  # trimmed to user code
    assert await counts(client) == before
    history = await client.call_tool("navigate_history", {"direction": "back"})
    assert history.structured_content["navigated"] == 0


async def test_runaway_script_times_out_and_rolls_back(server, client) -> None:
    server.adapter.exec_timeout = 1.0
    before = await counts(client)
    result = await run(client, ADD_WALL + "\nwhile True:\n    pass")
    assert result.is_error
    assert "[TIMEOUT]" in text(result) and "[ROLLBACK]" in text(result)
    assert await counts(client) == before


async def test_mutation_is_one_named_step_and_counts_follow_undo_redo(client) -> None:
    before = await counts(client)
    result = await run(client, ADD_WALL, description="Add a wall north of the house")
    assert not result.is_error, text(result)
    assert "Add a wall north of the house" in text(result)
    assert (await counts(client))["IfcWall"] == before["IfcWall"] + 1

    back = await client.call_tool("navigate_history", {"direction": "back"})
    assert back.structured_content["operations"] == ["Add a wall north of the house"]
    assert await counts(client) == before

    forward = await client.call_tool("navigate_history", {"direction": "forward"})
    assert forward.structured_content["navigated"] == 1
    assert (await counts(client))["IfcWall"] == before["IfcWall"] + 1


async def test_default_step_name_is_first_line(client) -> None:
    await run(client, "# rename the first wall\nmodel.by_type('IfcWall')[0].Name = 'Renamed'")
    back = await client.call_tool("navigate_history", {"direction": "back"})
    assert back.structured_content["operations"] == ["rename the first wall"]


async def test_read_only_script_records_no_step_and_keeps_redo(client) -> None:
    await run(client, "model.by_type('IfcWall')[0].Name = 'A'", description="rename")
    await client.call_tool("navigate_history", {"direction": "back"})
    result = await run(client, "len(model.by_type('IfcDoor'))")
    assert "[UNDO STEP]" not in text(result)
    forward = await client.call_tool("navigate_history", {"direction": "forward"})
    assert forward.structured_content["operations"] == ["rename"]


async def test_cheatsheet_recipe_adds_a_wall(client) -> None:
    sheet = (await client.read_resource("ifc://python-cheatsheet")).contents[0].text
    recipe = sheet.split("# Add a 5 m wall on a storey")[1].split("\n", 1)[1].split("```")[0]
    result = await run(client, recipe)
    assert not result.is_error, text(result)
    assert (await counts(client))["IfcWall"] == 11


async def test_history_tampered_by_a_script_is_reported_not_crashed(client) -> None:
    await run(client, "model.by_type('IfcWall')[0].Name = 'A'", description="rename")
    await run(client, "model.undo()")  # against the cheatsheet's advice: recorded as its own step
    first = await client.call_tool("navigate_history", {"direction": "back"})
    assert not first.is_error
    result = await client.call_tool("navigate_history", {"direction": "back"})
    assert result.is_error
    assert "rename" in text(result) and "history no longer matches" in text(result)


async def test_a_steps_checkpoint_names_the_products_it_created_and_edited_and_a_view_marks_them(
    client,
) -> None:
    code = (
        "wall = model.by_type('IfcWall')[0]\n"
        "wall.Name = 'Renamed'\n"
        "new = api.root.create_entity(model, ifc_class='IfcWall', name='New')\n"
        "model.createIfcCartesianPoint((1.0, 2.0, 3.0))\n"  # no product: not named
        "(new.id(), wall.id())"
    )
    result = await run(client, code)
    assert not result.is_error, text(result)
    created, modified = (int(v) for v in text(result).split("Result: (", 1)[1].split(")", 1)[0].split(", "))
    touched = result.meta["io.cadmcp/checkpoint"]["touched"]
    assert touched == {
        "created": {"count": 1, "ids": [str(created)]},
        "modified": {"count": 1, "ids": [str(modified)]},
        "deleted": {"count": 0, "ids": []},
    }
    plain = await client.call_tool("view_screenshot", {"width": 300, "complete": True})
    shot = await client.call_tool(
        "view_screenshot", {"width": 300, "complete": True, "mark": [f"#{modified}", str(created), "x"]}
    )
    assert shot.structured_content["marked"] == [str(modified)]  # the new wall has no body to draw
    said = " ".join(c.text for c in shot.content if c.type == "text")
    assert f"[NOT MARKED] no element of the model has the id x; #{created} are not drawn" in said, said
    assert "marked" not in plain.structured_content
    # the wall is drawn in the marks' orange (shaded like any face): what changed turned orange
    before, after = _pixels(plain), _pixels(shot)
    changed = (before != after).any(axis=2)
    r, g, b = np.median(after[changed], axis=0)
    assert changed.sum() > 1000 and b < 0.2 * r and 0.25 * r < g < 0.6 * r, (changed.sum(), r, g, b)


def _pixels(result) -> np.ndarray:
    data = next(c for c in result.content if c.type == "image").data
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")).astype(int)
