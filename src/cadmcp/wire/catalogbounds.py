"""What one host may list: the bounds every host's catalog is held to (cadmcp's own hosts, a
command's, a foreign server's proxy). The daemon refuses a listing over them; a foreign server's
proxy applies them before it serves the server's catalog, so an oversized one is refused where the
server is supervised (shown down with why, and retried) rather than after the daemon listed it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_HOST_TOOLS = 1000
"""Tools one host may list; a longer catalog is refused (the host is shown failed, with why)."""
MAX_HOST_RESOURCES = 5000
MAX_HOST_TEMPLATES = 1000
MAX_CATALOG_BYTES = 8 * 1024 * 1024
"""One host's whole listing as JSON text."""
MAX_ITEM_BYTES = 256 * 1024
"""One tool, resource or template as JSON text (a schema of that size is not a tool an agent uses)."""


def catalog_problem(tools: list[Any], resources: list[Any], templates: list[Any]) -> str | None:
    """Why a host's listing is refused (too many items, too large, an item not an object), or None."""
    total = 0
    for what, items, limit in (
        ("tools", tools, MAX_HOST_TOOLS),
        ("resources", resources, MAX_HOST_RESOURCES),
        ("resource templates", templates, MAX_HOST_TEMPLATES),
    ):
        if len(items) > limit:
            return f"it lists more than {limit:,} {what} (at least {len(items):,}), over what a host may list"
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                return f"its {what} item {n} is not an object"
            size = len(_compact(item))
            if size > MAX_ITEM_BYTES:
                name = str(item.get("name") or item.get("uri") or item.get("uriTemplate") or "")[:60]
                kib = f"{size // 1024:,} KiB, over {MAX_ITEM_BYTES // 1024} KiB"
                return f"its {what} item {n} ({name!r}) is {kib}"
            total += size
    if total > MAX_CATALOG_BYTES:
        return f"its listing is {total // (1024 * 1024)} MiB, over {MAX_CATALOG_BYTES // (1024 * 1024)} MiB"
    return None


def _compact(item: Any) -> str:
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=str)
