"""A stdio server's process: started in a kill scope of its own, stopped as the MCP spec says.

The proxy reads and writes the server's pipes itself (`cadmcp.wire.sockets.message_streams`, the
line reader every connection of cadmcp's uses: lines are bounded, long ones parsed off the event
loop); the MCP SDK's stdio client is not used because it joins a long line chunk by chunk, in
time that grows with the square of its length, on the event loop (a 30 MB answer held every other
call of the server for seconds). What the SDK decides for a server's process is kept: the
environment it inherits, a new process group (a Job Object on Windows) and the shutdown order
(stdin closed, a grace period, then the whole tree terminated).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream
from anyio.streams.stapled import StapledByteStream
from mcp.client.stdio import get_default_environment

log = logging.getLogger("cadmcp.foreign")

EXIT_GRACE = 2.0
"""Seconds a server has to exit once its stdin is closed, before its process tree is terminated."""
KILL_GRACE = 2.0
"""Seconds the terminated tree has before it is killed, and then before it is abandoned."""
_EXIT_POLL = 0.01


@dataclass(frozen=True)
class ServerPipes:
    """A started server's pipes: stdin and stdout as one byte stream, stderr beside it."""

    stream: StapledByteStream
    stderr: ByteReceiveStream | None
    pid: int


@contextlib.asynccontextmanager
async def server_process(
    command: str, args: list[str], env: dict[str, str] | None, cwd: str | Path | None
) -> AsyncIterator[ServerPipes]:
    """Start the server; on exit its stdin is closed, and a server still running after
    `EXIT_GRACE` is terminated with everything it started. Its stderr must be read (a full pipe
    stops the server). OSError when the command cannot be started."""
    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(f"its folder (cwd) {cwd} does not exist; fix cwd in its entry")
    full_env = get_default_environment() | (env or {})
    if sys.platform == "win32":  # pragma: no cover - the SDK's Windows helpers, as its client uses them
        from mcp.os.win32.utilities import create_windows_process, get_windows_executable_command

        command = await anyio.to_thread.run_sync(get_windows_executable_command, command)
        process: Any = await create_windows_process(command, args, full_env, subprocess.PIPE, cwd)  # type: ignore[arg-type]
    else:
        process = await anyio.open_process(
            [command, *args], env=full_env, stderr=subprocess.PIPE, cwd=cwd, start_new_session=True
        )
    pipes = ServerPipes(
        StapledByteStream(process.stdin, process.stdout), getattr(process, "stderr", None), process.pid
    )
    try:
        yield pipes
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, pipes)


async def _stop(process: Any, pipes: ServerPipes) -> None:
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await pipes.stream.send_stream.aclose()
    if not await _exited(process, EXIT_GRACE):
        if sys.platform == "win32":  # pragma: no cover
            from mcp.os.win32.utilities import terminate_windows_process_tree

            await terminate_windows_process_tree(process)
        else:
            from mcp.os.posix.utilities import terminate_posix_process_tree

            await terminate_posix_process_tree(process, KILL_GRACE)
        if not await _exited(process, KILL_GRACE):
            log.warning("the server's process %d is still running after it was killed; left", process.pid)
    if sys.platform == "win32":  # pragma: no cover
        from mcp.os.win32.utilities import close_process_job

        close_process_job(process)
    for pipe in (pipes.stream.receive_stream, pipes.stderr):  # a child it left may hold them open
        if pipe is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await pipe.aclose()


async def _exited(process: Any, within: float) -> bool:
    """Whether the process ended within ``within`` seconds (its return code polled: waiting for it
    would also wait for its pipes, which a child it started may hold open)."""
    deadline = anyio.current_time() + within
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_EXIT_POLL)
    return True
