"""Faults with real processes: stopped, wedged and killed hosts, a killed daemon, churn, junk sockets."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.core.helpers import call, find_target, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"
COUNT_LINES = "len(msp.query('LINE'))"


def _dxf_copy(tmp_path: Path) -> Path:
    target = tmp_path / "plan.dxf"
    shutil.copy(SAMPLE, target)
    return target


async def _run(session: Any, cap: dict[str, Any], code: str) -> Any:
    return await call(session, "invoke_dynamic", {"id": cap["id"], "arguments": {"code": code}})


async def _value(session: Any, cap: dict[str, Any], code: str) -> str:
    result = await _run(session, cap, code)
    assert not result.is_error, result.content[0].text
    return result.content[0].text.removeprefix("Result: ")


async def test_a_stopped_host_fails_its_calls_within_seconds_and_comes_back_after(
    hosts: Any, daemon_client: Any
) -> None:
    victim = hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        outcome: dict[str, Any] = {}

        async def run_slow() -> None:
            outcome["result"] = await call(
                session, "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 15}}
            )
            outcome["at"] = anyio.current_time()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_slow)
            await anyio.sleep(0.5)
            os.kill(victim.pid, signal.SIGSTOP)
            stopped_at = anyio.current_time()
            with anyio.fail_after(30):  # hang guard; the figure is in bench_faults
                while "result" not in outcome:
                    await anyio.sleep(0.1)
        try:
            body = outcome["result"].structured_content
            assert body["type"] == "invocation_failed" and body["executionStarted"] is True
            assert "stopped answering" in body["message"]
            assert outcome["at"] - stopped_at < 20
            listing = await structured(session, "list_host_instances")
            assert listing["count"] == 0
            (state,) = listing["endpoints"]
            assert state["status"] in ("failed", "connecting")
        finally:
            os.kill(victim.pid, signal.SIGCONT)
        await wait_for_hosts(session, 1, timeout=60)
        echo = await find_target(session, "echo")
        with anyio.fail_after(30):
            while True:  # the orphaned `slow` still holds the application thread for a while
                result = await call(
                    session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "back"}}
                )
                if not result.is_error:
                    break
                assert result.structured_content["type"] == "host_busy", result.structured_content
                assert result.structured_content["running"] == "slow"
                await anyio.sleep(0.5)
        assert result.content[0].text == "back"


async def test_a_cancelled_call_stops_the_script_rolls_it_back_and_frees_the_host(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    hosts.start("dxf", str(_dxf_copy(tmp_path)))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        run = await find_target(session, "execute_python_code")
        before = await _value(session, run, COUNT_LINES)
        slow_edit = (
            "import time\nfor i in range(300):\n    msp.add_line((0, i), (10, i))\n    time.sleep(0.1)\n"
        )
        with anyio.move_on_after(2.0):  # the client gives up: the SDK sends notifications/cancelled
            await _run(session, run, slow_edit)
        with anyio.fail_after(10):  # the application thread is free again at once, not in 28 s
            after = await _value(session, run, COUNT_LINES)
        assert after == before
        history = await find_target(session, "navigate_history")
        undo = await call(
            session, "invoke_dynamic", {"id": history["id"], "arguments": {"direction": "back"}}
        )
        assert undo.structured_content["navigated"] == 0  # the cancelled run left no step behind


async def test_a_wedged_host_answers_host_busy_and_can_be_restarted(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = _dxf_copy(tmp_path)
    wedged = hosts.start("dxf", str(drawing), "--exec-timeout", "1")
    stubborn = (
        "import time\n"
        "while True:\n"
        "    try:\n"
        "        time.sleep(0.05)\n"
        "    except BaseException:\n"
        "        pass\n"
    )
    async with daemon_client() as session:
        listing = await wait_for_hosts(session, 1)
        instance = listing["hosts"][0]["hostInstanceId"]
        run = await find_target(session, "execute_python_code")
        context = await find_target(session, "dxf://model/context")
        stuck: dict[str, Any] = {}

        async def start_stubborn() -> None:
            stuck["result"] = await _run(session, run, stubborn)

        async with anyio.create_task_group() as tg:
            tg.start_soon(start_stubborn)
            with anyio.fail_after(40):
                while True:
                    read = await call(session, "invoke_dynamic", {"id": context["id"]})
                    if read.is_error and read.structured_content["type"] == "host_busy":
                        break
                    await anyio.sleep(0.5)
            busy = read.structured_content
            assert busy["running"] == "execute_python_code" and busy["since"].endswith("Z")
            assert busy["runningSeconds"] >= busy["stopRequestedSeconds"] >= 10
            assert busy["recovery"]["arguments"] == {"restartHostInstanceId": instance}
            with anyio.fail_after(10):  # the host publishes it, the daemon re-lists
                while "wedged" not in (await structured(session, "list_host_instances"))["hosts"][0]["state"]:
                    await anyio.sleep(0.2)
            listing = await structured(session, "list_host_instances")
            assert listing["hosts"][0]["state"]["wedged"]["running"] == "execute_python_code"
            with anyio.fail_after(5):  # the stuck call itself is answered too, not left waiting
                while "result" not in stuck:
                    await anyio.sleep(0.1)
            restarted = await structured(session, "launch_host", {"restartHostInstanceId": instance})
        assert stuck["result"].structured_content["type"] == "host_busy", stuck["result"]
        assert stuck["result"].structured_content["recovery"]["arguments"] == {
            "restartHostInstanceId": instance
        }
        assert restarted["restartedFrom"]["pid"] == wedged.pid
        assert restarted["restartedFrom"]["stopped"] in ("stopped", "killed")
        assert restarted["pid"] != wedged.pid and restarted["phase"] == "ready"
        assert wedged.wait(5) is not None
        fresh = await find_target(session, "execute_python_code", hostInstanceId=restarted["hostInstanceId"])
        assert (await _value(session, fresh, "1 + 1")) == "2"


async def test_a_killed_daemon_leaves_the_host_serving_and_the_drawing_consistent(
    hosts: Any, daemon_client: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    host = hosts.start("dxf", str(_dxf_copy(tmp_path)))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        run = await find_target(session, "execute_python_code")
        before = int(await _value(session, run, COUNT_LINES))
        daemon_pid = (await structured(session, "list_machines"))["machines"][0]["daemonPid"]
        edit = "import time\nfor i in range(40):\n    msp.add_line((0, i), (5, i))\n    time.sleep(0.05)\n"

        async def edit_then_die() -> None:
            with pytest.raises(Exception):  # noqa: B017 - the daemon vanishes under the call
                await _run(session, run, edit)

        with anyio.move_on_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(edit_then_die)
                await anyio.sleep(0.5)
                os.kill(daemon_pid, signal.SIGKILL)
    assert host.poll() is None  # the user's host stays
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        run = await find_target(session, "execute_python_code")
        after = int(await _value(session, run, COUNT_LINES))
        assert after in (before, before + 40)  # all of the script or none of it, never a part


def _daemon_figures(pid: int) -> tuple[int, int, int]:
    """Open descriptors, threads and resident KiB of a process (Linux /proc)."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
    rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    return fds, threads, rss


async def test_host_churn_while_searching_leaks_nothing(hosts: Any, daemon_client: Any) -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read descriptor, thread and memory figures")
    anchor = hosts.start("demo", "--app", "Anchor")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        daemon_pid = (await structured(session, "list_machines"))["machines"][0]["daemonPid"]
        errors: list[str] = []
        done = anyio.Event()

        async def keep_searching() -> None:
            while not done.is_set():
                answer = await structured(session, "search_dynamic", {"query": "echo text"})
                if not any(i["hostApp"] == "Anchor" for i in answer["items"]):
                    errors.append("anchor host missing from search")
                await anyio.sleep(0.02)

        async def churn(rounds: int) -> None:
            for n in range(rounds):
                proc = hosts.spawn("demo", "--app", f"Churn{n % 3}")
                hosts.wait_ready(proc)
                await anyio.sleep(0.3)
                proc.send_signal(signal.SIGTERM)
                proc.wait(10)

        await churn(3)  # warm: first connections allocate what later ones reuse
        await anyio.sleep(1.5)
        baseline = _daemon_figures(daemon_pid)
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_searching)
            await churn(20)
            await anyio.sleep(2.0)
            done.set()
        await wait_for_hosts(session, 1)
        after = _daemon_figures(daemon_pid)
        assert not errors, errors[:3]
        assert after[0] <= baseline[0] + 2, (baseline, after)  # descriptors
        assert after[1] <= baseline[1] + 2, (baseline, after)  # threads
        assert after[2] <= baseline[2] + 40 * 1024, (baseline, after)  # resident KiB
        assert anchor.poll() is None
