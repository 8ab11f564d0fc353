"""A gateway restart, a second daemon on a machine, cancellation and timeouts across machines."""

from __future__ import annotations

import signal
from typing import Any

import anyio
import pytest

from tests.core.helpers import call, find_target, structured
from tests.gateway.conftest import SAMPLES, machine_listing, serving_pair, wait_machine, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_daemons_reconnect_and_register_again_after_the_gateway_restarts(
    nats_server: Any, machines: Any
) -> None:
    server, alpha, _bravo, _ = serving_pair(nats_server, machines)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        server.stop()

        async def lost() -> dict[str, Any] | None:
            listing = await machine_listing(session)
            return listing if listing["gateway"]["state"] != "connected" else None

        down = await wait_until(lost, 10)
        assert down["gateway"]["error"]["type"] == "gateway_unreachable"
        echo = await find_target(session, "echo")
        failed = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x"}})
        assert failed.structured_content["type"] in ("invocation_failed", "stale")
        assert failed.structured_content.get("executionStarted", False) is False

        async def bravo_offline() -> bool:
            listing = await machine_listing(session)
            return not any(m["online"] for m in listing["machines"] if m["machineId"] == "bravo-render")

        await wait_until(bravo_offline, 10)
        searched = await structured(session, "search_dynamic", {"query": "echo"})
        assert searched["count"] == 0
        assert "Hosts of your other machines are not listed either" in searched["guidance"]["message"]
        # the host still runs there: not "gone, start another" (which launch_host then refused)
        unreachable = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x"}})
        said = unreachable.structured_content
        assert said["type"] == "stale" and "the gateway is down" in said["message"], said
        assert "starting another host will not help" in said["message"]

        server.start()  # the same port and configuration, a fresh server with no memory of anyone

        async def reconnected() -> bool:
            return (await machine_listing(session))["gateway"]["state"] == "connected"

        await wait_until(reconnected, 15)
        await wait_machine(session, "bravo-render", 1)
        echo = await find_target(session, "echo")
        done = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "back"}})
        assert done.content[0].text == "back"


async def test_two_computers_with_one_machine_id_are_said_to_clash(nats_server: Any, machines: Any) -> None:
    """A second computer started with bravo's machine id (a cloned configuration): alpha's
    list_machines showed bravo and the clone in turn, with no conflict, and neither logged it."""
    server, alpha, bravo, _ = serving_pair(nats_server, machines)
    clone = machines("bravo-render", "clone")
    clone.serve(CADMCP_GATEWAY=server.url)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:

        async def clash() -> dict[str, Any] | None:
            listing = await machine_listing(session)
            found = next((m for m in listing["machines"] if m["machineId"] == "bravo-render"), {})
            return found if "conflict" in found else None

        seen = await wait_until(clash, 20)
        assert "Two computers announce the machine id 'bravo-render'" in seen["conflict"], seen
        assert "own machineId setting" in seen["conflict"]

    async def logged() -> bool:
        return "announces itself with this machine's id" in bravo.log_text() + clone.log_text()

    await wait_until(logged, 10)


async def test_two_daemons_on_one_machine_register_it_once_and_hand_over(
    nats_server: Any, machines: Any
) -> None:
    server, alpha, bravo, serving = serving_pair(nats_server, machines)

    async def serving_registers() -> bool:  # it holds the machine's registration before another comes
        locks = list(bravo.runtime.glob("gateway-*.lock"))
        return bool(locks) and locks[0].read_text().strip() == str(serving.pid)

    await wait_until(serving_registers, 60)
    async with (
        alpha.client(CADMCP_GATEWAY=server.url) as session,
        bravo.client(CADMCP_GATEWAY=server.url) as second,  # an AI client's daemon on the same machine
    ):
        await wait_machine(session, "bravo-render", 1)

        async def registered_elsewhere() -> dict[str, Any] | None:
            gateway = (await machine_listing(second))["gateway"]
            return gateway if gateway.get("registeredBy") == "another daemon on this machine" else None

        gateway = await wait_until(registered_elsewhere, 10)
        assert gateway["daemonPid"] == serving.pid
        await anyio.sleep(1.5)  # the service's heartbeats reach this daemon: its own machine, not a clone
        assert "conflict" not in (await machine_listing(second))["gateway"]
        mine = await machine_listing(second)
        assert [m["machineId"] for m in mine["machines"]] == ["bravo-render", "alpha-ws"]  # itself once
        assert [m["machineId"] for m in (await machine_listing(session))["machines"]] == [
            "alpha-ws",
            "bravo-render",
        ]

        serving.send_signal(signal.SIGTERM)  # the service stops: the other daemon takes the machine over
        serving.wait(timeout=10)

        async def taken_over() -> dict[str, Any] | None:
            gateway = (await machine_listing(second))["gateway"]
            return gateway if gateway.get("registeredBy") == "this daemon" else None

        await wait_until(taken_over, 10)
        await wait_machine(session, "bravo-render", 1)
        echo = await find_target(session, "echo")
        done = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "still here"}})
        assert done.content[0].text == "still here"

        async def served() -> list[dict[str, Any]]:  # a line is written after its answer went out
            lines = bravo.log_lines()
            return [line for line in lines if line.get("via") == "gateway" and line["target"] == "echo"]

        assert len(await wait_until(served, 10)) == 1


async def test_remote_calls_time_out_and_are_cancelled_saying_whether_they_started(
    nats_server: Any, machines: Any
) -> None:
    server, alpha, bravo, serving = serving_pair(nats_server, machines)
    async with alpha.client(CADMCP_GATEWAY=server.url, CADMCP_GATEWAY_CALL_TIMEOUT="2") as session:
        await wait_machine(session, "bravo-render", 1)
        slow = await find_target(session, "slow")
        echo = await find_target(session, "echo")

        # started, then over the time allowed: the machine cancels it and says it had started
        timed_out = await call(session, "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 4}})
        assert timed_out.structured_content["type"] == "invocation_failed"
        assert timed_out.structured_content["executionStarted"] is True
        assert timed_out.structured_content["machineId"] == "bravo-render"
        assert "2 s" in timed_out.structured_content["message"]

        # cancelled by the client: the other machine stops waiting for its host at once
        with anyio.move_on_after(1.0):
            await call(session, "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 1.5}})

        async def cancelled_there() -> list[dict[str, Any]]:
            return [
                line
                for line in bravo.log_lines()
                if line.get("via") == "gateway"
                and line["target"] == "slow"
                and line["outcome"] == "cancelled"
            ]

        lines = await wait_until(cancelled_there, 10)
        assert lines[0]["durationMs"] < 1500

        # a machine frozen (its daemon stopped, its connection still open) never accepts: nothing ran
        await anyio.sleep(2)  # the host is free again
        serving.send_signal(signal.SIGSTOP)
        try:
            frozen = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x"}})
        finally:
            serving.send_signal(signal.SIGCONT)
        assert frozen.structured_content["type"] in ("invocation_failed", "stale")
        assert frozen.structured_content.get("executionStarted") is False
        await wait_machine(session, "bravo-render", 1)
        done = await call(
            session,
            "invoke_dynamic",
            {"id": (await find_target(session, "echo"))["id"], "arguments": {"text": "thawed"}},
        )
        assert done.content[0].text == "thawed"
        assert (await structured(session, "list_host_instances", {"machineId": "bravo"}))["count"] == 1


async def test_a_cancelled_remote_script_stops_on_the_other_machine_and_rolls_back(
    nats_server: Any, machines: Any
) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    bravo.host("dxf", str(SAMPLES / "floorplan.dxf"))
    bravo.serve(CADMCP_GATEWAY=server.url)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        run = await find_target(session, "execute_python_code", host_app="DXF")
        slow = (
            "import time\n"
            "msp.add_line((0, 0), (1, 1), dxfattribs={'layer': 'CANCELLED'})\n"
            "for _ in range(400):\n"
            "    time.sleep(0.05)\n"
        )
        started = anyio.current_time()
        with anyio.move_on_after(1.5):  # the client gives up: the SDK sends notifications/cancelled
            await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": slow}})
        count = "len([e for e in msp if e.dxf.layer == 'CANCELLED'])"
        checked = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": count}})
        assert not checked.is_error, checked
        assert anyio.current_time() - started < 10  # the 20 s script did not keep the host busy
        assert "Result: 0" in checked.content[0].text  # the line it drew was rolled back
