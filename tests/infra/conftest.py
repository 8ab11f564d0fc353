"""Fixtures for the daemon's infrastructure tools: a real daemon with its own log and config."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cadmcp.daemon.launching import CONFIG_ENV
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.calllog import parse_line
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.conftest import WHOLE_VIEWS


@dataclass
class InfraEnv:
    """Where the daemon under test logs, reads its host configuration and writes stderr."""

    log_dir: Path
    config: Path
    stderr: Path
    extra: dict[str, str] = field(default_factory=dict)

    def configure_hosts(self, hosts: dict[str, Any]) -> None:
        self.config.write_text(json.dumps({"hosts": hosts}))

    def log_lines(self, pid: int) -> list[dict[str, Any]]:
        """Every line of process `pid`'s log files, parsed (call lines and routed log records)."""
        lines: list[dict[str, Any]] = []
        for path in sorted(self.log_dir.glob(f"log_{pid}_*.log")):
            for raw in path.read_text(encoding="utf-8").splitlines():
                stamp, kind, rest = raw.split(" ", 2)
                if kind in ("tools/call", "resources/read"):
                    lines.append(parse_line(raw))
                else:  # a routed log record: "<time> <level> <logger> <message>"
                    lines.append({"time": stamp, "method": kind, "text": rest})
        return lines


@pytest.fixture
def infra_env(runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InfraEnv:
    env = InfraEnv(tmp_path / "logs", tmp_path / "hosts.json", tmp_path / "daemon.stderr")
    env.configure_hosts({})
    monkeypatch.setenv(LOG_DIR_ENV, str(env.log_dir))  # hosts started by the `hosts` fixture log here too
    monkeypatch.setenv(CONFIG_ENV, str(env.config))
    return env


@pytest.fixture
def infra_daemon(runtime_dir: Path, infra_env: InfraEnv) -> Callable[..., Any]:
    """`async with infra_daemon() as session:` a real daemon process over stdio, modern era."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
            env={
                RUNTIME_DIR_ENV: str(runtime_dir),
                LOG_DIR_ENV: str(infra_env.log_dir),
                CONFIG_ENV: str(infra_env.config),
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                **WHOLE_VIEWS,
                **infra_env.extra,
            },
        )
        with infra_env.stderr.open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.discover()
                yield session

    return connect
