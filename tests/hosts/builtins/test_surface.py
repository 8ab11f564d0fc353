"""One built-in surface for every document host: the same tools, words, limits, envelopes and
semantics on DXF, IFC and a fourth application written as one adapter."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builtins_helpers import BUILTIN_TOOLS, SAMPLES, notes_server
from mcp import Client
from mcp.shared.exceptions import MCPError

from cadmcp.host.builtins import HistoryStack, HostError, navigate
from cadmcp.host.builtins.keywords import RESOURCE_KEYWORDS, TOOL_KEYWORDS
from cadmcp.host.builtins.scripts import step_name
from cadmcp.host.history import History, Step
from cadmcp.hosts import dxf, ifc
from cadmcp.wire.meta import FALLBACK, KEYWORDS

pytestmark = pytest.mark.anyio


def servers() -> dict[str, Callable[[], Any]]:
    return {
        "DXF": lambda: dxf.create_server([str(SAMPLES / "floorplan.dxf")], exec_timeout=10),
        "IFC": lambda: ifc.create_server([str(SAMPLES / "house.ifc")], exec_timeout=10),
        "Notes": notes_server,
    }


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def catalog(make: Callable[[], Any]) -> tuple[dict[str, Any], set[str], set[str]]:
    async with Client(make().server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    return tools, resources, templates


async def test_every_host_serves_the_same_tools_resources_and_schemas() -> None:
    shapes: dict[str, Any] = {}
    for app, make in servers().items():
        tools, resources, templates = await catalog(make)
        scheme = app.lower()
        assert set(tools) == BUILTIN_TOOLS, app
        assert resources == {
            f"{scheme}://{name}"
            for name in (
                "python-cheatsheet",
                "version",
                "model/context",
                "model/warnings",
                "model/history",
                "schedules",
            )
        }
        assert templates == {
            f"{scheme}://element/{{elementId}}",
            f"{scheme}://schedule/{{scheduleId}}/preview",
        }
        for tool in tools.values():
            for name, schema in tool.input_schema.get("properties", {}).items():
                assert len(schema.get("description", "")) > 15, f"{app} {tool.name}.{name} is not described"
        assert tools["execute_python_code"].meta["io.cadmcp/fallback"] == ["change", "query"]
        width = tools["view_screenshot"].input_schema["properties"]["width"]
        assert (width["minimum"], width["maximum"], width["default"]) == (64, 4096, 1280)
        description = tools["execute_python_code"].description
        assert "fresh namespace: variables do not carry over between calls" in description
        assert "save as" in tools["save_document"].description and "savedAs" in json.dumps(
            tools["save_document"].output_schema
        )
        assert "Already open" in tools["open_document"].description
        if app == "DXF":  # the application's own sentence is appended, not its placeholder
            assert tools["open_document"].description.endswith("dxf://model/warnings lists what was fixed.")
        shapes[app] = {
            name: (
                tool.annotations.model_dump() if tool.annotations else None,
                _wordless(tool.input_schema.get("properties", {})),
                tool.output_schema,
            )
            for name, tool in tools.items()
        }
    # everything but the application's own words is identical across applications
    first = next(iter(shapes.values()))
    for app, shape in shapes.items():
        for name in BUILTIN_TOOLS:
            assert shape[name][0] == first[name][0], f"{app} {name} annotations differ"
            assert shape[name][2] == first[name][2], f"{app} {name} result shape differs"
            if name == "view_screenshot":  # the size is common; each application adds its own views
                common = {k: shape[name][1].get(k) for k in ("width", "height")}
                assert common == {k: first[name][1].get(k) for k in ("width", "height")}, app
                assert None not in common.values(), f"{app} {name} lacks width or height"
            elif name == "execute_python_code":  # an adapter with an inventory adds the preview's two
                preview = {"dryRun", "previewed"}
                assert preview <= set(shape[name][1]) or app == "Notes", f"{app} cannot preview"
                own = {k: v for k, v in shape[name][1].items() if k not in preview}
                assert own == {k: v for k, v in first[name][1].items() if k not in preview}, app
            else:
                assert shape[name][1] == first[name][1], f"{app} {name} parameters differ"


def _wordless(schema: Any) -> Any:
    """A schema without its prose (descriptions and examples name the application)."""
    if isinstance(schema, dict):
        return {k: _wordless(v) for k, v in schema.items() if k not in ("description", "examples")}
    if isinstance(schema, list):
        return [_wordless(v) for v in schema]
    return schema


@pytest.mark.parametrize("app", ["DXF", "IFC", "Notes"])
async def test_limits_words_and_namespace_rules_are_the_same(app: str, tmp_path: Path) -> None:
    async with Client(servers()[app]().server) as client:
        small = await client.call_tool("view_screenshot", {"width": 63})
        assert small.is_error and "width must be between 64 and 4096 pixels" in text_of(small)
        assert not (await client.call_tool("execute_python_code", {"code": "kept = 41"})).is_error
        later = await client.call_tool("execute_python_code", {"code": "kept + 1"})
        assert later.is_error and "NameError" in text_of(later)
        active = (await client.call_tool("list_documents", {})).structured_content["active"]
        path = (await client.call_tool("list_documents", {})).structured_content["documents"][0]["path"]
        if path is not None:
            again = await client.call_tool("open_document", {"filePath": path})
            assert again.structured_content["message"].startswith(f"Already open: {active} is the active")
        suffix = {"DXF": ".dxf", "IFC": ".ifc", "Notes": ".json"}[app]
        target = tmp_path / f"copy{suffix}"
        saved = (await client.call_tool("save_document", {"filePath": str(target)})).structured_content
        assert saved["savedAs"] is True and saved["message"].startswith(f"Saved as {target}")
        assert (await client.call_tool("list_documents", {})).structured_content["active"] == f"copy{suffix}"
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"{app.lower()}://element/no-such-element-42")
        assert missing.value.error.code == -32602  # not found: the same envelope everywhere


CHANGE = {
    "DXF": "msp.add_line((0, 0), (5, 5))",
    "IFC": "model.create_entity('IfcBuildingElementProxy', GlobalId=ifcopenshell.guid.new(), Name='Box')",
    "Notes": "notes['added'] = 'by the agent'",
}


@pytest.mark.parametrize("app", ["DXF", "IFC", "Notes"])
async def test_close_document_keeps_unsaved_work_unless_told_to_drop_it(app: str, tmp_path: Path) -> None:
    suffix = {"DXF": ".dxf", "IFC": ".ifc", "Notes": ".json"}[app]
    first, second = tmp_path / f"first{suffix}", tmp_path / f"second{suffix}"
    async with Client(servers()[app]().server) as client:

        async def titles() -> list[str]:
            listed = (await client.call_tool("list_documents", {})).structured_content
            return [d["title"] for d in listed["documents"]]

        for target in (first, second):  # two documents with files, the second one active
            assert not (await client.call_tool("save_document", {"filePath": str(target)})).is_error
        await client.call_tool("open_document", {"filePath": str(first)})
        assert set(await titles()) >= {first.name, second.name}
        assert not (await client.call_tool("execute_python_code", {"code": CHANGE[app]})).is_error

        refused = await client.call_tool("close_document", {})
        assert refused.is_error
        assert "unsaved changes" in text_of(refused) and "discard=true" in text_of(refused)
        assert first.name in await titles()  # still open, its change kept

        dropped = (await client.call_tool("close_document", {"discard": True})).structured_content
        assert dropped["documentTitle"] == first.name and dropped["discarded"] is True
        assert "without saving" in dropped["message"]
        assert first.name not in await titles()
        assert dropped["active"] == second.name  # the latest of those left

        reopened = (await client.call_tool("open_document", {"filePath": str(first)})).structured_content
        assert not reopened["message"].startswith("Already open")  # read again from its file: no change
        back = (await client.call_tool("navigate_history", {"direction": "back"})).structured_content
        assert back["navigated"] == 0  # a fresh history

        closed = (await client.call_tool("close_document", {"document": second.name})).structured_content
        assert closed["discarded"] is False and closed["active"] == first.name  # the active one stays
        unknown = await client.call_tool("close_document", {"document": "nope" + suffix})
        assert unknown.is_error and first.name in text_of(unknown)


def test_step_names_follow_one_rule() -> None:
    assert step_name("x = 1", "  Add grid\nlines ") == "Add grid lines"
    assert step_name("# rename the walls\nfor w in walls: ...") == "rename the walls"
    assert step_name('# /// script\n# dependencies = ["six"]\n# ///\nimport six') == "import six"
    assert (
        step_name("#!/usr/bin/env python\n\nmsp.add_line((0, 0), (1, 1))") == "msp.add_line((0, 0), (1, 1))"
    )
    assert step_name("") == "Python code"
    assert len(step_name("x" * 500)) == 80


def test_navigation_over_any_undo_stack() -> None:
    history, log = History(), []
    for name in ("a", "b", "c"):
        history.record(
            Step(name, lambda n=name: log.append(f"undo {n}"), lambda n=name: log.append(f"redo {n}"))
        )
    moved: list[int] = []
    stack = HistoryStack(history, lambda: moved.append(1))
    back = navigate(stack, "back", 5)
    assert back["operations"] == ["c", "b", "a"] and back["back_remaining"] == 0 and len(moved) == 3
    assert navigate(stack, "back", 1)["message"].startswith("Nothing to undo")
    assert navigate(stack, "forward", 2)["operations"] == ["a", "b"]
    for direction, steps in (("sideways", 1), ("back", 0), ("back", True), ("back", "2")):
        with pytest.raises(HostError):
            navigate(stack, direction, steps)  # type: ignore[arg-type]


async def test_host_state_and_search_vocabulary_ride_on_tools_list(served: Any, tmp_path: Path) -> None:
    book = tmp_path / "ideas.json"
    book.write_text(json.dumps({"notes": {"Groceries": "milk"}}))
    async with served(notes_server()) as session:
        first = await session.list_tools()
        assert first.meta["io.cadmcp/domain"]["names"] == ["Notes", "notebook"]
        assert "note" in first.meta["io.cadmcp/domain"]["terms"]
        opened = await session.call_tool("open_document", {"filePath": str(book)})
        assert not opened.is_error
        state = (await session.list_tools()).meta["io.cadmcp/hostState"]
        assert state["activeDocument"] == "ideas.json"
        assert state["documents"] == [
            {"title": "ideas.json", "path": str(book), "active": True, "modified": False}
        ]
        await session.call_tool("execute_python_code", {"code": "notes['Todo'] = 'write docs'"})
        state = (await session.list_tools()).meta["io.cadmcp/hostState"]
        assert state["documents"][0]["modified"] is True


def test_the_plain_png_needs_no_imaging_library() -> None:
    import io

    from PIL import Image

    from cadmcp.host.builtins.raster import BACKGROUND, blank_png

    image = Image.open(io.BytesIO(blank_png(100, 60)))
    assert image.size == (100, 60) and image.convert("RGB").getpixel((99, 59)) == BACKGROUND


async def test_every_capability_says_what_users_call_it() -> None:
    """Search keywords ride in each built-in's `_meta`, beside what else a tool declares there."""
    async with Client(notes_server().server) as client:
        tools = {t.name: t.meta or {} for t in (await client.list_tools()).tools}
        resources = {str(r.uri): r.meta or {} for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template: t.meta or {} for t in (await client.list_resource_templates()).resource_templates
        }
    assert tools["navigate_history"][KEYWORDS] == list(TOOL_KEYWORDS["navigate_history"])
    assert "roll back" in tools["navigate_history"][KEYWORDS]
    assert tools["execute_python_code"][FALLBACK] == ["change", "query"]  # kept beside the keywords
    for name in BUILTIN_TOOLS:
        assert tools[name][KEYWORDS], name
    scheme = next(u for u in resources if u.endswith("://version")).split("://")[0]
    for path, words in RESOURCE_KEYWORDS.items():
        meta = templates.get(f"{scheme}://{path}") or resources.get(f"{scheme}://{path}")
        assert meta is not None and meta[KEYWORDS] == list(words), path


async def test_a_step_count_below_one_is_refused_by_the_schema() -> None:
    """navigate_history(steps=-5) answered "Error executing tool..." as plain text: its schema set no
    minimum, so no client or the daemon's argument check could say what was wrong."""
    async with Client(notes_server().server) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "navigate_history")
        assert tool.input_schema["properties"]["steps"]["minimum"] == 1
        refused = await client.call_tool("navigate_history", {"direction": "back", "steps": -5})
        assert refused.is_error and "greater than or equal to 1" in refused.content[0].text
