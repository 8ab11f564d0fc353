"""Twins in a real daemon in front of the real DXF and IFC hosts: the host used last wins a tie,
the request's words beat recency, and each item names its host's open document and why it is first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.core.helpers import call, find, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


async def _use(session: Any, app: str) -> None:
    """Invoke a harmless capability of the app's host (listing its documents)."""
    items = await find(session, "list_documents", limit=32)
    item = next(i for i in items if i["target"] == "list_documents" and i["hostApp"] == app)
    result = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": {}})
    assert not result.is_error, result


async def _screenshots(session: Any, query: str) -> list[dict[str, Any]]:
    return [i for i in await find(session, query) if i["target"] == "view_screenshot"]


async def test_the_host_used_last_wins_a_tie_and_the_request_words_beat_it(
    hosts: Any, daemon_client: Any
) -> None:
    dxf = hosts.spawn("dxf", str(SAMPLES / "floorplan.dxf"))
    ifc = hosts.spawn("ifc", str(SAMPLES / "house.ifc"))
    hosts.wait_ready(dxf)
    hosts.wait_ready(ifc)
    async with daemon_client() as session:
        await wait_for_hosts(session, 2)
        with anyio.fail_after(30):  # the daemon has the state each host published once its file was read
            while not all(
                h.get("state", {}).get("activeDocument")
                for h in (await structured(session, "list_host_instances"))["hosts"]
            ):
                await anyio.sleep(0.2)
        await _use(session, "IFC")
        twins = await _screenshots(session, "screenshot")
        assert [t["hostApp"] for t in twins] == ["IFC", "DXF"]
        assert twins[0]["why"] == "its host was used most recently"
        # each item names its host's open document, as far as the host publishes it
        listing = await structured(session, "list_host_instances")
        active = {h["hostApp"]: h.get("state", {}).get("activeDocument") for h in listing["hosts"]}
        assert {t["hostApp"]: t.get("document") for t in twins} == active

        await _use(session, "DXF")
        twins = await _screenshots(session, "screenshot")
        assert [t["hostApp"] for t in twins] == ["DXF", "IFC"]

        # DXF was used last, but the request speaks of the building's storeys
        twins = await _screenshots(session, "screenshot of one storey of the building")
        assert twins[0]["hostApp"] == "IFC" and twins[0]["why"]
        assert "why" not in twins[1]
