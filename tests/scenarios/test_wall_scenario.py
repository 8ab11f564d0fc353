"""The reference scenario through the daemon with a real MCP client, on each reference host:
search "wall count" -> run Python that counts walls -> add a wall -> screenshot differs ->
navigate_history back -> the count is back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cadmcp.walkthrough import ADD_WALL, COUNT_WALLS, sample_path
from tests.core.helpers import call, find, find_target, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _count(result: Any) -> int:
    text = "\n".join(c.text for c in result.content if c.type == "text")
    match = re.search(r"Result:\s*(\d+)", text)
    assert match, text
    return int(match.group(1))


@pytest.mark.parametrize("kind", ["ifc", "dxf"])
async def test_count_add_look_undo(kind: str, hosts: Any, daemon_client: Any) -> None:
    sample = sample_path(kind)
    assert sample is not None and Path(sample).exists()
    hosts.start(kind, str(sample))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        hits = await find(session, "wall count")
        assert hits, "search found nothing for 'wall count'"
        run = await find_target(session, "execute_python_code")
        shot = await find_target(session, "view_screenshot")
        history = await find_target(session, "navigate_history")

        async def python(code: str) -> Any:
            result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": code}})
            assert not result.is_error, result.content
            return result

        before = _count(await python(COUNT_WALLS[kind]))
        first = await call(session, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 640}})
        assert first.content[0].type == "image" and first.content[0].mime_type == "image/png"
        added = await call(
            session,
            "invoke_dynamic",
            {"id": run["id"], "arguments": {"code": ADD_WALL[kind], "description": "add a wall"}},
        )
        assert not added.is_error, added.content
        assert _count(await python(COUNT_WALLS[kind])) == before + 1
        second = await call(session, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 640}})
        assert second.content[0].data != first.content[0].data
        back = await call(
            session, "invoke_dynamic", {"id": history["id"], "arguments": {"direction": "back"}}
        )
        assert back.structured_content["navigated"] == 1
        assert back.structured_content["operations"] == ["add a wall"]
        assert _count(await python(COUNT_WALLS[kind])) == before
