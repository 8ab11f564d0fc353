"""The daemon over streamable HTTP, bound to 127.0.0.1, reached with the user's bearer token."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from cadmcp.daemon import httpauth
from cadmcp.userdirs import CONFIG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.core.helpers import find_target, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def start_http_daemon(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str]:
    """`cadmcp daemon --http --port 0 ...`; returns the process and the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0", "--scan-interval", "0.5", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if " at " not in first:
        proc.kill()
        said = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"daemon did not announce a URL: {first!r} {said}")
    return proc, first.split(" at ", 1)[1].split()[0]


@pytest.fixture
def http_daemon(
    hosts: Any, runtime_dir: Path, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """A demo host and an HTTP daemon in front of it: (process, URL, token)."""
    hosts.start("demo")
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime_dir), CONFIG_DIR_ENV: str(tmp_path / "config")}
    daemon, url = start_http_daemon(env)
    try:
        yield daemon, url, httpauth.read_token(tmp_path / "config" / httpauth.TOKEN_FILE)
    finally:
        if daemon.poll() is None:
            daemon.terminate()
        daemon.wait(10)


async def test_http_daemon_prints_its_url_and_serves_search_and_invoke(http_daemon: Any) -> None:
    _, url, token = http_daemon
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    async with httpauth.connect(url, token=token) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        await wait_for_hosts(session, 1)
        item = await find_target(session, "echo")
        args = {"id": item["id"], "arguments": {"text": "over http"}}
        result = await session.call_tool("invoke_dynamic", args)
        assert result.content[0].text == "over http"


async def test_ctrl_c_stops_the_daemon_soon_even_with_a_call_in_flight(http_daemon: Any) -> None:
    daemon, url, token = http_daemon
    async with httpauth.connect(url, token=token) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        async with anyio.create_task_group() as tg:

            async def long_call() -> None:
                with anyio.move_on_after(90), contextlib.suppress(Exception):  # the daemon goes away
                    args = {"id": slow["id"], "arguments": {"seconds": 60}}
                    await session.call_tool("invoke_dynamic", args)

            tg.start_soon(long_call)
            await anyio.sleep(1.5)  # the call is running in the host
            pressed = time.monotonic()
            daemon.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await anyio.to_thread.run_sync(daemon.wait, 30)
            took = time.monotonic() - pressed
            tg.cancel_scope.cancel()
    assert daemon.poll() is not None and took < 15, f"the daemon took {took:.0f} s to stop (or never did)"
    said = daemon.stderr.read() if daemon.stderr else ""
    assert "stopping" in said, said
    assert "Traceback" not in said, said
