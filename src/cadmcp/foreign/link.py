"""The proxy's connection to one foreign server: its transport (stdio child or streamable HTTP)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

from cadmcp.applications import ForeignServer
from cadmcp.foreign.secrets import resolve_all

STDERR_TAIL = 1500


@contextlib.asynccontextmanager
async def transport(server: ForeignServer, stderr: IO[str]) -> AsyncIterator[tuple[Any, Any]]:
    """`(read, write)` streams to the server: a child process over stdio, or its HTTP endpoint.

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
            yield read, write
        return
    from mcp.client.stdio import StdioServerParameters, stdio_client

    assert server.command is not None
    params = StdioServerParameters(
        command=server.command,
        args=list(server.args),
        env=resolve_all("env", server.env) or None,
        cwd=server.cwd,
    )
    async with stdio_client(params, errlog=stderr) as (read, write):
        yield read, write


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


def children(exclude: set[int]) -> set[int]:
    """PIDs of this process's children (Linux), less ``exclude``: the stdio server just started."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (task / "children").read_text().split())
    return found - exclude
