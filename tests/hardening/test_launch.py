"""launch_host never hangs, and hosts it launched never outlive the daemon, however it ends."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.daemon.policy.control import socket_path
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, pid_alive
from tests.core.helpers import structured, wait_gone

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


async def test_launches_in_a_row_with_the_semantic_layer_busy_never_hang(
    daemon_client: Any, tmp_path: Path
) -> None:
    """The daemon is multi-threaded (embedding, watchers); a fork that ran Python could deadlock."""
    drawings = []
    for n in range(6):
        drawing = tmp_path / f"plan{n}.dxf"
        shutil.copy(SAMPLES / "floorplan.dxf", drawing)
        drawings.append(drawing)
    launched: list[int] = []
    async with daemon_client(env={SEMANTIC_ENV: "on"}) as session:
        for n, drawing in enumerate(drawings):  # each new catalog keeps the embedding thread busy
            with anyio.fail_after(90):  # hang guard; 100 launches are timed in bench_faults
                answer = await structured(
                    session, "launch_host", {"filePath": str(drawing), "timeoutSeconds": 60}
                )
            assert answer["bridgeConnected"] and answer["phase"] == "ready", (n, answer)
            launched.append(answer["pid"])
        assert len(set(launched)) == len(drawings)
    assert all(wait_gone(pid, 15) for pid in launched), "attached hosts outlived the daemon"


def _launch_then(runtime_dir: Path, ending: str) -> tuple[list[int], int, int]:
    """Start a daemon (a raw stdio process), launch two attached hosts and a detached one, end it."""
    from tests.hardening.rawwire import RawDaemon

    daemon = RawDaemon(runtime_dir)
    pids = []
    for n, detach in enumerate((False, False, True)):
        daemon.send(daemon.call(n + 1, "launch_host", {"hostApp": "Demo", "detach": detach}))
        answer = daemon.answer(n + 1, timeout=90)
        assert answer is not None and not answer["result"].get("isError"), answer
        pids.append(answer["result"]["structuredContent"]["pid"])
    if ending == "SIGKILL":
        daemon.proc.kill()
    elif ending == "SIGTERM":
        daemon.proc.terminate()
    elif ending == "SIGINT":
        daemon.proc.send_signal(signal.SIGINT)
    else:  # the client closes stdin, as an AI client does when it quits
        assert daemon.proc.stdin is not None
        daemon.proc.stdin.close()
    daemon.proc.wait(30)
    return pids[:2], pids[2], daemon.proc.pid


@pytest.mark.parametrize("ending", ["SIGKILL", "SIGTERM", "SIGINT", "stdin closed"])
def test_attached_hosts_stop_however_the_daemon_ends(runtime_dir: Path, ending: str) -> None:
    attached, detached, daemon = _launch_then(runtime_dir, ending)
    try:
        for pid in attached:
            assert wait_gone(pid, 15), f"host {pid} outlived a daemon that ended by {ending}"
        assert pid_alive(detached), "the detached host stopped with the daemon"
        if ending != "SIGKILL":  # what it can clean up, it does: its approvals socket goes
            assert not socket_path(runtime_dir, daemon).exists(), f"ended by {ending}"
    finally:
        os.kill(detached, signal.SIGTERM)
        wait_gone(detached, 10)


def test_a_host_shutdown_survives_repeated_signals(runtime_dir: Path) -> None:
    """Nested SIGTERMs while the host stops must not deadlock it (it used to hang on a lock)."""
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime_dir)}
    for _ in range(5):
        host = subprocess.Popen([sys.executable, "-m", "cadmcp", "host", "demo"], env=env)
        deadline = time.monotonic() + 60
        while not any(p.name.endswith(f"_{host.pid}.sock") for p in runtime_dir.iterdir()):
            assert time.monotonic() < deadline and host.poll() is None
            time.sleep(0.05)
        host.send_signal(signal.SIGTERM)
        host.send_signal(signal.SIGTERM)
        assert host.wait(15) is not None
        assert not any(p.name.endswith(f"_{host.pid}.sock") for p in runtime_dir.iterdir())
