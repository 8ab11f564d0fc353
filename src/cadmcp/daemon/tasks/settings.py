"""Task settings from the environment: when a call becomes a task, how long and how many are kept."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger("cadmcp.daemon")

AFTER_ENV = "CADMCP_TASK_AFTER"
"""Seconds a call may run before it becomes a task for a client that takes tasks (default 3)."""
TTL_ENV = "CADMCP_TASK_TTL"
"""Seconds a task is kept from its creation (default 3600); one still running then is stopped."""
MAX_ENV = "CADMCP_TASK_MAX"
"""Tasks kept at once (default 1000); the oldest finished ones make room first."""
RESULTS_MB_ENV = "CADMCP_TASK_RESULTS_MB"
"""MiB of finished tasks' results kept at once (default 512); the oldest finished ones go first."""
POLL_ENV = "CADMCP_TASK_POLL_MS"
"""The poll interval suggested to clients, in milliseconds (default 1000)."""


@dataclass(frozen=True, slots=True)
class TaskSettings:
    """How the daemon runs tasks (see the module's environment variables)."""

    after: float = 3.0
    ttl: float = 3600.0
    max_tasks: int = 1000
    result_bytes: int = 512 * 1024 * 1024
    poll_ms: int = 1000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> TaskSettings:
        """The settings in `environ`; a bad value is logged and its default used."""
        default = cls()
        return cls(
            after=_number(environ, AFTER_ENV, default.after, 0.0, 3600.0),
            ttl=_number(environ, TTL_ENV, default.ttl, 1.0, 7 * 24 * 3600.0),
            max_tasks=int(_number(environ, MAX_ENV, default.max_tasks, 1, 100_000)),
            result_bytes=int(
                _number(environ, RESULTS_MB_ENV, default.result_bytes / 2**20, 1, 65_536) * 2**20
            ),
            poll_ms=int(_number(environ, POLL_ENV, default.poll_ms, 50, 60_000)),
        )


def _number(environ: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        log.warning("%s=%r is not a number from %g to %g; using %g", name, raw[:40], low, high, default)
        return default
    return value
