"""A host that hangs or talks garbage never blocks search or the other hosts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.wire.endpoints import endpoint_name
from tests.core.helpers import find_target, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _bad_endpoint(path: Path, behaviour: str) -> socket.socket:
    """A listening socket that accepts connections and then hangs or answers garbage."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if behaviour == "garbage":
                conn.sendall(b'\x00\x01 not json at all\n{"jsonrpc": "2.0", "id": 999, "result": 5}\n')
            # "hang": keep the connection open and say nothing

    threading.Thread(target=serve, daemon=True).start()
    return server


async def test_hanging_and_garbage_endpoints_are_isolated(
    hosts: Any, daemon_client: Any, runtime_dir: Path
) -> None:
    # Each fake endpoint needs a live PID of its own: park two sleeping processes.
    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in range(2)]
    fakes = [
        _bad_endpoint(runtime_dir / endpoint_name("Hang", "1", sleepers[0].pid), "hang"),
        _bad_endpoint(runtime_dir / endpoint_name("Garbage", "1", sleepers[1].pid), "garbage"),
    ]
    try:
        hosts.start("demo")
        async with daemon_client() as session:
            await wait_for_hosts(session, 1)  # while the bad endpoints are still being tried
            item = await find_target(session, "echo")
            assert item["hostApp"] == "Demo"
            with anyio.fail_after(20):
                while True:
                    listing = await structured(session, "list_host_instances")
                    states = {e["hostApp"]: e for e in listing["endpoints"]}
                    if all(states.get(app, {}).get("status") == "failed" for app in ("Hang", "Garbage")):
                        break
                    await anyio.sleep(0.2)
            assert states["Hang"]["error"] and states["Garbage"]["error"]
            assert [h["hostApp"] for h in listing["hosts"]] == ["Demo"]
    finally:
        for fake in fakes:
            fake.close()
        for proc in sleepers:
            proc.kill()
            proc.wait()


async def test_dead_endpoints_are_ignored_and_cleaned(daemon_client: Any, runtime_dir: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    leftover = runtime_dir / endpoint_name("Crashed", "1", proc.pid)
    leftover.touch()
    async with daemon_client() as session:
        with anyio.fail_after(10):
            while leftover.exists():
                await anyio.sleep(0.1)
        listing = await structured(session, "list_host_instances")
        assert listing["count"] == 0 and listing["endpoints"] == []
    assert os.path.exists(runtime_dir)
