"""A used requestState cannot be replayed: a confirmed action runs once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from cadmcp.daemon.replay import SpentNonces
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.calllog import parse_line
from tests.core.helpers import find_target, wait_for_hosts


def _host_calls(log_dir: Path, pid: int, target: str) -> int:
    """How many times the host logged a tools/call of `target` (every call the host ran)."""
    count = 0
    for path in log_dir.glob(f"log_{pid}_*.log"):
        for raw in path.read_text(encoding="utf-8").splitlines():
            if " tools/call " in raw and parse_line(raw).get("target") == target:
                count += 1
    return count


@pytest.mark.anyio
async def test_replaying_a_confirmed_round_is_refused_and_nothing_runs(
    hosts: Any, daemon_client: Any
) -> None:
    log_dir = Path(os.environ[LOG_DIR_ENV])
    host = hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        args = {"id": item["id"], "arguments": {"item": "beta"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        answer = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}
        done = await session.call_tool(
            "invoke_dynamic", args, input_responses=answer, request_state=first.request_state
        )
        assert done.structured_content["deleted"] is True
        with anyio.fail_after(10):  # the host writes a call's line after its answer has gone out
            while (ran := _host_calls(log_dir, host.pid, "delete_item")) < 2:
                await anyio.sleep(0.05)
        assert ran == 2  # the asking round and the confirmed one

        replayed = await session.call_tool(
            "invoke_dynamic", args, input_responses=answer, request_state=first.request_state
        )
        assert replayed.is_error
        error = replayed.structured_content
        assert error["type"] == "validation_error" and error["reason"] == "request_state_used"
        assert "already used" in error["message"] and "without requestState" in error["message"]
        assert _host_calls(log_dir, host.pid, "delete_item") == ran  # the host was not called again

        again = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert isinstance(again, types.InputRequiredResult)  # a new round works as before
        assert again.request_state != first.request_state

        # the new round's state with other arguments: refused, saying what to do; nothing runs
        other = {"id": item["id"], "arguments": {"item": "gamma"}}
        moved = await session.call_tool(
            "invoke_dynamic", other, input_responses=answer, request_state=again.request_state
        )
        assert moved.is_error and moved.structured_content["type"] == "validation_error"
        assert moved.structured_content["reason"] == "invalid_request_state"
        assert "Start the call again without requestState" in moved.structured_content["message"]
        with anyio.fail_after(10):  # the host writes a call's line after its answer has gone out
            while (count := _host_calls(log_dir, host.pid, "delete_item")) < ran + 1:
                await anyio.sleep(0.05)
        assert count == ran + 1  # the new asking round only: the refused one never reached the host


def test_a_nonce_is_spent_once() -> None:
    spent = SpentNonces(clock=lambda: 100.0)
    assert spent.spend("a", expires=200.0)
    assert not spent.spend("a", expires=200.0)
    assert spent.spend("b", expires=200.0)


def test_spent_nonces_are_forgotten_once_their_state_expired() -> None:
    now = [100.0]
    spent = SpentNonces(clock=lambda: now[0])
    assert spent.spend("a", expires=150.0)
    now[0] = 151.0
    assert len(spent) == 0  # the state itself is refused as expired from here on


def test_a_full_store_drops_the_oldest_and_refuses_everything_as_old() -> None:
    spent = SpentNonces(capacity=3, clock=lambda: 0.0)
    for n, expires in enumerate([10.0, 20.0, 30.0, 40.0]):
        assert spent.spend(f"n{n}", expires)
    assert len(spent) == 3
    assert not spent.spend("n0", 10.0)  # forgotten, yet still refused: it is below the floor
    assert not spent.spend("fresh-but-old", 10.0)
    assert spent.spend("fresh", 35.0)
