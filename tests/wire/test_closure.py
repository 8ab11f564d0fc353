"""A closed connection is told apart from a peer's generic server error (both -32000)."""

from __future__ import annotations

import mcp_types as types
from mcp.shared.exceptions import MCPError

from cadmcp.wire.closure import connection_closed


def test_only_the_sdks_closed_connection_reads_as_closed() -> None:
    assert connection_closed(MCPError(code=types.CONNECTION_CLOSED, message="Connection closed"))
    assert not connection_closed(MCPError(code=-32000, message="widget database locked; retry in 5 s"))
    assert not connection_closed(MCPError(code=types.INTERNAL_ERROR, message="Connection closed"))
    assert not connection_closed(ConnectionError("Connection closed"))
