"""A fourth application is one adapter: samples/adapters/notes_host.py, a real host process, used
through a real daemon like the reference hosts (search, run code, undo, roll back, look)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builtins_helpers import SAMPLES
from tests.core.helpers import call, find_target, wait_for_hosts

from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def notes_host(runtime_dir: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    book = tmp_path / "ideas.json"
    book.write_text(json.dumps({"notes": {"Groceries": "milk, bread", "Empty": ""}}))
    proc = subprocess.Popen(
        [sys.executable, str(SAMPLES / "adapters" / "notes_host.py"), str(book)],
        env={**os.environ, RUNTIME_DIR_ENV: str(runtime_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield proc, book
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert not [e for e in list_endpoints(runtime_dir) if e.pid == proc.pid]


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def test_the_notes_host_works_like_the_reference_hosts(notes_host: Any, daemon_client: Any) -> None:
    proc, book = notes_host
    async with daemon_client() as session:
        listing = await wait_for_hosts(session, 1)
        assert listing["hosts"][0]["hostApp"] == "Notes" and listing["hosts"][0]["pid"] == proc.pid
        run = await find_target(session, "execute_python_code", "Notes")
        history = await find_target(session, "navigate_history", "Notes")
        shot = await find_target(session, "view_screenshot", "Notes")
        warnings = await find_target(session, "notes://model/warnings", "Notes")

        added = await call(
            session,
            "invoke_dynamic",
            {
                "id": run["id"],
                "arguments": {"code": "notes['Todo'] = 'write the adapter guide'", "description": "Add todo"},
            },
        )
        assert "[UNDO STEP] Recorded 'Add todo'" in text_of(added)
        failed = await call(
            session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "notes.clear()\n1 / 0"}}
        )
        assert failed.is_error and "[ROLLBACK] Every change" in text_of(failed)
        count = await call(
            session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "sorted(notes)"}}
        )
        assert "Result: ['Empty', 'Groceries', 'Todo']" in text_of(count)

        back = await call(
            session, "invoke_dynamic", {"id": history["id"], "arguments": {"direction": "back"}}
        )
        assert back.structured_content["operations"] == ["Add todo"]
        image = await call(session, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 200}})
        assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"
        report = await call(session, "invoke_dynamic", {"id": warnings["id"]})
        assert json.loads(report.content[0].resource.text) == {"total": 1, "empty": ["Empty"]}
    assert json.loads(book.read_text())["notes"] == {"Groceries": "milk, bread", "Empty": ""}  # nothing saved
