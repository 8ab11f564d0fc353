"""Loading toolsets into a live host: isolation, collisions, broken modules, reloads (in-process
host on a real socket, real SDK client)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from cadmcp.host.toolsets import loader
from tests.toolsets.conftest import tool_module, write

pytestmark = pytest.mark.anyio


def builtin_server(runtime: Any) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("builtins")

    @server.tool()
    def echo(text: str) -> str:
        """Built-in echo."""
        return "builtin:" + text

    return server


async def report(session: Any) -> dict[str, Any]:
    result = await session.read_resource("cadmcp://toolsets")
    return json.loads(result.contents[0].text)


async def text_of(session: Any, tool: str, **args: Any) -> str:
    result = await session.call_tool(tool, args)
    return result.content[0].text


async def test_collision_rule_builtins_then_path_order_then_file_name(
    inproc_host: Any, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write(first, "b_mod.py", tool_module("first-b", ("shared", "B in first."), ("echo", "Shadows echo.")))
    write(first, "a_mod.py", tool_module("first-a", ("shared", "A in first."), ("only_a", "Only A.")))
    write(second, "0_mod.py", tool_module("second", ("shared", "Second."), ("only_second", "Only second.")))
    host = inproc_host([first, second], builtins=builtin_server)
    async with host.client() as session:
        assert await text_of(session, "echo", text="x") == "builtin:x"
        assert await text_of(session, "shared") == "first-a:shared:"  # a_mod.py sorts before b_mod.py
        assert await text_of(session, "only_second") == "second:only_second:"
        doc = await report(session)
    conflicts = {(c["name"], c["servedBy"], c["shadowed"]) for c in doc["conflicts"]}
    assert conflicts == {
        ("echo", "builtin", f"toolset {first / 'b_mod.py'}"),
        ("shared", f"toolset {first / 'a_mod.py'}", f"toolset {first / 'b_mod.py'}"),
        ("shared", f"toolset {first / 'a_mod.py'}", f"toolset {second / '0_mod.py'}"),
    }
    assert "Built-in capabilities win" in doc["collisionRule"]
    b_mod = doc["toolsets"][0]["modules"][1]
    assert sorted(b_mod["servers"][0]["hidden"]) == ["tool echo", "tool shared"]


async def test_broken_modules_are_reported_and_the_rest_keeps_serving(
    inproc_host: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    write(folder, "good.py", tool_module("good", ("works", "Works.")))
    write(folder, "syntax.py", "def broken(:\n")
    write(folder, "imports.py", "import not_a_module_anywhere\n")
    write(folder, "helperless.py", "x = 1\n")
    write(folder, "_private.py", "raise RuntimeError('never loaded as a toolset')\n")
    write(
        folder,
        "raising.py",
        tool_module("raising", ("explode", "Always fails.")).replace(
            "return 'raising:explode:' + text", "raise ValueError('kaboom ' + text)"
        ),
    )
    missing = tmp_path / "gone"
    host = inproc_host([folder, missing])
    async with host.client() as session:
        assert await text_of(session, "works") == "good:works:"
        failed = await session.call_tool("explode", {"text": "now"})
        assert failed.is_error
        said = failed.content[0].text  # the reason and where the traceback is, not only "Error executing"
        assert "ValueError: kaboom now" in said and "raising.py:" in said and "in explode" in said
        assert "cadmcp://toolsets" in said and "host log" in said
        doc = await report(session)
    kinds = {(Path(e.get("file", e["path"])).name, e.get("kind") or e.get("code")) for e in doc["errors"]}
    assert kinds == {
        ("syntax.py", "syntax"),
        ("imports.py", "import"),
        ("helperless.py", "no_server"),
        ("raising.py", "tool"),
        ("gone", "missing_path"),
    }
    by_kind = {e.get("kind") or e.get("code"): e for e in doc["errors"]}
    assert "not_a_module_anywhere" in by_kind["import"]["traceback"]
    assert "kaboom now" in by_kind["tool"]["message"] and "raising.py" in by_kind["tool"]["traceback"]
    assert "does not exist" in by_kind["missing_path"]["message"]
    assert [m["file"] for m in doc["toolsets"][0]["modules"]] == sorted(
        str(folder / n) for n in ("good.py", "syntax.py", "imports.py", "helperless.py", "raising.py")
    )


async def test_modules_are_isolated_and_helpers_private(inproc_host: Any, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, word in ((one, "uno"), (two, "dos")):
        write(folder, "_common.py", f"WORD = {word!r}\n")
        write(
            folder,
            "tools.py",
            tool_module(f"tools-{word}", (f"say_{word}", "Say it.")).replace(
                "from mcp.server", "from _common import WORD\nfrom mcp.server"
            )
            + f"@server.tool()\ndef word_{word}() -> str:\n    'The helper word.'\n    return WORD\n",
        )
    path_before = list(sys.path)
    host = inproc_host([one, two])
    assert sys.path == path_before  # folders were on sys.path only while loading
    assert "_common" not in sys.modules
    names = {loader.module_name_for(one / "tools.py"), loader.module_name_for(two / "tools.py")}
    assert len(names) == 2 and names <= set(sys.modules)
    async with host.client() as session:
        assert await text_of(session, "word_uno") == "uno"
        assert await text_of(session, "word_dos") == "dos"
    assert host.runtime.catalog.providers[-1].priority > host.runtime.catalog.providers[0].priority


async def test_context_features_structured_output_templates_and_input_required(
    inproc_host: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "rich"
    write(
        folder,
        "rich.py",
        """
        import threading
        import mcp_types as types
        from mcp.server.mcpserver import Context, MCPServer
        from typing_extensions import TypedDict
        import cadmcp.host

        server = MCPServer("rich")

        class Where(TypedDict):
            thread: str
            app: str

        @server.tool(meta={"io.cadmcp/keywords": ["where"]})
        def where() -> Where:
            "Which thread and application run this tool."
            app = cadmcp.host.current().application
            return Where(thread=threading.current_thread().name, app=app["name"])

        @server.resource("rich://item/{key}", mime_type="text/plain")
        def item(key: str) -> str:
            "One item."
            return "item " + key

        @server.tool()
        async def confirm(thing: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
            "Ask first."
            answer = (ctx.input_responses or {}).get("ok")
            if answer is None:
                ask = types.ElicitRequest(params=types.ElicitRequestFormParams(
                    message="Sure?", requested_schema={"type": "object", "properties": {}}))
                return types.InputRequiredResult(input_requests={"ok": ask}, request_state="s1")
            return types.CallToolResult(content=[types.TextContent(type="text", text="done " + thing)],
                                        structured_content={"state": ctx.request_state})
        """,
    )
    host = inproc_host([folder], application={"name": "live-app"})
    async with host.client() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["where"].meta == {"io.cadmcp/keywords": ["where"]}
        assert tools["where"].output_schema is not None
        result = await session.call_tool("where", {})
        assert result.structured_content == {"thread": "app", "app": "live-app"}
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["rich://item/{key}"]
        assert (await session.read_resource("rich://item/7")).contents[0].text == "item 7"
        first = await session.call_tool("confirm", {"thing": "x"}, allow_input_required=True)
        assert first.result_type == "input_required" and first.request_state == "s1"
        done = await session.call_tool(
            "confirm",
            {"thing": "x"},
            input_responses={"ok": {"action": "accept", "content": {}}},
            request_state="s1",
            allow_input_required=True,
        )
        assert done.content[0].text == "done x" and done.structured_content == {"state": "s1"}


async def test_editing_adding_and_deleting_files_reload_through_the_watcher(
    inproc_host: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "live"
    write(folder, "alpha.py", tool_module("alpha", ("alpha_tool", "First version.")))
    write(folder, "_helper.py", "VALUE = 1\n")
    beta = tool_module("beta", ("beta_tool", "Beta.")).replace("from mcp", "import _helper\nfrom mcp")
    write(folder, "beta.py", beta)
    host = inproc_host([folder], watch=True)
    async with host.client() as session:

        async def wait_tools(predicate: Any) -> dict[str, Any]:
            with anyio.fail_after(10):
                while True:
                    tools = {t.name: t for t in (await session.list_tools()).tools}
                    if predicate(tools):
                        return tools
                    await anyio.sleep(0.05)

        await wait_tools(lambda t: "alpha_tool" in t and "beta_tool" in t)
        write(folder, "alpha.py", tool_module("alpha", ("alpha_tool", "Second version.")))
        await wait_tools(lambda t: t["alpha_tool"].description == "Second version.")
        write(folder, "gamma.py", tool_module("gamma", ("gamma_tool", "New.")))
        await wait_tools(lambda t: "gamma_tool" in t)
        (folder / "gamma.py").unlink()
        await wait_tools(lambda t: "gamma_tool" not in t)
        reloads = host.manager.reloads
        write(folder, "_helper.py", "VALUE = 2\n")  # a helper change reloads the modules of its folder
        with anyio.fail_after(10):
            while host.manager.reloads == reloads:
                await anyio.sleep(0.05)
        write(folder, "alpha.py", "def broken(:\n")
        tools = await wait_tools(lambda t: "alpha_tool" not in t)
        assert "beta_tool" in tools
        doc = await report(session)
        assert [e["kind"] for e in doc["errors"]] == ["syntax"]


async def test_a_module_whose_import_never_ends_is_stopped_and_the_rest_serves(
    inproc_host: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A toolset module looping (or waiting an hour) at import wedged the host: at start-up it never
    listened, on a reload every later call hung. Its import is now stopped after the limit, said in
    the report, and the other modules and built-ins serve. (A wait at import, which only a signal
    stops, is tested in a host process: here pytest-timeout holds SIGALRM.)"""
    monkeypatch.setenv("CADMCP_TOOLSET_IMPORT_TIMEOUT", "1")
    folder = tmp_path / "stuck"
    write(folder, "good.py", tool_module("good", ("works", "Works.")))
    write(folder, "stuck.py", tool_module("stuck", ("never", "Never served.")) + "while True:\n    pass\n")
    started = time.monotonic()
    host = inproc_host([folder])
    assert time.monotonic() - started < 20
    async with host.client() as session:
        assert await text_of(session, "works") == "good:works:"
        doc = await report(session)
    (error,) = doc["errors"]
    assert error["kind"] == "import_timeout" and "did not finish within 1 s" in error["message"], error
    assert "CADMCP_TOOLSET_IMPORT_TIMEOUT" in error["message"]
    stuck = folder / "stuck.py"
    stuck.touch()  # saved again unchanged: not imported again (it held the application thread 1 s)
    started = time.monotonic()
    host.manager.apply_changes({stuck})
    assert time.monotonic() - started < 0.5
    fixed = stuck.read_text().replace("while True:\n    pass\n", "")
    write(folder, "stuck.py", fixed)  # changed: imported again, and served
    host.manager.apply_changes({stuck})
    async with host.client() as session:
        assert await text_of(session, "never") == "stuck:never:"


async def test_a_prompt_in_a_toolset_is_said_not_to_be_served(inproc_host: Any, tmp_path: Path) -> None:
    """@server.prompt() in a toolset was dropped without a word: not served, not in the report."""
    folder = tmp_path / "prompts"
    source = tool_module("annotate", ("tag_rooms", "Tag the rooms.")) + (
        "\n@server.prompt()\ndef tag_all_rooms(style: str) -> str:\n    return 'Tag every room ' + style\n"
    )
    write(folder, "annotate.py", source)
    host = inproc_host([folder])
    async with host.client() as session:
        assert await text_of(session, "tag_rooms") == "annotate:tag_rooms:"
        doc = await report(session)
    (error,) = doc["errors"]
    assert error["kind"] == "prompts_not_served" and "tag_all_rooms" in error["message"], error


async def test_a_resource_or_template_that_raises_says_why(inproc_host: Any, tmp_path: Path) -> None:
    """A template raising ValueError("no wall with GlobalId nope") answered only "Error creating
    resource from template ...", a resource raising KeyError "Error reading resource ...": no reason,
    no file or line, nothing in the report."""
    folder = tmp_path / "reads"
    source = tool_module("walls", ("count", "Count.")) + (
        "\n@server.resource('walls://broken')\ndef broken() -> str:\n    return {}['missing']\n"
        "\n@server.resource('walls://wall/{gid}')\ndef wall(gid: str) -> str:\n"
        "    raise ValueError('no wall with GlobalId ' + gid)\n"
    )
    write(folder, "walls.py", source)
    host = inproc_host([folder])
    async with host.client() as session:
        for uri, said in (
            ("walls://wall/nope", "ValueError: no wall with GlobalId nope"),
            ("walls://broken", "KeyError"),
        ):
            with pytest.raises(Exception) as caught:
                await session.read_resource(uri)
            assert said in str(caught.value) and "walls.py:" in str(caught.value), str(caught.value)
        doc = await report(session)
    kinds = sorted((e["kind"], e["tool"]) for e in doc["errors"])
    assert kinds == [("resource", "walls://broken"), ("resource", "walls://wall/{gid}")], doc["errors"]


async def test_a_structured_answer_holding_nan_says_where_instead_of_failing_in_the_client(
    inproc_host: Any, tmp_path: Path
) -> None:
    """A tool typed `-> float` (or a model with a float field) that returned NaN was written as null;
    every client checking the output schema refused the answer ("Invalid structured content ... None
    is not of type 'number'"), the author never learning which value. Unstructured answers keep NaN
    as text, and a finite answer is untouched."""
    folder = tmp_path / "measures"
    source = tool_module("measures", ("noop", "Nothing.")) + (
        "\nimport math\nfrom pydantic import BaseModel\n"
        "class Areas(BaseModel):\n    rooms: dict[str, float]\n"
        "@server.tool()\ndef ratio() -> float:\n    return math.nan\n"
        "@server.tool()\ndef areas() -> Areas:\n    return Areas(rooms={'hall': 12.5, 'void': -math.inf})\n"
        "@server.tool()\ndef fine() -> Areas:\n    return Areas(rooms={'hall': 12.5})\n"
        "@server.tool()\ndef loose():\n    return {'n': math.nan}\n"
        "@server.tool()\ndef raw():\n    return {'b': b'\\x00\\xff', 'fine': b'text'}\n"
    )
    write(folder, "measures.py", source)
    host = inproc_host([folder])
    async with host.client() as session:
        for tool, where in (("ratio", "result = NaN"), ("areas", "result['rooms']['void'] = NaN")):
            result = await session.call_tool(tool, {})
            text = result.content[0].text
            assert result.is_error and where in text and "return None" in text, text
        fine = await session.call_tool("fine", {})
        assert not fine.is_error and fine.structured_content == {"rooms": {"hall": 12.5}}
        loose = await session.call_tool("loose", {})
        assert not loose.is_error and "NaN" in loose.content[0].text
        raw = await session.call_tool("raw", {})  # answered "Error executing tool raw", no reason
        said = raw.content[0].text
        assert raw.is_error and "returned a value no JSON can carry (" in said and "utf-8" in said, said
        assert "base64 for binary data" in said
        doc = await report(session)
    assert sorted(e["tool"] for e in doc["errors"]) == ["areas", "ratio", "raw"], doc["errors"]


async def test_a_function_calling_sys_exit_fails_its_call_and_the_host_serves_on(
    inproc_host: Any, tmp_path: Path
) -> None:
    """`sys.exit(3)` in a tool (raised on the application thread, handed back to the I/O loop) ended
    the host's I/O loop: its process ran on, unreachable, with the drawing's unsaved changes."""
    folder = tmp_path / "leaving"
    source = tool_module("leaving", ("count", "Count.")) + (
        "\nimport sys\n"
        "@server.tool()\ndef leave() -> str:\n    sys.exit(3)\n"
        "@server.tool()\nasync def leave_async() -> str:\n    raise SystemExit('bye')\n"
        "@server.resource('leaving://gone')\ndef gone() -> str:\n    sys.exit(0)\n"
    )
    write(folder, "leaving.py", source)
    host = inproc_host([folder])
    async with host.client() as session:
        for tool, code in (("leave", "3"), ("leave_async", "'bye'")):
            result = await session.call_tool(tool, {})
            text = result.content[0].text
            assert result.is_error and f"The tool '{tool}' called sys.exit({code})" in text, text
            assert "The host goes on serving" in text
        with pytest.raises(Exception) as caught:
            await session.read_resource("leaving://gone")
        assert "Reading leaving://gone called sys.exit(0)" in str(caught.value)
        still = await session.call_tool("count", {})
        assert not still.is_error, still


def test_the_host_state_names_failing_modules_as_they_break_mend_and_go(
    inproc_host: Any, tmp_path: Path
) -> None:
    """`toolsetLoadErrors` followed catalog changes only: a module added broken (serving nothing) was
    not named, and one fixed or deleted stayed named."""
    folder = tmp_path / "live"
    write(folder, "good.py", tool_module("good", ("works", "Works.")))
    host = inproc_host([folder])
    assert host.runtime.state.get("toolsetLoadErrors") is None
    broken = write(folder, "broken2.py", "def x(:\n")
    host.manager.apply_changes({broken})
    assert host.runtime.state["toolsetLoadErrors"] == ["broken2.py"]
    broken.unlink()
    host.manager.apply_changes({broken})
    assert host.runtime.state.get("toolsetLoadErrors") is None
    again = write(folder, "again.py", "import not_a_module_anywhere\n")
    host.manager.apply_changes({again})
    assert host.runtime.state["toolsetLoadErrors"] == ["again.py"]
    write(folder, "again.py", tool_module("again", ("mended", "Mended.")))
    host.manager.apply_changes({again})
    assert host.runtime.state.get("toolsetLoadErrors") is None


async def test_a_tool_asking_with_ctx_elicit_is_told_how_a_toolset_asks(
    inproc_host: Any, tmp_path: Path
) -> None:
    """`await ctx.elicit(...)` answered the SDK's "this transport context has no back-channel for
    server-initiated requests", and neither it nor the docs said what works instead."""
    folder = tmp_path / "asking"
    source = tool_module("asking", ("count", "Count.")) + (
        "\nfrom pydantic import BaseModel\nfrom mcp.server.mcpserver import Context\n"
        "class Sheet(BaseModel):\n    number: str\n"
        "@server.tool()\nasync def ask_sheet(ctx: Context) -> str:\n"
        "    answer = await ctx.elicit('Which sheet number?', Sheet)\n    return str(answer)\n"
    )
    write(folder, "asking.py", source)
    host = inproc_host([folder])
    async with host.client() as session:
        result = await session.call_tool("ask_sheet", {})
    said = result.content[0].text
    assert result.is_error and "no back-channel" in said and "returning an InputRequiredResult" in said, said


async def test_a_toolset_folder_deleted_while_the_host_runs_is_reported_missing(
    inproc_host: Any, tmp_path: Path
) -> None:
    """A registered folder deleted while the host ran was reported `"status": "ok", "modules": []`."""
    import shutil

    folder = tmp_path / "office"
    module = write(folder, "office.py", tool_module("office", ("count", "Count.")))
    host = inproc_host([folder])
    shutil.rmtree(folder)
    host.manager.apply_changes({module})
    async with host.client() as session:
        doc = await report(session)
        listed = [t.name for t in (await session.list_tools()).tools]
    (entry,) = doc["toolsets"]
    assert entry["status"] == "error" and entry["error"]["code"] == "missing_path", entry
    assert "no longer exists" in entry["error"]["message"] and entry["modules"] == []
    assert any(e.get("code") == "missing_path" for e in doc["errors"]), doc["errors"]
    assert "count" not in listed
