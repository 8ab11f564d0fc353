"""Whether a local host process is working, read from the kernel rather than from the host.

A host's MCP I/O thread answers the daemon's probes, but only while it can take the GIL: one
long C call on the application thread (an OpenCASCADE tessellation, a big recompute) keeps it
from answering for as long as the call runs. The process's own CPU clock tells such a host
(running, its CPU time advancing) from a stopped one (SIGSTOP, a debugger) or a hung one (no
CPU progress). Linux only (`/proc`); elsewhere `sample` says nothing and probes alone decide.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

BUSY_SHARE = 0.02
"""The least share of one core a host must have used since the last sample to count as working
(an idle or wedged host uses well under 1 %; a C call on a loaded machine still gets far more)."""

NOT_RUNNING = frozenset("TtZXx")
"""`/proc/<pid>/stat` states of a process that cannot be working: stopped, traced, zombie, dead."""


@dataclass(frozen=True)
class Sample:
    """One reading of a process: its scheduler state letter and CPU seconds used so far."""

    state: str
    cpu: float
    at: float


def sample(pid: int, at: float) -> Sample | None:
    """Read `/proc/<pid>/stat` (None when there is no such file: another system, or no process)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or parentheses itself
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        return Sample(fields[0].decode(), ticks / _ticks_per_second(), at)
    except (IndexError, ValueError):
        return None


def working(before: Sample | None, now: Sample | None) -> bool:
    """Whether the process ran and did work between two samples (False when either is missing)."""
    if before is None or now is None or now.state in NOT_RUNNING:
        return False
    elapsed = now.at - before.at
    return elapsed > 0 and now.cpu - before.cpu >= BUSY_SHARE * elapsed


def _ticks_per_second() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - Linux always has it
        return 100
