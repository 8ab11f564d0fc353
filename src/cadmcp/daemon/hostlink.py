"""The daemon's MCP client session to one host.

Calls are passed through as raw JSON-RPC results so nothing of the host's answer is lost
or re-shaped (`cadmcp.wire.passthrough`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from mcp.shared.dispatcher import ProgressFnT

from cadmcp.wire.passthrough import SERVER_INFO_META_KEY, PassThroughSession

__all__ = ["SERVER_INFO_META_KEY", "Describing", "HostLink", "Link"]


class Link(Protocol):
    """What invoking needs of a host connection: one raw request (with the host's progress for
    it), and why the connection was lost if it was. A `HostLink` reaches a host on this machine;
    the gateway's `RemoteLink` one on another machine, through its daemon."""

    lost_reason: str | None
    """Why the daemon gave up on this connection, for callers whose requests it cut short."""

    async def raw_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None = None,
        on_progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """The host's result dict as it arrived; `on_progress` hears the host's progress for it."""
        ...


@runtime_checkable
class Describing(Protocol):
    """A link that can tell the person asked to allow a call what it would do (the daemon's own
    catalog: which agent calls a revert would undo)."""

    async def describe(self, target: str, arguments: dict[str, Any]) -> list[str]:
        """Lines for the question; empty when there is nothing to add."""
        ...


class HostLink(PassThroughSession, Link):
    """The daemon's pass-through session to one host."""

    lost_reason: str | None = None
    """Why the daemon gave up on this connection (e.g. the host stopped answering), for callers
    whose requests it cut short."""
