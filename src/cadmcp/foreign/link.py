"""The proxy's connection to one foreign server: its transport (stdio child or streamable HTTP)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from cadmcp.applications import ForeignServer
from cadmcp.foreign.childprocess import server_process
from cadmcp.foreign.secrets import resolve_all, resolve_args, resolve_url
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
        self._fed = 0  # bytes read in all (a mark is a count of them)

    def clear(self) -> None:
        """Forget what an earlier run of the server wrote."""
        self._kept.clear()

    def feed(self, data: bytes) -> None:
        self._fed += len(data)
        self._kept += data
        if len(self._kept) > 2 * self._keep:
            del self._kept[: -self._keep]

    def mark(self) -> int:
        """Where the server's stderr has been read to now, for `forget`."""
        return self._fed

    def forget(self, start: int, end: int) -> None:
        """Drop what was read between two marks, as far as it is still kept: what the server wrote
        about a request of the proxy's own is not why it may go down. Marks are counted back from
        the end, so a later `forget` must not reach before an earlier one's end."""
        back_start, back_end = self._fed - start, self._fed - end
        if back_start <= back_end:
            return
        del self._kept[max(len(self._kept) - back_start, 0) : max(len(self._kept) - back_end, 0)]

    def text(self) -> str:
        """Its last `STDERR_TAIL` characters, whitespace folded."""
        text = self._kept[-4 * STDERR_TAIL :].decode(errors="replace")
        return " ".join(text.split())[-STDERR_TAIL:]


SDK_ERROR_STAND_IN = "Server returned an error response"
"""What the MCP SDK's HTTP client says for an HTTP error status it has no JSON-RPC error for."""


class HttpStatus:
    """The error status a streamable HTTP server answered the proxy's last POST with, if it did:
    the SDK's client says only `SDK_ERROR_STAND_IN` for it."""

    def __init__(self) -> None:
        self.status, self.phrase, self.challenge = 0, "", ""

    def clear(self) -> None:
        self.status, self.phrase, self.challenge = 0, "", ""

    async def seen(self, response: Any) -> None:
        """An httpx response hook (a GET's status is not the calls': servers may refuse the stream)."""
        if response.request.method != "POST":
            return
        if response.status_code < 400:
            self.clear()
            return
        self.status, self.phrase = response.status_code, str(response.reason_phrase or "")[:60]
        self.challenge = str(response.headers.get("www-authenticate", ""))[:200]

    def explain(self, headers: Collection[str]) -> str | None:
        """What the last error status means for the person fixing the entry (`headers`: the names
        of the headers it sends), or None when there was none."""
        if not self.status:
            return None
        said = f"the server answered HTTP {self.status} {self.phrase}".rstrip()
        if self.status == 401:
            if headers:
                said += (
                    f": it did not accept the credentials in {', '.join(sorted(headers))} (a wrong or "
                    "expired token?); fix the value it refers to and call again"
                )
            else:
                said += (
                    ": it wants credentials and the entry sends none; add a header whose value refers "
                    "to the token (cadmcp host add NAME --url URL --header ... --force; a value such as "
                    "Bearer env:TOKEN)"
                )
            if "resource_metadata" in self.challenge or not headers:
                said += "; it may want an OAuth sign-in, which cadmcp does not do (a token in a header works)"
        elif self.status == 403:
            said += ": it knows the credentials but refuses them this access (check the token's scopes)"
        elif self.status == 404:
            said += ": no MCP endpoint at this URL (check its path: servers often serve at /mcp)"
        elif self.status >= 500:
            said += ": the server failed; its own logs say why"
        return said


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
    server: ForeignServer,
    stderr: StderrTail,
    intercept: Callable[[Reply], Intercept] | None = None,
    http: HttpStatus | None = None,
) -> AsyncIterator[Connection]:
    """Connect to the server: a child process over stdio (what it writes to stderr kept in
    ``stderr``), or its HTTP endpoint (the error status of its answers kept in ``http``).
    ``intercept`` sees each line a stdio server writes before it is parsed (the proxy's own
    calls, `cadmcp.foreign.fastlane.ServerChannel`).

    References in ``env``, ``headers``, ``args`` and the URL are resolved here, at every connection
    (a rotated token is picked up on the next restart); :class:`~cadmcp.foreign.secrets.SecretError`
    when one cannot be.
    """
    if server.url is not None:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = resolve_all("headers", server.headers)
        url = resolve_url(server.url)
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(url, http_client=client) as (read, write),
        ):
            if http is not None:
                client.event_hooks["response"].append(http.seen)
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
