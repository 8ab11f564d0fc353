"""A stdio MCP server as a third party writes one with the MCP SDK of the 2026-07-28 protocol,
asking its user with `ctx.elicit` (the 2025-11-25 way, which the 2026 protocol has no channel for):
`python sdk_elicit_server.py`."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("sdk-elicit")


class Name(BaseModel):
    value: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user for their name."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"{answer.action} {getattr(getattr(answer, 'data', None), 'value', '')}".strip()


if __name__ == "__main__":
    server.run("stdio")
