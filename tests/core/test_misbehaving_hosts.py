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
from tests.core.helpers import call, find_target, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


JUNK = {
    "hang": b"",  # accepts and says nothing
    "garbage": b'\x00\x01 not json at all\n{"jsonrpc": "2.0", "id": 999, "result": 5}\n',
    "random": None,  # random bytes, new ones for every connection
    "close": None,  # accepts and closes at once
}


def _bad_endpoint(path: Path, behaviour: str) -> socket.socket:
    """A listening socket that accepts connections and then misbehaves as `JUNK[behaviour]` says."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if behaviour == "close":
                conn.close()
            elif behaviour == "random":
                conn.sendall(os.urandom(4096) + b"\n")
            elif JUNK[behaviour]:
                conn.sendall(JUNK[behaviour])

    threading.Thread(target=serve, daemon=True).start()
    return server


async def test_junk_endpoints_are_listed_as_failed_and_ignored(
    hosts: Any, daemon_client: Any, runtime_dir: Path
) -> None:
    # Each fake endpoint needs a live PID of its own: park sleeping processes.
    kinds = [*JUNK, "bytes"]
    sleepers = {
        kind: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for kind in kinds
    }
    fakes = [
        _bad_endpoint(runtime_dir / endpoint_name(kind.capitalize(), "1", sleepers[kind].pid), kind)
        for kind in JUNK
    ]
    (runtime_dir / endpoint_name("Bytes", "1", sleepers["bytes"].pid)).write_bytes(os.urandom(256))
    try:
        hosts.start("demo")
        async with daemon_client() as session:
            await wait_for_hosts(session, 1)  # while the bad endpoints are still being tried
            item = await find_target(session, "echo")
            assert item["hostApp"] == "Demo"
            with anyio.fail_after(30):
                while True:
                    listing = await structured(session, "list_host_instances")
                    states = {e["hostApp"]: e for e in listing["endpoints"]}
                    if all(states.get(k.capitalize(), {}).get("status") == "failed" for k in kinds):
                        break
                    await anyio.sleep(0.2)
            assert all(states[k.capitalize()]["error"] for k in kinds)
            assert [h["hostApp"] for h in listing["hosts"]] == ["Demo"]
            result = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": {"text": "ok"}})
            assert result.content[0].text == "ok"
    finally:
        for fake in fakes:
            fake.close()
        for proc in sleepers.values():
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
