"""CADMCP_UNDO_DEPTH on the DXF and IFC hosts: the depth is the one asked for, the step that falls
off is named in the script's note, navigate_history says how many remain and that older steps
fell off (real ezdxf and IfcOpenShell documents through an MCP client)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from cadmcp.host.history import UNDO_DEPTH_ENV
from cadmcp.hosts.dxf import create_server as dxf_server
from cadmcp.hosts.ifc import create_server as ifc_server

pytestmark = pytest.mark.anyio
SAMPLES = Path(__file__).resolve().parents[3] / "samples"

CHANGES = {
    "dxf": ("floorplan.dxf", dxf_server, "# Line {i}\nmsp.add_line((0, {i}), (10, {i}))"),
    "ifc": (
        "house.ifc",
        ifc_server,
        "# Wall {i}\nifcopenshell.api.run('root.create_entity', model, ifc_class='IfcWall')",
    ),
}


def text_of(result: object) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")  # type: ignore[attr-defined]


@pytest.mark.parametrize("app", sorted(CHANGES))
async def test_the_step_that_falls_off_is_named_and_undo_says_it_is_gone(
    app: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample, create_server, change = CHANGES[app]
    path = tmp_path / sample
    shutil.copyfile(SAMPLES / sample, path)
    monkeypatch.setenv(UNDO_DEPTH_ENV, "2")
    server = create_server([str(path)], exec_timeout=10)
    async with Client(server.server) as client:
        notes = []
        for i in range(1, 4):
            result = await client.call_tool("execute_python_code", {"code": change.format(i=i)})
            assert not result.is_error, text_of(result)
            notes.append(text_of(result))
        assert "2 steps can be undone now (the history keeps 2)." in notes[1] and "fell off" not in notes[1]
        assert f"The oldest step, '{'Line' if app == 'dxf' else 'Wall'} 1', fell off the history" in notes[2]
        back = (
            await client.call_tool("navigate_history", {"direction": "back", "steps": 5})
        ).structured_content
        assert back["navigated"] == 2 and back["depth"] == 2 and back["dropped"] == 1
        assert back["message"].endswith(
            "1 step older than these fell off the history (it keeps 2) and can no longer be undone."
        )
