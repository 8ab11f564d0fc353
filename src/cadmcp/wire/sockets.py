"""MCP sessions over Unix domain sockets: newline-delimited JSON-RPC on a byte stream.

The MCP SDK ships no socket transport; any pair of `SessionMessage` streams works for
both `Server.run` and `ClientSession`, so this module adapts an anyio byte stream.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal, Protocol

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.stapled import StapledByteStream
from mcp.shared.message import SessionMessage

from cadmcp.wire import inbound

log = logging.getLogger("cadmcp.wire")

MAX_RESULT_LINE_BYTES = 64 * 1024 * 1024
"""The longest answer a client side reads from a host (a screenshot or a big schedule fits)."""
LARGE_LINE_BYTES = 1024 * 1024
"""Lines longer than this are parsed on a worker thread, keeping the event loop responsive."""

_BOM = b"\xef\xbb\xbf"

StreamPair = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]
Role = Literal["server", "client"]
Reply = Callable[[bytes], Awaitable[None]]
"""Writes one whole line (JSON, no newline) to the connection, in order with the session's messages."""


class Intercept(Protocol):
    """A path beside the session on one connection, offered each inbound line before it is parsed."""

    def take(self, line: bytes) -> bool:
        """True when it took the line (the session never sees it). It must not block: what it
        takes, it answers later through its `Reply`."""
        ...

    def close(self) -> None:
        """The connection closed: give up what it took and has not answered."""
        ...


async def _skip_rest_of_line(buffered: BufferedByteReceiveStream) -> bytes:
    """Discard an over-long line up to and including its newline, without holding it in memory;
    returns the line's last bytes (where some clients put the request id)."""
    tail = b""
    while True:
        chunk = await buffered.receive(LARGE_LINE_BYTES)
        end = chunk.find(b"\n")
        if end >= 0:
            buffered.feed_data(chunk[end + 1 :])
            return (tail + chunk[:end])[-inbound.ID_SCAN_BYTES :]
        tail = (tail + chunk)[-inbound.ID_SCAN_BYTES :]


def _too_long(prefix: bytes, tail: bytes, limit: int, role: Role) -> inbound.Refusal:
    if role == "server":
        return inbound.refuse(
            prefix,
            f"The request is over {limit / (1024 * 1024):g} MiB; send smaller arguments "
            "(a file path instead of file content, fewer items per call).",
            tail=tail,
        )
    mib = f"{limit / (1024 * 1024):g}"
    return inbound.refuse_answer(
        prefix,
        tail,
        answer_reason=f"The answer is over {mib} MiB and was dropped; ask for less "
        "(a smaller screenshot, fewer rows, a narrower query).",
        request_reason=f"The request is over {mib} MiB; send a smaller one.",
        kind="result_too_large",
    )


@asynccontextmanager
async def message_streams(
    stream: anyio.abc.ByteStream | StapledByteStream,
    *,
    role: Role = "server",
    max_line: int | None = None,
    intercept: Callable[[Reply], Intercept] | None = None,
) -> AsyncIterator[StreamPair]:
    """Adapt a connected byte stream into the (read, write) pair MCP sessions expect.

    A line that is not a usable message never tears the connection down: a server answers
    the request's id with an error saying what to change; a client side turns an over-long
    answer into an error for the request that is waiting for it.

    ``intercept(reply)``, when given, makes this connection's `Intercept`: a path beside the
    session that answers some lines itself (a foreign-host proxy's plain tool calls).
    """
    limit = max_line or (inbound.MAX_LINE_BYTES if role == "server" else MAX_RESULT_LINE_BYTES)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage | bytes](16)
    buffered = BufferedByteReceiveStream(stream)
    raw_send = write_send.clone()

    async def reply(line: bytes) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await raw_send.send(line)  # the connection is gone: nobody to answer

    takes = intercept(reply) if intercept is not None else None

    async def deliver(refusal: inbound.Refusal) -> None:
        log.info("refused an inbound line: %s", refusal.reason)
        if refusal.answer is None:
            await read_send.send(inbound.NotAMessage(refusal.reason, refusal.line_start))
        elif refusal.to_peer:
            await write_send.send(refusal.answer)
        else:
            await read_send.send(refusal.answer)

    async def reader() -> None:
        async with read_send:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await read_lines()  # the session stopped reading: nothing more to deliver

    async def read_lines() -> None:
        while True:
            try:
                line = await buffered.receive_until(b"\n", limit)
            except (
                anyio.EndOfStream,
                anyio.IncompleteRead,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
            ):
                return
            except anyio.DelimiterNotFound:
                prefix = buffered.buffer[: inbound.ID_SCAN_BYTES]
                try:
                    tail = await _skip_rest_of_line(buffered)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                await deliver(_too_long(prefix, tail, limit, role))
                continue
            if line.startswith(_BOM):  # written by some Windows tools; no part of the message
                line = line[len(_BOM) :]
            if not line.strip():
                continue
            if takes is not None and takes.take(line):
                continue
            if len(line) > LARGE_LINE_BYTES:
                decoded = await anyio.to_thread.run_sync(inbound.decode, line, role)
            else:
                decoded = inbound.decode(line, role)
            if isinstance(decoded, inbound.Refusal):
                await deliver(decoded)
            else:
                await read_send.send(decoded)

    async def writer() -> None:
        async with write_recv:
            async for item in write_recv:
                if isinstance(item, bytes):
                    data = item
                else:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                try:
                    await stream.send(data + b"\n")
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    body_error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            except BaseException as exc:  # re-raised below, unwrapped, once the pumps have stopped
                body_error = exc
            finally:
                raw_send.close()
                if takes is not None:
                    takes.close()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()
    if body_error is not None:
        raise body_error


@asynccontextmanager
async def connect(path: Path, timeout: float = 5.0) -> AsyncIterator[StreamPair]:
    """Connect to a host endpoint and yield MCP message streams for a `ClientSession`."""
    with anyio.fail_after(timeout):
        stream = await anyio.connect_unix(str(path))
    async with message_streams(stream, role="client") as streams:
        yield streams
