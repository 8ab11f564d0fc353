"""`pulse` reads real processes: a busy one is working, an idle or a stopped one is not."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from cadmcp.daemon import pulse

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def _over(pid: int, seconds: float) -> bool:
    before = pulse.sample(pid, time.monotonic())
    time.sleep(seconds)
    return pulse.working(before, pulse.sample(pid, time.monotonic()))


def test_a_process_in_one_long_c_call_is_working_an_idle_or_stopped_one_is_not() -> None:
    busy = _child("sum(range(10**11))")  # one C call: holds the GIL, burns CPU
    idle = _child("import time; time.sleep(60)")
    try:
        time.sleep(0.3)
        assert _over(busy.pid, 1.5)
        assert not _over(idle.pid, 1.5)
        busy.send_signal(signal.SIGSTOP)
        time.sleep(0.1)
        stopped = pulse.sample(busy.pid, time.monotonic())
        assert stopped is not None and stopped.state == "T"
        assert not _over(busy.pid, 1.0)
    finally:
        for proc in (busy, idle):
            proc.kill()
            proc.wait()
    assert pulse.sample(busy.pid, time.monotonic()) is None  # reaped: no such process
