"""A preview changes nothing outside the document either: what its script tries there (writing
or removing files, starting programs, connecting) is refused and said, and the document is rolled
back. Through the DXF host's own server and a real SDK client."""

from __future__ import annotations

from pathlib import Path

import ezdxf
import pytest
from mcp import Client

from cadmcp.hosts.dxf import create_server

pytestmark = pytest.mark.anyio


def _text(result: object) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")  # type: ignore[attr-defined]


async def test_a_preview_that_writes_a_file_is_stopped_said_and_rolled_back(tmp_path: Path) -> None:
    """ThatOpen's AC20-FZK-Haus.ifc, a deny rule on it, and a script previewed on another host that
    rewrote it: the file was changed before the person answered, and stayed so after a no."""
    drawing = tmp_path / "plan.dxf"
    ezdxf.new("R2018").saveas(drawing)
    marker, other = tmp_path / "written by a preview.txt", tmp_path / "other.ifc"
    other.write_text("ISO-10303-21;")
    async with Client(create_server([str(drawing)], exec_timeout=10).server) as client:
        for code, said in (
            (f"msp.add_line((0, 0), (1, 1))\nopen({str(marker)!r}, 'w').write('x')", "writes the file"),
            (f"import pathlib\npathlib.Path({str(other)!r}).unlink()", "removes"),
            ("import subprocess\nsubprocess.run(['true'])", "starts the program true"),
            (  # a thread's own writes are on another thread: starting one is refused
                "import threading, pathlib\n"
                f"t = threading.Thread(target=pathlib.Path({str(marker)!r}).write_text, args=('x',))\n"
                "t.start(); t.join()\nlen(msp)",
                "starts a thread",
            ),
            (
                f"import _thread\n_thread.start_new_thread(open, ({str(marker)!r}, 'w'))\nlen(msp)",
                "starts a thread",
            ),
            (  # caught by the script: still no preview, what it did would not be what the run does
                f"try:\n    open({str(marker)!r}, 'a')\nexcept OSError:\n    pass\nmsp.add_circle((0, 0), 1)",
                "writes the file",
            ),
        ):
            preview = await client.call_tool("execute_python_code", {"code": code, "dryRun": True})
            text = _text(preview)
            assert not preview.is_error and text.startswith("No preview: the script " + said), text
            assert preview.structured_content["applyWith"] is None
            assert said in preview.structured_content["outsideDocument"][0]
        assert not marker.exists() and other.read_text() == "ISO-10303-21;"
        count = await client.call_tool("execute_python_code", {"code": "len(msp)"})
        assert "Result: 0" in _text(count)  # every preview was rolled back
        reads = f"open({str(other)!r}).read()[:4]"  # reading a file is no change: previewed as usual
        read = await client.call_tool("execute_python_code", {"code": reads, "dryRun": True})
        assert _text(read).startswith("Preview (nothing was changed") and "'ISO-'" in _text(read)
        writes = f"open({str(marker)!r}, 'w').write('x')"
        written = await client.call_tool("execute_python_code", {"code": writes})
        assert not written.is_error and marker.read_text() == "x"  # a run that is no preview writes
        threads = "import threading\nt = threading.Thread(target=print)\nt.start(); t.join()\n'ran'"
        threaded = await client.call_tool("execute_python_code", {"code": threads})
        assert "Result: 'ran'" in _text(threaded)  # and starts threads
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, _text(saved)
