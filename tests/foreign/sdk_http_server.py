"""A streamable HTTP MCP server as a third party writes one with the MCP SDK of the 2026-07-28
protocol: `python sdk_http_server.py PORT`. Its one tool answers with the HTTP headers its
request arrived with, so a test sees what the proxy's client put on the wire; another waits."""

from __future__ import annotations

import json
import sys
import time

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


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
