"""read_file_info, list_machines and the prompts through a real daemon and a real MCP client."""

from __future__ import annotations

import platform
import socket
from pathlib import Path
from typing import Any

import ezdxf
import pytest
from mcp.shared.exceptions import MCPError

from tests.core.helpers import call, structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _drawing(path: Path) -> Path:
    doc = ezdxf.new("R2018")
    doc.layers.add("WALLS")
    msp = doc.modelspace()
    msp.add_line((0, 0), (10, 0), dxfattribs={"layer": "WALLS"})
    msp.add_circle((5, 5), 2)
    doc.saveas(path)
    return path


async def _error(session: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await call(session, name, args)
    assert result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


async def test_read_file_info_answers_metadata_and_typed_errors(infra_daemon: Any, tmp_path: Path) -> None:
    dxf = _drawing(tmp_path / "plan.dxf")
    broken = tmp_path / "broken.ifc"
    broken.write_text("this is not STEP data")
    (tmp_path / "notes.txt").write_text("hello")
    async with infra_daemon() as session:
        summary = await structured(session, "read_file_info", {"filePath": str(dxf)})
        assert summary["format"] == "dxf" and summary["path"] == str(dxf)
        assert summary["fileSizeBytes"] == dxf.stat().st_size
        full = await structured(session, "read_file_info", {"filePath": str(dxf), "detail": "full"})
        assert "WALLS" in str(full)

        missing = await _error(session, "read_file_info", {"filePath": str(tmp_path / "gone.dxf")})
        assert missing["type"] == "not_found" and "gone.dxf" in missing["message"]
        unsupported = await _error(session, "read_file_info", {"filePath": str(tmp_path / "notes.txt")})
        assert unsupported["type"] == "unsupported_extension" and ".dxf" in unsupported["message"]
        corrupt = await _error(session, "read_file_info", {"filePath": str(broken)})
        assert corrupt["type"] == "corrupt_file"
        no_path = await _error(session, "read_file_info", {})
        assert no_path["type"] == "validation_error" and "filePath" in no_path["message"]
        bad_detail = await _error(session, "read_file_info", {"filePath": str(dxf), "detail": "everything"})
        assert bad_detail["type"] == "validation_error" and "'full'" in bad_detail["message"]
        extra = await _error(session, "read_file_info", {"filePath": str(dxf), "path": "x"})
        assert extra["type"] == "validation_error" and "path" in extra["message"]


async def test_machines_and_prompts_are_answered_by_the_daemon_alone(
    infra_daemon: Any, runtime_dir: Path
) -> None:
    async with infra_daemon() as session:
        answer = await structured(session, "list_machines")
        listed = await session.list_prompts()
        dxf = await session.get_prompt("dxf_code", {"task": "Draw a 3 m door swing on layer DOORS"})
        ifc = await session.get_prompt("ifc_code", {"task": "Count doors per storey", "mode": "read_only"})
        with pytest.raises(MCPError, match="Unknown prompt"):
            await session.get_prompt("revit_code", {"task": "x"})
        with pytest.raises(MCPError, match="needs a task"):
            await session.get_prompt("dxf_code", {})
        with pytest.raises(MCPError, match="mode must be one of"):
            await session.get_prompt("dxf_code", {"task": "x", "mode": "sudo"})

    assert answer["count"] == 1
    (machine,) = answer["machines"]
    assert machine["hostname"] == socket.gethostname()
    assert machine["local"] is True
    assert machine["os"]["system"] == platform.system()
    assert machine["runtimeDir"] == str(runtime_dir)
    assert machine["connectedHosts"] == 0
    assert len(machine["machineId"]) >= 8
    assert answer["gateway"]["configured"] is False
    assert answer["gateway"]["error"]["type"] == "gateway_not_configured"
    assert "--gateway" in answer["gateway"]["error"]["message"]

    by_name = {p.name: p for p in listed.prompts}
    assert sorted(by_name) == ["dxf_code", "freecad_code", "ifc_code"]
    for prompt in by_name.values():
        assert [(a.name, bool(a.required)) for a in prompt.arguments or []] == [
            ("task", True),
            ("mode", False),
        ]

    text = dxf.messages[0].content.text  # type: ignore[union-attr]
    assert "Draw a 3 m door swing on layer DOORS" in text
    for phrase in ("`doc`", "`msp`", "`ezdxf`", "one undoable step", "rolls the whole script back"):
        assert phrase in text, phrase
    assert "PEP 723" in text and "last expression" in text and "description" in text
    assert "must NOT change" not in text
    assert "dxf://model/context" in text

    text = ifc.messages[0].content.text  # type: ignore[union-attr]
    assert "Count doors per storey" in text
    for name in ("`model`", "`ifcopenshell`", "`api`", "`util`", "`element`"):
        assert name in text, name
    assert "must NOT change" in text and "cannot enforce" in text
    assert "ifc://model/context" in text
