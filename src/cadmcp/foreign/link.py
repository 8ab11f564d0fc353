"""The proxy's connection to one foreign server: its transport (stdio child or streamable HTTP)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from cadmcp.applications import ForeignServer
from cadmcp.foreign.childprocess import server_process
from cadmcp.foreign.secrets import resolve_all, resolve_args
from cadmcp.wire.sockets import Intercept, Reply, message_streams

STDERR_TAIL = 1500
"""Characters of a server's stderr a reason quotes."""
STDERR_KEPT = 64 * 1024
"""Bytes of a server's stderr kept (the latest; a chatty server's whole output never is)."""


class StderrTail:
    """The end of what a stdio server wrote to stderr, kept bounded, for the reason it is down."""

    def __init__(self, keep: int = STDERR_KEPT) -> None:
        self._kept = bytearray()
        self._keep = keep

    def clear(self) -> None:
        """Forget what an earlier run of the server wrote."""
        self._kept.clear()

    def feed(self, data: bytes) -> None:
        self._kept += data
        if len(self._kept) > 2 * self._keep:
            del self._kept[: -self._keep]

    def text(self) -> str:
        """Its last `STDERR_TAIL` characters, whitespace folded."""
        text = self._kept[-4 * STDERR_TAIL :].decode(errors="replace")
        return " ".join(text.split())[-STDERR_TAIL:]


@dataclass(frozen=True)
class Connection:
    """Streams to a server for an MCP client session, and for a stdio server its pid and stdin
    (where the proxy's own calls are written)."""

    read: Any
    write: Any
    pid: int | None = None
    stdin: ByteSendStream | None = None


@contextlib.asynccontextmanager
async def transport(
    server: ForeignServer, stderr: StderrTail, intercept: Callable[[Reply], Intercept] | None = None
) -> AsyncIterator[Connection]:
    """Connect to the server: a child process over stdio (what it writes to stderr kept in
    ``stderr``), or its HTTP endpoint. ``intercept`` sees each line a stdio server writes before
    it is parsed (the proxy's own calls, `cadmcp.foreign.fastlane.ServerChannel`).

    References in ``env``, ``headers`` and ``args`` are resolved here, at every connection (a rotated
    token is picked up on the next restart); :class:`~cadmcp.foreign.secrets.SecretError` when one
    cannot be.
    """
    if server.url is not None:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = resolve_all("headers", server.headers)
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(server.url, http_client=client) as (read, write),
        ):
            yield Connection(read, write)
        return
    assert server.command is not None
    env = resolve_all("env", server.env) or None
    args = resolve_args(list(server.args))
    async with (
        anyio.create_task_group() as drains,  # left once the server stopped, its stderr closed
        server_process(server.command, args, env, server.cwd) as pipes,
    ):
        if pipes.stderr is not None:
            drains.start_soon(_drain, pipes.stderr, stderr)
        async with message_streams(pipes.stream, role="client", intercept=intercept) as (read, write):
            yield Connection(read, write, pipes.pid, pipes.stream.send_stream)


async def _drain(errors: ByteReceiveStream, tail: StderrTail) -> None:
    """Read the server's stderr until it ends (or the proxy closes it), keeping its end."""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        while True:
            tail.feed(await errors.receive())
