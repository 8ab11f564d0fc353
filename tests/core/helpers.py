"""Helpers for end-to-end tests through a real daemon."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
from mcp.client.session import ClientSession

from cadmcp.wire.endpoints import pid_alive


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    return await session.call_tool(name, args or {}, **kw)


async def structured(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await call(session, name, args)
    assert result.structured_content is not None, result
    assert json.loads(result.content[0].text) == result.structured_content  # the text mirror
    return result.structured_content


async def wait_for_hosts(session: ClientSession, count: int, timeout: float = 20.0) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        while True:
            listing = await structured(session, "list_host_instances")
            if listing["count"] == count:
                return listing
            await anyio.sleep(0.1)


async def find(session: ClientSession, query: str, **kw: Any) -> list[dict[str, Any]]:
    answer = await structured(session, "search_dynamic", {"query": query, **kw})
    return answer["items"]


async def find_target(
    session: ClientSession, target: str, host_app: str | None = None, **kw: Any
) -> dict[str, Any]:
    items = await find(session, target, limit=32, **kw)
    for it in items:
        if it["target"] == target and (host_app is None or it["hostApp"] == host_app):
            return it
    raise AssertionError(f"{target} not found in {[i['target'] for i in items]}")


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    """Whether process ``pid`` has exited within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)
