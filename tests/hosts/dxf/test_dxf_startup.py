"""The DXF host is ready before ezdxf is imported; drawings are read on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from cadmcp.hosts.dxf import create_server
from cadmcp.hosts.dxf.documents import DxfHostError

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "floorplan.dxf"


def test_create_server_does_not_import_ezdxf() -> None:
    code = (
        "import sys\n"
        "from cadmcp.hosts.dxf import create_server\n"
        f"server = create_server([{str(SAMPLE)!r}])\n"
        "print('ezdxf' in sys.modules)\n"
        "print(server.application.active.title)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = run.stdout.split()
    assert out == ["False", "floorplan.dxf"]


def test_bad_paths_are_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DxfHostError, match="not found"):
        create_server([str(tmp_path / "missing.dxf")])
    with pytest.raises(DxfHostError, match="not a DXF"):
        create_server([str(tmp_path / "notes.txt")])


def test_a_broken_drawing_is_reported_on_first_use(tmp_path: Path) -> None:
    broken = tmp_path / "broken.dxf"
    broken.write_bytes(SAMPLE.read_bytes()[:5000])  # starts like DXF, cut off in the header

    async def scenario() -> tuple[bool, str, bool]:
        server = create_server([str(broken)])
        async with Client(server.server) as client:
            first = await client.call_tool("list_documents", {})
            run = await client.call_tool("execute_python_code", {"code": "1 + 1"})
            return first.is_error, "".join(c.text for c in run.content if c.type == "text"), run.is_error

    first_error, text, second_error = anyio.run(scenario)
    assert second_error and "not a readable DXF file" in text and "open_document" in text
    assert not first_error


def test_warm_up_reads_the_queued_drawings_step_by_step() -> None:
    server = create_server([str(SAMPLE)])
    documents = server.application
    steps = list(server.warm_up())
    assert steps == ["ezdxf", "documents", "imports"]
    assert documents._pending == []  # read during warm-up, not by the first call
    assert [d.title for d in documents] == ["floorplan.dxf"]


def test_a_broken_drawing_read_during_warm_up_is_still_reported_by_the_first_call(tmp_path: Path) -> None:
    broken = tmp_path / "broken.dxf"
    broken.write_bytes(SAMPLE.read_bytes()[:5000])
    server = create_server([str(broken)])
    list(server.warm_up())
    with pytest.raises(DxfHostError, match="not a readable DXF file"):
        server.application.active  # noqa: B018
