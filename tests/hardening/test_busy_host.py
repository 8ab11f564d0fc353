"""A host whose application thread holds the GIL in one long C call is slow, not gone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.core.helpers import call, find_target, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"
HOLD = (
    "import time\n"
    "n = 1 << 20\n"
    "while True:  # grow one C call (a range sum never lets the GIL go) until it holds it 10 s\n"
    "    started = time.monotonic()\n"
    "    sum(range(n))\n"
    "    held = time.monotonic() - started\n"
    "    if held > 10:\n"
    "        break\n"
    "    n *= 2\n"
    "round(held, 1)\n"
)
"""A script whose last C call holds the GIL past the daemon's two missed probes (8.5 s)."""


async def test_a_host_holding_the_gil_in_a_long_c_call_is_kept_and_its_call_answers(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLE, drawing)
    host = hosts.start("dxf", str(drawing))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        run = await find_target(session, "execute_python_code")
        with anyio.fail_after(120):  # hang guard only
            result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": HOLD}})
        assert not result.is_error, result.content[0].text
        held = float(result.content[0].text.removeprefix("Result: "))
        assert held > 10
        listing = await structured(session, "list_host_instances")
        assert listing["count"] == 1, listing
        (state,) = listing["endpoints"]
        assert state["status"] == "connected" and state.get("error") is None, state
        echo = await find_target(session, "execute_python_code")
        assert echo["id"] == run["id"]  # the same id still reaches the same host
        again = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "1 + 1"}})
        assert again.content[0].text.removeprefix("Result: ") == "2", again.content[0].text
    assert host.poll() is None


async def test_a_host_holding_the_gil_without_cpu_progress_still_fails_its_call_within_seconds(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLE, drawing)
    hosts.start("dxf", str(drawing))
    # libc's sleep called through PyDLL keeps the GIL: the host is wedged, using no CPU
    wedge = "import ctypes\nctypes.PyDLL(None).sleep(25)\n"
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        run = await find_target(session, "execute_python_code")
        started = anyio.current_time()
        with anyio.fail_after(60):  # hang guard only
            result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": wedge}})
        body = result.structured_content
        assert body["type"] == "invocation_failed" and "stopped answering" in body["message"], body
        assert anyio.current_time() - started < 20  # cut by the probes, not when the sleep ends
        meanwhile = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "1"}})
        body = meanwhile.structured_content  # still asleep: not connected, but not called gone
        assert body["reason"] == "host_disconnected" and "still runs" in body["message"], body
        await wait_for_hosts(session, 1, timeout=60)  # back once it answers again
        again = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "1 + 1"}})
        assert again.content[0].text.removeprefix("Result: ") == "2", again.content[0].text
