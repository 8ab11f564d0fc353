"""Tasks for 2025-11-25 clients: the experimental core tasks of that revision, against real hosts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.core.helpers import find_target, wait_for_hosts
from tests.tasks.helpers import StatusParams, legacy_poll, raw, task_client_kwargs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"
RELATED = "io.modelcontextprotocol/related-task"


async def invoke_as_task(
    session: Any, cap: dict[str, Any], arguments: dict[str, Any], **task: Any
) -> dict[str, Any]:
    """A task-augmented `invoke_dynamic` (`params.task`), as a 2025-11-25 client sends it."""
    params = {"name": "invoke_dynamic", "arguments": {"id": cap["id"], "arguments": arguments}, "task": task}
    return await raw(session, "tools/call", params)


async def test_a_task_augmented_script_is_listed_polled_and_its_result_collected(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    shutil.copy(SAMPLE, tmp_path / "plan.dxf")
    hosts.start("dxf", str(tmp_path / "plan.dxf"))
    statuses: list[StatusParams] = []

    async def on_status(params: StatusParams) -> None:
        statuses.append(params)

    binding = task_client_kwargs(on_status)["notification_bindings"]
    async with daemon_client(era="legacy", notification_bindings=binding) as session:
        init = session.initialize_result
        assert init is not None and init.capabilities.tasks is not None
        assert init.capabilities.tasks.requests.tools.call is not None  # type: ignore[union-attr]
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["invoke_dynamic"].execution.task_support == "optional"  # type: ignore[union-attr]
        assert tools["search_dynamic"].execution is None
        await wait_for_hosts(session, 1)
        script = await find_target(session, "execute_python_code")
        code = (
            "import time\nfor i in range(6):\n    progress(i / 6, f'block {i}')\n    time.sleep(0.3)\n"
            "len(msp.query('LINE'))"
        )
        started = anyio.current_time()
        created = await invoke_as_task(session, script, {"code": code})
        assert anyio.current_time() - started < 1.5  # a task at once: the client asked for one
        task = created["task"]
        assert task["status"] == "working" and task["ttl"] == 3_600_000 and task["pollInterval"] == 1000
        listed = await raw(session, "tasks/list", {})
        assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]
        with anyio.fail_after(20):
            while "%: block" not in (await raw(session, "tasks/get", {"taskId": task["taskId"]})).get(
                "statusMessage", ""
            ):
                await anyio.sleep(0.1)
        result = await raw(session, "tasks/result", {"taskId": task["taskId"]})  # waits for the end
        assert result["content"][0]["text"].startswith("Result: ") and result["isError"] is False
        assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
        done = await raw(session, "tasks/get", {"taskId": task["taskId"]})
        assert done["status"] == "completed"
        await anyio.sleep(0.3)
        assert statuses and statuses[-1].status == "completed" and statuses[-1].task_id == task["taskId"]

        with pytest.raises(MCPError) as not_a_task:  # tools that never run as tasks say so (-32601)
            await raw(session, "tools/call", {"name": "search_dynamic", "arguments": {}, "task": {}})
        assert not_a_task.value.error.code == types.METHOD_NOT_FOUND
        with pytest.raises(MCPError, match="Task not found"):
            await raw(session, "tasks/get", {"taskId": "not-a-task"})


async def test_cancel_a_task_augmented_call_and_it_stays_cancelled(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client(era="legacy") as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        created = await invoke_as_task(session, slow, {"seconds": 3}, ttl=30_000)
        task_id = created["task"]["taskId"]
        assert created["task"]["ttl"] == 30_000  # the lifetime asked for (within the daemon's limit)
        await anyio.sleep(0.5)
        cancelled = await raw(session, "tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled" and "reached the host" in cancelled["statusMessage"]
        with pytest.raises(MCPError, match="already ended") as again:
            await raw(session, "tasks/cancel", {"taskId": task_id})
        assert again.value.error.code == types.INVALID_PARAMS
        with pytest.raises(MCPError, match="cancelled"):
            await raw(session, "tasks/result", {"taskId": task_id})
        await anyio.sleep(3)  # the host call ended meanwhile; the task stays cancelled
        assert (await legacy_poll(session, task_id))["status"] == "cancelled"


async def test_input_required_in_a_task_is_asked_on_tasks_result(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    asked: list[tuple[str, Any]] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append((params.message, (params.meta or {}).get(RELATED)))
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with daemon_client(era="legacy", elicitation_callback=elicit) as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        created = await invoke_as_task(session, item, {"item": "alpha"})
        task_id = created["task"]["taskId"]
        waiting = await legacy_poll(session, task_id, until={"input_required"})
        assert "call tasks/result to answer" in waiting["statusMessage"]
        result = await raw(session, "tasks/result", {"taskId": task_id})
        assert asked == [("Delete alpha?", {"taskId": task_id})]
        assert result["structuredContent"]["deleted"] is True and not result["isError"]
        assert (await legacy_poll(session, task_id))["status"] == "completed"
