"""Toolsets end to end: a real demo host process loading toolsets, a real daemon, real clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.host.toolsets import TOOLSETS_ENV
from cadmcp.wire.endpoints import list_endpoints
from tests.core.helpers import call, find, find_target, wait_for_hosts
from tests.toolsets.conftest import tool_module, write

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STRUCTURED = '''
from typing_extensions import TypedDict
from mcp.server.mcpserver import MCPServer

server = MCPServer("quantities")

class WallCount(TypedDict):
    level: str
    walls: int

@server.tool(meta={"io.cadmcp/keywords": ["wall takeoff"]})
def count_walls_on_level(level: str) -> WallCount:
    """Count the walls standing on one building level."""
    return WallCount(level=level, walls=len(level) * 2)
'''


async def test_toolset_folder_is_searchable_invocable_and_follows_edits(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ts"
    write(folder, "quantities.py", STRUCTURED)
    write(folder, "notes.py", tool_module("notes", ("annotate_drawing", "Annotate the drawing with a note.")))
    write(folder, "broken.py", "import no_such_module_here\n")
    monkeypatch.setenv(TOOLSETS_ENV, str(folder))
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        walls = await find_target(session, "count_walls_on_level")
        assert walls["hostApp"] == "Demo"
        result = await call(session, "invoke_dynamic", {"id": walls["id"], "arguments": {"level": "L2"}})
        assert not result.is_error
        assert result.structured_content == {"level": "L2", "walls": 4}
        assert json.loads(result.content[0].text) == result.structured_content
        keyword_hits = await find(session, "wall takeoff")
        assert keyword_hits[0]["target"] == "count_walls_on_level"
        notes = await find_target(session, "annotate_drawing")
        echo = await find_target(session, "echo")  # the host's built-ins keep serving

        report = await find_target(session, "cadmcp://toolsets")
        read = await call(session, "invoke_dynamic", {"id": report["id"]})
        errors = json.loads(read.content[0].resource.text)["errors"]
        assert [(Path(e["file"]).name, e["kind"]) for e in errors] == [("broken.py", "import")]

        write(folder, "notes.py", tool_module("notes", ("annotate_drawing", "Write a note on the plan.")))
        with anyio.fail_after(15):
            while (await find_target(session, "annotate_drawing"))["id"] == notes["id"]:
                await anyio.sleep(0.2)
        stale = await call(session, "invoke_dynamic", {"id": notes["id"], "arguments": {"text": "x"}})
        assert stale.is_error and stale.structured_content["type"] == "stale"
        assert stale.structured_content["reason"] == "changed"
        again = await call(session, "invoke_dynamic", {"id": walls["id"], "arguments": {"level": "L10"}})
        assert again.structured_content == {"level": "L10", "walls": 6}  # unchanged tool, same id
        fresh = await find_target(session, "annotate_drawing")
        ok = await call(session, "invoke_dynamic", {"id": fresh["id"], "arguments": {"text": "hi"}})
        assert ok.content[0].text == "notes:annotate_drawing:hi"
        ok = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "still"}})
        assert ok.content[0].text == "still"


async def test_ifc_host_process_serves_the_sample_toolset_given_by_flag(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    from cadmcp.hosts.ifc.modelgen import build_house

    model = tmp_path / "house.ifc"
    build_house().write(str(model))
    samples = Path(__file__).resolve().parents[2] / "samples" / "toolsets" / "ifc"
    hosts.start("ifc", str(model), "--toolset", str(samples), timeout=60)
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        with anyio.fail_after(20):
            while not [i for i in await find(session, "quantity takeoff") if i["target"] == "count_elements"]:
                await anyio.sleep(0.2)
        item = await find_target(session, "count_elements")
        args = {"id": item["id"], "arguments": {"ifcClass": "IfcWall"}}
        result = await call(session, "invoke_dynamic", args)
        assert not result.is_error, result
        assert result.structured_content["count"] > 0 and result.structured_content["document"]


async def test_dxf_host_process_serves_the_sample_toolset_on_its_live_drawing(
    hosts: Any, daemon_client: Any
) -> None:
    root = Path(__file__).resolve().parents[2]
    hosts.start(
        "dxf",
        str(root / "samples" / "floorplan.dxf"),
        "--toolset",
        str(root / "samples" / "toolsets" / "dxf"),
    )
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        with anyio.fail_after(20):
            while not [i for i in await find(session, "layer summary") if i["target"] == "layer_summary"]:
                await anyio.sleep(0.2)
        summary = await find_target(session, "layer_summary")
        result = await call(session, "invoke_dynamic", {"id": summary["id"], "arguments": {}})
        assert not result.is_error, result
        layers = {row["name"]: row["entities"] for row in result.structured_content["layers"]}
        assert layers["A-WALL"] > 0  # read from the host's live floor plan


async def test_a_host_whose_toolset_waits_at_import_still_starts_and_serves(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A toolset module sleeping an hour at import kept the host from ever listening: the agent saw no
    host and no reason. The import is stopped after the limit; the host serves and reports it."""
    folder = tmp_path / "ts"
    write(folder, "notes.py", tool_module("notes", ("annotate_drawing", "Annotate the drawing with a note.")))
    write(folder, "sleepy.py", "import time\ntime.sleep(3600)\n")
    monkeypatch.setenv(TOOLSETS_ENV, str(folder))
    monkeypatch.setenv("CADMCP_TOOLSET_IMPORT_TIMEOUT", "2")
    hosts.start("demo", timeout=30)
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        notes = await find_target(session, "annotate_drawing")
        ok = await call(session, "invoke_dynamic", {"id": notes["id"], "arguments": {"text": "hi"}})
        assert ok.content[0].text == "notes:annotate_drawing:hi"
        report = await find_target(session, "cadmcp://toolsets")
        read = await call(session, "invoke_dynamic", {"id": report["id"]})
        (error,) = json.loads(read.content[0].resource.text)["errors"]
        assert error["kind"] == "import_timeout" and Path(error["file"]).name == "sleepy.py", error


SLEEPER = """
import time
from mcp.server.mcpserver import MCPServer

server = MCPServer("slow")

@server.tool()
def wait_forever() -> str:
    \"\"\"Wait ten minutes.\"\"\"
    time.sleep(600)
    return "done"
"""


async def test_a_host_stuck_in_a_toolset_wait_ends_after_sigterm(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose application thread slept in a toolset's tool ignored SIGTERM (it needed SIGKILL):
    it now ends STOP_GRACE seconds after the signal, its endpoint removed."""
    folder = tmp_path / "ts"
    write(folder, "slow.py", SLEEPER)
    monkeypatch.setenv(TOOLSETS_ENV, str(folder))
    proc = hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "wait_forever")
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, session, "invoke_dynamic", {"id": slow["id"]})
            await anyio.sleep(1.0)  # the call is in its sleep
            proc.terminate()
            with anyio.fail_after(25):
                while proc.poll() is None:
                    await anyio.sleep(0.2)
            tg.cancel_scope.cancel()
    assert proc.returncode != 0
    assert not [ep for ep in list_endpoints(hosts.directory) if ep.pid == proc.pid]


async def test_an_id_gone_stale_by_a_failed_reload_says_its_module_did_not_load(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a module had a syntax error, its tools' ids answered only "The host no longer offers
    count_inserts; nothing ran. Search again.", and list_host_instances said nothing of it."""
    folder = tmp_path / "ts"
    write(folder, "notes.py", tool_module("notes", ("annotate_drawing", "Annotate the drawing with a note.")))
    monkeypatch.setenv(TOOLSETS_ENV, str(folder))
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        notes = await find_target(session, "annotate_drawing")
        write(folder, "notes.py", "def broken(:\n")
        with anyio.fail_after(15):
            while not (await call(session, "invoke_dynamic", {"id": notes["id"], "arguments": {}})).is_error:
                await anyio.sleep(0.2)
            while True:
                stale = await call(session, "invoke_dynamic", {"id": notes["id"], "arguments": {}})
                if "did not load" in stale.content[0].text:
                    break
                await anyio.sleep(0.2)
        assert stale.structured_content["type"] == "stale" and "notes.py" in stale.content[0].text
        (host,) = (await call(session, "list_host_instances", {})).structured_content["hosts"]
        assert host["state"]["toolsetLoadErrors"] == ["notes.py"], host
