"""Scripts that misbehave: the host stays alive, the drawing is rolled back, the agent is told."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.core.helpers import call, find_target, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"
TOUCH = "msp.add_line((0, 0), (1, 1))\n"
"""Every case first changes the drawing, so a missing rollback shows."""

CASES: list[tuple[str, str, str | tuple[str, ...]]] = [
    ("infinite loop", "while True:\n    pass\n", "[TIMEOUT]"),
    ("long C call", "import time\ntime.sleep(1e6)\n", "[TIMEOUT]"),
    ("catastrophic regex", "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n", "[TIMEOUT]"),
    ("sys.exit", "import sys\nsys.exit(3)\n", "SystemExit"),
    ("raise SystemExit", "raise SystemExit('bye')\n", "SystemExit"),
    ("KeyboardInterrupt", "raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    ("os._exit", "import os\nos._exit(1)\n", "os._exit() would end the host"),
    ("os.abort", "import os\nos.abort()\n", "os.abort() would end the host"),
    # zeroing 1 GiB may outlast the 2 s limit on a busy machine: either way the host lives
    (
        "1 GiB allocation",
        "data = bytearray(1 << 30)\nraise ValueError(len(data))\n",
        ("ValueError: 1073741824", "[TIMEOUT]"),
    ),
]


@pytest.fixture
async def dxf_session(hosts: Any, daemon_client: Any, tmp_path: Path) -> Any:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLE, drawing)
    host = hosts.start("dxf", str(drawing), "--exec-timeout", "2")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        yield session, host


async def _count(session: Any, run: dict[str, Any]) -> int:
    result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "len(msp)"}})
    return int(result.content[0].text.removeprefix("Result: "))


async def test_each_runaway_or_fatal_script_is_rolled_back_and_the_host_lives(dxf_session: Any) -> None:
    session, host = dxf_session
    run = await find_target(session, "execute_python_code")
    before = await _count(session, run)
    for name, code, words in CASES:
        result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": TOUCH + code}})
        text = result.content[0].text
        assert result.is_error, (name, text)
        assert any(w in text for w in ((words,) if isinstance(words, str) else words)), (name, text[:300])
        assert "[ROLLBACK]" in text, (name, text[:300])
        assert host.poll() is None, name
        assert await _count(session, run) == before, name
    listing = await structured(session, "list_host_instances")
    assert listing["hosts"][0]["pid"] == host.pid and "wedged" not in listing["hosts"][0].get("state", {})


async def test_fifty_megabytes_of_output_come_back_capped(dxf_session: Any) -> None:
    session, _host = dxf_session
    run = await find_target(session, "execute_python_code")
    code = "print('x' * (50 * 1024 * 1024))\n'done'"
    result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": code}})
    text = result.content[0].text
    assert not result.is_error
    assert len(text) < 250_000 and "more characters of output dropped" in text and "Result: 'done'" in text


async def test_a_huge_final_value_is_summarised(dxf_session: Any) -> None:
    session, _host = dxf_session
    run = await find_target(session, "execute_python_code")
    result = await call(
        session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "list(range(10_000_000))"}}
    )
    text = result.content[0].text
    assert not result.is_error and len(text) < 25_000 and text.endswith("...]")
