"""The person's local door into the daemon: a Unix socket in the runtime directory (mode 0600).

One JSON line in, one JSON line out: `{"op": "list"}` answers the pending confirmations,
`{"op": "answer", "approvalId": ..., "answer": "accept"|"decline", "by": ..., "wait": seconds}`
answers one (with `wait`, a yes answers once the call ended, saying what it did: `outcome`),
`{"op": "checkpoints"}` lists what agents changed, `{"op": "revert", "callId": ..., "since":
true|false}` reverts a call (or everything since it) on every host it touched, `{"op": "show",
"pattern": ..., "caller": "local"|"remote"}` answers `cadmcp policy show` from the live
configuration over every capability this daemon knows (other machines' included), and
`{"op": "dashboard"}` answers a one-time login link to the dashboard (started on demand).
Only the user's own processes reach the runtime directory (0700). Agents never get this
door from the daemon's MCP surface, so an agent cannot confirm its own calls through it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.policy.explain import MAX_PATTERN, show
from cadmcp.daemon.policy.gate import Gate
from cadmcp.wire.endpoints import pid_alive

PREFIX = "cadmcp-approvals-"
MAX_LINE = 64 * 1024
REVERT_SECONDS = 300.0
DashboardOp = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def socket_path(directory: Path, pid: int | None = None) -> Path:
    """Where the daemon of `pid` (this one by default) listens."""
    return directory / f"{PREFIX}{pid or os.getpid()}.sock"


def doors(directory: Path) -> list[Path]:
    """Every approval socket in the runtime directory (one per running daemon). The socket of a
    daemon that is gone (killed before it could remove it) is removed here."""
    found = []
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if not (path.name.startswith(PREFIX) and path.suffix == ".sock"):
                continue
            pid = path.name[len(PREFIX) : -len(".sock")]
            if pid.isdigit() and not pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            found.append(path)
    return sorted(found)


async def handle(
    gate: Gate,
    directory: HostDirectory,
    request: Any,
    dashboard: DashboardOp | None = None,
    gateway: Any = None,
) -> dict[str, Any]:
    """One request of the door, answered (`gateway`: the daemon's, to show other machines' policies)."""
    queue = gate.queue
    if not isinstance(request, dict):
        return {"ok": False, "error": 'Send a JSON object such as {"op": "list"}.'}
    op = request.get("op")
    if op == "list":
        return {"ok": True, "pid": os.getpid(), "pending": queue.pending()}
    if op == "answer":
        approval_id, answer, by = request.get("approvalId"), request.get("answer"), request.get("by")
        if not isinstance(approval_id, str) or not isinstance(answer, str):
            return {"ok": False, "error": "answer needs approvalId and answer (accept or decline)."}
        done = queue.answer(approval_id, answer, by if isinstance(by, str) and by else "approval queue")
        wait = request.get("wait")
        if done.get("ok") and isinstance(wait, int | float) and wait > 0 and queue.reported(approval_id):
            done["outcome"] = await queue.outcome(approval_id, float(wait))  # None: still running
        return done
    if op == "checkpoints":
        look = request.get("look") is not False  # a page's refresh asks no host (see listing)
        listed = await gate.checkpoints.listing(directory, look=look)
        return {"ok": True, "pid": os.getpid(), "checkpoints": listed}
    if op == "revert":
        call_id = request.get("callId")
        if not isinstance(call_id, str) or len(call_id) > 40:
            return {"ok": False, "error": "revert needs callId (from checkpoints) and since (true/false)."}
        since, save = request.get("since") is True, request.get("save") is True
        return await gate.checkpoints.revert(directory, call_id, since, save)
    if op == "dashboard" and dashboard is not None:
        return await dashboard(request)
    if op == "show":
        pattern, caller = request.get("pattern", "*"), request.get("caller", "local")
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN or caller not in ("local", "remote"):
            return {
                "ok": False,
                "error": f"show needs a pattern (at most {MAX_PATTERN} characters) and caller.",
            }
        entries = sorted(directory.entries.values(), key=lambda e: (e.machine or "", e.host_app, e.key.pid))
        answer = {"ok": True, "pid": os.getpid(), "lines": show(gate.policy, pattern, entries, caller)}
        if gateway is not None:
            answer["machines"] = await gateway.policies(pattern)
        return answer
    return {
        "ok": False,
        "error": f"Unknown op {str(op)[:40]!r}; use list, answer, checkpoints, revert, show or dashboard.",
    }


async def serve(
    gate: Gate,
    hosts: HostDirectory,
    dashboard: DashboardOp | None = None,
    gateway: Any = None,
    *,
    task_status: anyio.abc.TaskStatus[Path] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on this daemon's socket until cancelled; the file goes on the way out."""
    path = socket_path(hosts.directory)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = await anyio.create_unix_listener(path)
    os.chmod(path, 0o600)

    async def one(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(10):
                    line = await BufferedByteReceiveStream(stream).receive_until(b"\n", MAX_LINE)
                with anyio.fail_after(REVERT_SECONDS):
                    answer = await handle(gate, hosts, json.loads(line), dashboard, gateway)
            except (ValueError, anyio.IncompleteRead, anyio.DelimiterNotFound, TimeoutError):
                answer = {"ok": False, "error": "Send one JSON object on one line (at most 64 KiB)."}
            with contextlib.suppress(Exception):
                await stream.send(json.dumps(answer).encode() + b"\n")

    try:
        async with listener:
            task_status.started(path)
            await listener.serve(one)
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


async def ask(path: Path, request: dict[str, Any], timeout: float = 310.0) -> dict[str, Any]:
    """Send one request to a daemon's approval socket and read its answer."""
    with anyio.fail_after(timeout):
        stream = await anyio.connect_unix(path)
        async with stream:
            await stream.send(json.dumps(request).encode() + b"\n")
            line = await BufferedByteReceiveStream(stream).receive_until(b"\n", 16 * 1024 * 1024)
    answer = json.loads(line)
    return answer if isinstance(answer, dict) else {"ok": False, "error": "not an object"}
