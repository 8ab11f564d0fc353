"""The answers to an input round are bounded alike however they arrive: with the retried
`invoke_dynamic` (`inputResponses`) or with `tasks/update`. Too many answers, or answers too
large, are refused before anything else happens, naming the bound; the round stays open, and a
proper answer then goes through as if nothing had been sent."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from cadmcp.daemon.limits import MAX_RESPONSES, MAX_RESPONSES_BYTES
from tests.core.helpers import find_target, wait_for_hosts
from tests.policy.helpers import wait_host_calls
from tests.tasks.helpers import CreatedTask, UpdateParams, UpdateTask, poll, task_client_kwargs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

YES = {"action": "accept", "content": {"confirm": True}}
TOO_MANY = {f"k{n}": {"action": "decline"} for n in range(MAX_RESPONSES + 1)}
TOO_LARGE = {"confirm": {"action": "accept", "content": {"confirm": True, "note": "n" * MAX_RESPONSES_BYTES}}}


async def test_answers_retried_with_invoke_dynamic_are_bounded(hosts: Any, daemon_client: Any) -> None:
    demo = hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        call = {"id": (await find_target(session, "delete_item"))["id"], "arguments": {"item": "beta"}}
        asked = await session.call_tool("invoke_dynamic", call, allow_input_required=True)
        state = asked.request_state
        for answers, bound in ((TOO_MANY, MAX_RESPONSES), (TOO_LARGE, MAX_RESPONSES_BYTES)):
            refused = await session.call_tool(
                "invoke_dynamic",
                call,
                input_responses=answers,
                request_state=state,
                allow_input_required=True,
            )
            body = refused.structured_content
            assert refused.is_error and body["type"] == "validation_error"
            assert body["field"] == "inputResponses" and body["limit"] == bound
        reached = await wait_host_calls(demo.pid, "delete_item", 1)
        assert len(reached) == 1  # only the first call reached the host
        done = await session.call_tool(
            "invoke_dynamic", call, input_responses={"confirm": YES}, request_state=state
        )
        assert done.structured_content["deleted"] is True  # the state was not spent by the refusals


async def test_answers_sent_with_tasks_update_are_bounded_alike(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client(env={"CADMCP_TASK_AFTER": "0"}, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        handle = await session.call_tool(
            "invoke_dynamic", {"id": item["id"], "arguments": {"item": "beta"}}, allow_claimed=True
        )
        assert isinstance(handle, CreatedTask)
        await poll(session, handle.task_id, until={"input_required"})
        for answers, bound in ((TOO_MANY, MAX_RESPONSES), (TOO_LARGE, MAX_RESPONSES_BYTES)):
            update = UpdateTask(params=UpdateParams(task_id=handle.task_id, input_responses=answers))
            with pytest.raises(MCPError) as refused:
                await session.send_request(update, types.EmptyResult)
            assert refused.value.error.code == types.INVALID_PARAMS
            data = refused.value.error.data
            assert data["type"] == "validation_error" and data["field"] == "inputResponses"
            assert data["limit"] == bound
        waiting, _ = await poll(session, handle.task_id, until={"input_required"})
        assert waiting.status == "input_required"  # the round is still open
        update = UpdateTask(params=UpdateParams(task_id=handle.task_id, input_responses={"confirm": YES}))
        await session.send_request(update, types.EmptyResult)
        done, _ = await poll(session, handle.task_id)
        assert done.status == "completed" and done.field("result")["structuredContent"]["deleted"] is True
