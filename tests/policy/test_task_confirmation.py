"""A confirmation the person's policy asks for, through the MCP task channel: the call becomes a
task at once and its question waits in the task's input round (answered with `tasks/update` in
2026-07-28, on `tasks/result` through elicitation in 2025-11-25); only a yes runs it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from cadmcp.daemon.policy.gate import APPROVAL_KEY
from tests.core.helpers import find_target, wait_for_hosts
from tests.policy.helpers import host_calls, policy_env, wait_host_calls, wait_log_lines
from tests.tasks.helpers import (
    CreatedTask,
    UpdateParams,
    UpdateTask,
    legacy_poll,
    poll,
    raw,
    task_client_kwargs,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SCRIPT = "msp.add_circle((300, 300), 30)"
RELATED = "io.modelcontextprotocol/related-task"


@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_a_2026_task_asks_the_person_in_its_input_round_with_the_preview(
    hosts: Any, daemon_client: Any, tmp_path: Path, answer: str
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    dxf = hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "confirm-changes"}, CADMCP_TASK_AFTER="30")
    async with daemon_client(env=env, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        handle = await session.call_tool(
            "invoke_dynamic", {"id": code["id"], "arguments": {"code": SCRIPT}}, allow_claimed=True
        )
        assert isinstance(handle, CreatedTask)  # long before the 30 s after which calls become tasks
        asking, _ = await poll(session, handle.task_id, until={"input_required"})
        requests = asking.field("inputRequests")
        assert list(requests) == [APPROVAL_KEY] and requests[APPROVAL_KEY]["method"] == "elicitation/create"
        question = requests[APPROVAL_KEY]["params"]["message"]
        assert question.startswith("Allow execute_python_code on DXF") and "creates 1 (1 CIRCLE)" in question
        assert f"Code:\n{SCRIPT}" in question
        reply = {"action": answer, **({"content": {"approve": True}} if answer == "accept" else {})}
        update = UpdateTask(
            params=UpdateParams(task_id=handle.task_id, input_responses={APPROVAL_KEY: reply})
        )
        await session.send_request(update, types.EmptyResult)
        done, _ = await poll(session, handle.task_id)
        assert done.status == "completed"
        result = done.field("result")
        if answer == "accept":
            assert not result["isError"] and "[UNDO STEP]" in result["content"][0]["text"]
        else:
            assert result["isError"] and result["structuredContent"]["type"] == "not_confirmed"
    expected = 2 if answer == "accept" else 1
    applied = await wait_host_calls(dxf.pid, "execute_python_code", expected)
    assert len(applied) == expected  # the preview, then (on yes) the change
    decision = next(d for d in await wait_log_lines("policy/decision") if d.get("how"))
    assert decision["how"] == "task input round" and decision["answeredBy"] == "client"
    assert decision["answer"] == answer and decision["preview"]["created"] == 1


async def test_a_2025_task_asks_the_person_on_tasks_result(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    demo = hosts.start("demo")
    asked: list[tuple[str, Any]] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append((params.message, (params.meta or {}).get(RELATED)))
        return types.ElicitResult(action="accept", content={"approve": True})

    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        params = {
            "name": "invoke_dynamic",
            "arguments": {"id": echo["id"], "arguments": {"text": "t1"}},
            "task": {},
        }
        created = await raw(session, "tools/call", params)
        task_id = created["task"]["taskId"]
        waiting = await legacy_poll(session, task_id, until={"input_required"})
        assert "Allow echo on Demo 1.0" in waiting["statusMessage"]
        assert host_calls(demo.pid, "echo") == []  # nothing ran while the person was asked
        result = await raw(session, "tasks/result", {"taskId": task_id})
        assert not result["isError"] and result["content"][0]["text"] == "t1"
    assert len(asked) == 1 and asked[0][0].startswith("Allow echo") and asked[0][1] == {"taskId": task_id}
    assert len(await wait_host_calls(demo.pid, "echo", 1)) == 1
