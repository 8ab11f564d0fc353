"""An MCP client session for pass-through: raw results, no hidden requests.

The daemon's link to a host and a foreign-host proxy's link to someone else's server both
forward what the other side answered exactly as it arrived, so the SDK's output-schema
validation (which lists tools behind the caller's back) is switched off.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
MAX_LIST_PAGES = 1000


def without_server_info(result: dict[str, Any]) -> dict[str, Any]:
    """A result without the serverInfo stamp a 2026-era server puts in every result's `_meta`."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_META_KEY in meta:
        meta = {k: v for k, v in meta.items() if k != SERVER_INFO_META_KEY}
        return {**result, "_meta": meta} if meta else {k: v for k, v in result.items() if k != "_meta"}
    return result


class EndlessList(ValueError):
    """A paginated list that still had a next page after `MAX_LIST_PAGES` pages."""


class PassThroughSession(ClientSession):
    """A `ClientSession` that returns results as the server sent them."""

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        """No-op: results are forwarded untouched and tools are never listed to validate them."""

    async def connect(self, version: str | None = None) -> str:
        """Negotiate: the 2026-07-28 `server/discover`, falling back to the 2025-11-25 handshake;
        with `version`, only that era's (a server held to the 2025 protocol)."""
        if version is not None and version not in MODERN_PROTOCOL_VERSIONS:
            await self.initialize()
            return self.protocol_version or ""
        try:
            await self.discover()
        except MCPError:
            if version is not None:
                raise
            await self.initialize()
        return self.protocol_version or ""

    async def probe(self) -> None:
        """A cheap request that proves the server's MCP I/O still answers (pings exist up to
        2025-11-25; 2026-07-28 sessions are probed with `server/discover`)."""
        version = self.protocol_version or ""
        if version in MODERN_PROTOCOL_VERSIONS:
            await self.send_discover(version)
        else:
            await self.send_ping()

    async def raw_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None = None,
        on_progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """Send a request and return the result dict as it arrived (serverInfo stamp removed)."""
        data, opts = self._stamped(method, params)  # opts: the era's HTTP headers among them
        if timeout is not None:
            opts["timeout"] = timeout
        if on_progress is not None:
            opts["on_progress"] = on_progress
        result = await self._dispatcher.send_raw_request(method, data.get("params"), opts)  # type: ignore[arg-type]
        return without_server_info(result)

    def envelope(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """`{"method", "params"}` of a request as this session sends it: the SDK's per-era
        envelope (protocol version, client info) added to `params`."""
        return self._stamped(method, params)[0]

    def _stamped(self, method: str, params: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request's envelope and the call options the era's stamp sets for it: on streamable
        HTTP a 2026-era server refuses a request without its `Mcp-Method` header."""
        data: dict[str, Any] = {"method": method, "params": dict(params or {})}
        opts: dict[str, Any] = {}
        self._stamp(data, opts)  # type: ignore[arg-type]
        return data, opts

    async def list_all(
        self, method: str, key: str, timeout: float, max_items: int | None = None
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Every item of a paginated list method as raw dicts, and the first page's `_meta`.

        With `max_items`, stops once more than that many arrived (the caller refuses the list)."""
        items: list[dict[str, Any]] = []
        meta: dict[str, Any] = {}
        cursor: str | None = None
        for page in range(MAX_LIST_PAGES):
            params = {"cursor": cursor} if cursor else {}
            result = await self.raw_request(method, params, timeout=timeout)
            if page == 0 and isinstance(result.get("_meta"), dict):
                meta = result["_meta"]
            page_items = result.get(key) or []
            items.extend(page_items if isinstance(page_items, list) else [page_items])
            cursor = result.get("nextCursor")
            if not cursor or (max_items is not None and len(items) > max_items):
                break
        else:  # a cursor still pending: a list that never ends is no list to serve part of
            raise EndlessList(
                f"its {method} still had more after {MAX_LIST_PAGES:,} pages ({len(items):,} items): "
                "it never ends its pages"
            )
        return items, meta
