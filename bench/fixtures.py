"""Set-up the benchmarks share: host entries over synthetic catalogs, real host processes and a
real daemon with an SDK client, a private log folder, and percentiles of timings (imported as
`fixtures` by the scripts run from this folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError as McpError

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints

DISCOVER_ATTEMPTS = 3
"""`server/discover` is asked this many times (each waits the SDK's 10 s) before giving up."""


def entry(
    key: HostKey,
    tools: list[dict[str, Any]],
    *,
    host_app: str = "Bench",
    version: str = "1",
    server_name: str = "",
    state: dict[str, Any] | None = None,
) -> HostEntry:
    """The daemon's entry of a host that lists `tools` (no resources, no endpoint)."""
    return HostEntry.build(
        key,
        host_app=host_app,
        version=version,
        endpoint="",
        protocol_version="",
        server_name=server_name,
        tools=tools,
        resources=[],
        templates=[],
        state=state,
    )


def private_logs(prefix: str = "cadmcp-bench-logs") -> Path:
    """Point the call logs of this process (and of what it starts) at a fresh temporary folder,
    unless the caller chose one already; the folder used."""
    os.environ.setdefault(LOG_DIR_ENV, tempfile.mkdtemp(prefix=prefix))
    return Path(os.environ[LOG_DIR_ENV])


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values`, as the nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start_host(runtime: Path, *args: str) -> subprocess.Popen[bytes]:
    """A real host process (`cadmcp host ARGS`) in `runtime`, once its endpoint exists."""
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", *args], env=env, stderr=subprocess.DEVNULL
    )
    while not any(ep.pid == proc.pid for ep in list_endpoints(runtime)):
        time.sleep(0.05)
    return proc


@asynccontextmanager
async def daemon(
    runtime: Path, env: dict[str, str] | None = None, *, era: str = "modern", **kwargs: Any
) -> AsyncIterator[ClientSession]:
    """A real daemon over stdio for `runtime`'s hosts, and an SDK client session to it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
        env={**os.environ, RUNTIME_DIR_ENV: str(runtime), "CADMCP_SEARCH_SEMANTIC": "off", **(env or {})},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write, **kwargs) as session:
        if era == "modern":
            for attempt in range(DISCOVER_ATTEMPTS):  # a loaded machine may start the daemon slowly
                try:
                    await session.discover()
                    break
                except McpError:
                    if attempt == DISCOVER_ATTEMPTS - 1:
                        raise
        else:
            await session.initialize()
        yield session


async def find(session: ClientSession, target: str, host_app: str | None = None) -> dict[str, Any]:
    """The search item of `target` (on `host_app`), waiting until a host offers it."""
    while True:
        found = await session.call_tool("search_dynamic", {"query": target, "limit": 32})
        items = (found.structured_content or {}).get("items", [])
        item = next((i for i in items if i["target"] == target and host_app in (None, i["hostApp"])), None)
        if item is not None:
            return item
        await anyio.sleep(0.1)
