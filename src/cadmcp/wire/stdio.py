"""MCP over this process's stdin/stdout, with the same line handling as the socket transport.

Differences from the SDK's `stdio_server`, and why:
- a line the parser refuses is answered to its request id (`cadmcp.wire.inbound`) instead of
  being dropped, and over-long lines are skipped without being held in memory;
- stdin is read without a worker thread where the platform allows (a thread blocked in
  `read()` would hold the process open after Ctrl-C until the client wrote again).

While serving, fd 0 reads the null device and fd 1 writes to stderr, so stray prints and
child processes never corrupt the protocol stream; both are restored on exit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.stapled import StapledByteStream

from cadmcp.wire.sockets import StreamPair, message_streams

CHUNK = 256 * 1024


class _FdReceiveStream(anyio.abc.ByteReceiveStream):
    """Reads a pipe or terminal through the event loop (non-blocking fd + readiness wait)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._polled = _make_nonblocking(fd)

    async def receive(self, max_bytes: int = CHUNK) -> bytes:
        while True:
            if self._polled:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    try:
                        await anyio.wait_readable(self._fd)
                    except (OSError, ValueError, NotImplementedError):
                        self._polled = False  # e.g. a regular file: epoll refuses it
                        os.set_blocking(self._fd, True)
                    continue
            else:
                data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes, abandon_on_cancel=True)
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        _release(self._fd)


class _FdSendStream(anyio.abc.ByteSendStream):
    """Writes to a pipe, waiting for room through the event loop when it is full."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._polled = _make_nonblocking(fd)

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise anyio.BrokenResourceError from None
            view = view[written:]

    async def aclose(self) -> None:
        _release(self._fd)


def _make_nonblocking(fd: int) -> bool:
    """Switch `fd` to non-blocking I/O; False where that is not possible."""
    try:
        os.set_blocking(fd, False)
    except OSError:
        return False
    return True


def _release(fd: int) -> None:
    """Close our copy, leaving the shared file description blocking (a terminal is shared with the shell)."""
    with contextlib.suppress(OSError):
        os.set_blocking(fd, True)
    with contextlib.suppress(OSError):
        os.close(fd)


def _claim(fd: int, replacement: int) -> int:
    """Move `fd` to a private close-on-exec copy and point `fd` at `replacement`."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(replacement, fd)
    return private


@asynccontextmanager
async def stdio_streams(max_line: int | None = None) -> AsyncIterator[StreamPair]:
    """The (read, write) pair for an MCP server session on this process's stdio; lines over
    `max_line` bytes are skipped unparsed and answered."""
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        private_in = _claim(0, null)
        private_out = _claim(1, 2)
    finally:
        os.close(null)
    stream = StapledByteStream(_FdSendStream(private_out), _FdReceiveStream(private_in))
    try:
        async with message_streams(stream, role="server", max_line=max_line) as pair:
            yield pair
    finally:
        with contextlib.suppress(OSError):
            os.dup2(2, 1)  # stdout stays pointed away from the closed protocol stream
