"""Stale rules across machines: a remote host gone, a remote capability changed, a machine gone."""

from __future__ import annotations

import os
import signal
from typing import Any

import anyio
import pytest

from tests.core.helpers import call, find_target, structured
from tests.gateway.conftest import machine_listing, serving_pair, wait_machine, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _invoke(session: Any, cap_id: str, arguments: dict[str, Any]) -> Any:
    return await call(session, "invoke_dynamic", {"id": cap_id, "arguments": arguments})


async def test_a_remote_host_killed_or_changed_makes_its_ids_stale(nats_server: Any, machines: Any) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    victim = bravo.host("demo")
    bravo.host("demo", "--app", "Other")
    bravo.serve(CADMCP_GATEWAY=server.url)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 2)
        echo = await find_target(session, "echo", host_app="Demo")
        other_echo = await find_target(session, "echo", host_app="Other")
        assert (await _invoke(session, echo["id"], {"text": "hi"})).content[0].text == "hi"

        # a capability changed on the other machine: its old id is stale, "changed"; nothing ran
        setter = await find_target(session, "set_description", host_app="Other")
        await _invoke(session, setter["id"], {"name": "echo", "description": "Echo, now described anew."})

        async def changed() -> bool:
            return (await find_target(session, "echo", host_app="Other"))["id"] != other_echo["id"]

        await wait_until(changed, 10)
        stale = await _invoke(session, other_echo["id"], {"text": "x"})
        assert stale.is_error and stale.structured_content["type"] == "stale"
        assert stale.structured_content["reason"] == "changed"
        assert stale.structured_content["retry"] == "search_then_reinvoke"

        # a host killed on the other machine: once its machine says so, its ids answer host_disconnected
        os.kill(victim.pid, signal.SIGKILL)
        await wait_machine(session, "bravo-render", 1)
        gone = await _invoke(session, echo["id"], {"text": "x"})
        assert gone.structured_content["type"] == "stale"
        assert gone.structured_content["reason"] == "host_disconnected"
        search = await structured(session, "search_dynamic", {"query": "echo", "machineId": "bravo-render"})
        assert {i["hostApp"] for i in search["items"]} == {"Other"}


async def test_a_machine_that_disappears_goes_stale_offline_then_gone(
    nats_server: Any, machines: Any
) -> None:
    server, alpha, _bravo, serving = serving_pair(nats_server, machines)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        echo = await find_target(session, "echo")

        serving.kill()  # the whole daemon dies without a goodbye
        serving.wait()
        gone = await _invoke(session, echo["id"], {"text": "x"})
        assert gone.structured_content["type"] == "stale"
        assert gone.structured_content["reason"] == "host_disconnected"

        async def offline() -> dict[str, Any] | None:
            listing = await machine_listing(session)
            found = next((m for m in listing["machines"] if m["machineId"] == "bravo-render"), None)
            return found if found and not found["online"] else None

        with anyio.fail_after(10):
            seen = await offline()
            while seen is None:
                await anyio.sleep(0.2)
                seen = await offline()
        assert seen["connectedHosts"] == 0 and seen["lastSeen"]
        assert (await structured(session, "search_dynamic", {"query": "echo"}))["count"] == 0
        there = await structured(session, "search_dynamic", {"query": "echo", "machineId": "bravo"})
        said = there["guidance"]["message"]  # the machine, not the words ("Nothing matched. Try other words")
        assert "'bravo' is offline" in said and "Try other words" not in said, there
        offline_said = (await _invoke(session, echo["id"], {"text": "x"})).structured_content
        assert offline_said["reason"] == "host_disconnected"
        assert "'bravo' is offline" in offline_said["message"], offline_said

        async def forgotten() -> bool:
            listing = await machine_listing(session)
            return [m["machineId"] for m in listing["machines"]] == ["alpha-ws"]

        await wait_until(forgotten, 10)
