"""Who a task belongs to: the client identity the daemon can verify for a request.

- stdio: the connection. A stdio daemon serves exactly one client (its parent process), and
  every request it reads comes from it.
- streamable HTTP, 2025-11-25: the authenticated principal (the holder of the user's bearer
  token) and the session (`Mcp-Session-Id`, which the SDK only accepts from that principal).
  Another session cannot read, list, wait for or cancel the task.
- streamable HTTP, 2026-07-28: there are no sessions; the task belongs to the authenticated
  principal and is reached by its id alone, which is random (192 bits), never listed and only
  handed to the client that created it. This is what lets a client that lost its connection (or
  restarted) poll the task again, as the tasks extension asks.

Tasks made under one protocol era are reached through that era's methods only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.request_state import authenticated_principal


@dataclass(frozen=True, slots=True)
class Owner:
    """The verified identity a task is bound to."""

    transport: str
    """`stdio` (a local stream connection) or `http`."""
    principal: str | None
    """The authenticated principal (HTTP), None on local streams."""
    channel: str | None
    """The connection (local) or the HTTP session (2025-11-25); None for sessionless HTTP."""


def owner_of(ctx: ServerRequestContext[Any]) -> Owner:
    """The owner a task created by this request gets, and the one its lookups must match."""
    principal = authenticated_principal(ctx)
    connection = ctx.session._connection  # the SDK keeps the per-connection object private
    if principal is not None or ctx.request is not None:
        return Owner("http", principal, connection.session_id)
    # Local streams: one connection object per stream (2025-11-25), or one outbound channel per
    # stream shared by the per-request connections of 2026-07-28.
    return Owner("stdio", None, f"{id(connection.outbound):x}")
