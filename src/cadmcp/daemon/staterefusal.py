"""A `requestState` the SDK's boundary refuses, answered as the daemon's own `validation_error`.

The MCP SDK's `RequestStateBoundary` answers any state it cannot accept (expired, altered, minted
for other arguments or another call) with one frozen protocol error and keeps the real reason for
the server's log. An agent is better served by a tool result that says what to do: this
middleware, just outside the boundary, turns that error on a `tools/call` into one, telling no
more than the frozen error does. The boundary's reasons go to the daemon's log file, not to the
stdio client's stderr.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cadmcp.daemon.errors import validation_error
from cadmcp.daemon.tools.base import structured
from cadmcp.wire.calllog import route_logger

BOUNDARY_LOGGER = "mcp.server.request_state"
REFUSED = "invalid_request_state"


def install_logging() -> None:
    """The boundary's refusals (a client's error, with the reason) into the daemon's log file only."""
    route_logger(BOUNDARY_LOGGER, stderr=logging.CRITICAL + 1)


async def state_refusal(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """Middleware: a refused `requestState` on `tools/call` becomes a `validation_error` result."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        data = exc.error.data
        if ctx.method != "tools/call" or not (isinstance(data, dict) and data.get("reason") == REFUSED):
            raise
    error = validation_error(
        "This requestState was not accepted: it expired, was changed, or belongs to another call or "
        "to other arguments (a round's state answers only the same id with the same arguments). Start "
        "the call again without requestState and inputResponses.",
        reason=REFUSED,
    )
    result = structured(error.body(), is_error=True).model_dump(by_alias=True, mode="json", exclude_none=True)
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        result.pop("resultType", None)  # a 2025-11-25 result has no envelope
    return result
