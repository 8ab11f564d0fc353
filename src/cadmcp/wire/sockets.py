"""MCP sessions over Unix domain sockets: newline-delimited JSON-RPC on a byte stream.

The MCP SDK ships no socket transport; any pair of `SessionMessage` streams works for
both `Server.run` and `ClientSession`, so this module adapts an anyio byte stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSON-RPC message accepted (a screenshot or a big schedule still fits)."""

StreamPair = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def message_streams(stream: anyio.abc.ByteStream) -> AsyncIterator[StreamPair]:
    """Adapt a connected byte stream into the (read, write) pair MCP sessions expect.

    Malformed lines reach the reader as exceptions (the SDK answers them as parse errors)
    instead of tearing the connection down.
    """
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
    buffered = BufferedByteReceiveStream(stream)

    async def reader() -> None:
        async with read_send:
            while True:
                try:
                    line = await buffered.receive_until(b"\n", MAX_LINE_BYTES)
                except (
                    anyio.EndOfStream,
                    anyio.IncompleteRead,
                    anyio.ClosedResourceError,
                    anyio.BrokenResourceError,
                ):
                    return
                except anyio.DelimiterNotFound:
                    await read_send.send(ValueError("message too long or not newline-terminated"))
                    return
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # malformed input is reported, never fatal
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for session_message in write_recv:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await stream.send(data.encode() + b"\n")
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
    async with message_streams(stream) as streams:
        yield streams
