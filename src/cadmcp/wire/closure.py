"""Telling a closed connection apart from an error a peer answered.

The MCP SDK wakes a request waiting on a connection that closed with `MCPError` code -32000
("Connection closed"). JSON-RPC reserves -32000 to -32099 for servers' own errors, and -32000 is
the generic one many servers answer with ("database locked; retry"): the code alone would read a
server's answer as its end.
"""

from __future__ import annotations

import mcp_types as types
from mcp.shared.exceptions import MCPError

SDK_CLOSED_MESSAGE = "Connection closed"


def connection_closed(exc: BaseException) -> bool:
    """Whether `exc` is the SDK's word that the connection closed (not a peer's error answer)."""
    if not isinstance(exc, MCPError):
        return False
    return exc.error.code == types.CONNECTION_CLOSED and exc.error.message == SDK_CLOSED_MESSAGE
