"""The proxy's connection to one foreign server: its transport (stdio child or streamable HTTP)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

from cadmcp.applications import ForeignServer
from cadmcp.foreign.childprocess import server_process
from cadmcp.foreign.secrets import resolve_all
from cadmcp.wire.sockets import Intercept, Reply, message_streams

STDERR_TAIL = 1500


@contextlib.asynccontextmanager
async def transport(
    server: ForeignServer, stderr: IO[str], intercept: Callable[[Reply], Intercept] | None = None
) -> AsyncIterator[tuple[Any, Any, int | None]]:
    """`(read, write, pid)`: streams to the server, a child process over stdio (its pid) or its HTTP
    endpoint (no pid). ``intercept`` sees each line a stdio server writes before it is parsed (the
    proxy's own calls, `cadmcp.foreign.fastlane.ServerChannel`).

    References in ``env`` and ``headers`` are resolved here, at every connection (a rotated
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
            yield read, write, None
        return
    assert server.command is not None
    env = resolve_all("env", server.env) or None
    async with (
        server_process(server.command, list(server.args), env, server.cwd, stderr) as (pipes, pid),
        message_streams(pipes, role="client", intercept=intercept) as (read, write),
    ):
        yield read, write, pid


def tail(stream: IO[str]) -> str:
    """The end of what the server wrote to stderr (for the reason it is down)."""
    with contextlib.suppress(OSError, ValueError):
        stream.flush()
        stream.seek(0, os.SEEK_END)
        size = stream.tell()
        stream.seek(max(0, size - STDERR_TAIL))
        text = stream.read().strip()
        stream.seek(0, os.SEEK_END)
        return " ".join(text.split())[-STDERR_TAIL:]
    return ""
