"""Helpers for policy tests: a configuration file with a policy, a sample's copy in a host, and
the call-log lines."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio

from cadmcp.daemon.launching import CONFIG_ENV
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.calllog import parse_line

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def host_on_copy(hosts: Any, folder: Path, sample: str, kind: str) -> Path:
    """Start a `kind` host on a copy of `samples/<sample>` in `folder`; the copy's path."""
    copy = folder / sample
    shutil.copy(SAMPLES / sample, copy)
    hosts.start(kind, str(copy))
    return copy


def policy_env(tmp_path: Path, policy: dict[str, Any], **extra: str) -> dict[str, str]:
    """The daemon environment of a configuration file holding only `policy`."""
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"policy": policy}))
    return {CONFIG_ENV: str(path), **extra}


def log_lines(method: str | None = None, pid: int | None = None) -> list[dict[str, Any]]:
    """Call-log lines of the test's processes (optionally one method, one process)."""
    folder = Path(os.environ[LOG_DIR_ENV])
    lines = []
    for path in sorted(folder.glob(f"log_{pid or '*'}_*.log")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            parts = raw.split(" ", 2)
            if len(parts) > 1 and (method is None or parts[1] == method):
                lines.append({**parse_line(raw), "file": path.name})
    return lines


def host_calls(pid: int, target: str) -> list[dict[str, Any]]:
    """The host's own log lines for calls of `target`: proof of what reached it."""
    return [line for line in log_lines("tools/call", pid) if line.get("target") == target]


async def wait_log_lines(
    method: str | None = None, count: int = 1, pid: int | None = None, timeout: float = 10.0
) -> list[dict[str, Any]]:
    """`log_lines(method, pid)` once at least `count` are written: a process writes a call's line
    on its log's writer thread after the answer has gone out, so a line may follow its answer."""
    with anyio.fail_after(timeout):
        while len(lines := log_lines(method, pid)) < count:
            await anyio.sleep(0.05)
    return lines


async def wait_host_calls(pid: int, target: str, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """`host_calls(pid, target)` once at least `count` are written (see `wait_log_lines`)."""
    with anyio.fail_after(timeout):
        while len(lines := host_calls(pid, target)) < count:
            await anyio.sleep(0.05)
    return lines
