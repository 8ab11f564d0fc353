"""A streamable HTTP MCP server as a third party writes one with the MCP SDK of the 2026-07-28
protocol: `python sdk_http_server.py PORT [TOKEN]`. Its one tool answers with the HTTP headers its
request arrived with, so a test sees what the proxy's client put on the wire; another waits. With
TOKEN (or the text of the file TOKEN names, read at each request), a request without
`Authorization: Bearer TOKEN` is answered 401, as a server whose token expired answers."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-http-headers")


@server.tool()
def show_headers(ctx: Context) -> str:
    """The request's HTTP headers, as a JSON object."""
    return json.dumps(dict(ctx.headers or {}))


@server.tool()
def wait(seconds: float) -> str:
    """Answer after this many seconds."""
    time.sleep(seconds)
    return "done"


def _guarded(app: Any, token: str) -> Any:
    async def guard(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or ())
        wanted = Path(token).read_text().strip() if os.path.isfile(token) else token
        if scope["type"] == "http" and headers.get(b"authorization") != f"Bearer {wanted}".encode():
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": b"invalid token"})
            return
        await app(scope, receive, send)

    return guard


if __name__ == "__main__":
    if len(sys.argv) > 2:
        import uvicorn

        uvicorn.run(
            _guarded(server.streamable_http_app(), sys.argv[2]), host="127.0.0.1", port=int(sys.argv[1])
        )
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
