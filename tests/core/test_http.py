"""The daemon over streamable HTTP, bound to 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.core.helpers import find_target, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_http_daemon_serves_search_and_invoke(hosts: Any, runtime_dir: Path) -> None:
    hosts.start("demo")
    port = _free_port()
    daemon = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", str(port), "--scan-interval", "0.5"],
        env={**os.environ, RUNTIME_DIR_ENV: str(runtime_dir)},
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.discover()
            await wait_for_hosts(session, 1)
            item = await find_target(session, "echo")
            result = await session.call_tool(
                "invoke_dynamic", {"id": item["id"], "arguments": {"text": "over http"}}
            )
            assert result.content[0].text == "over http"
    finally:
        daemon.terminate()
        daemon.wait(10)
