"""Tasks for 2026-07-28 clients (the io.modelcontextprotocol/tasks extension), against real hosts."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.core.helpers import find_target, wait_for_hosts
from tests.tasks.helpers import (
    TASKS,
    CancelTask,
    CreatedTask,
    TaskParams,
    UpdateParams,
    UpdateTask,
    call,
    get_task,
    poll,
    raw,
    task_client_kwargs,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
COUNT_LINES = "len(msp.query('LINE'))"


def drawing(tmp_path: Path) -> Path:
    target = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", target)
    return target


async def run(session: Any, cap: dict[str, Any], code: str, **kw: Any) -> Any:
    return await session.call_tool("invoke_dynamic", {"id": cap["id"], "arguments": {"code": code}}, **kw)


async def test_a_long_script_becomes_a_task_polled_to_completion_with_its_progress(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    hosts.start("dxf", str(drawing(tmp_path)))
    heard: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, message))

    async with daemon_client(env={"CADMCP_TASK_AFTER": "1"}, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        script = await find_target(session, "execute_python_code")
        quick = await run(session, script, "1 + 1", allow_claimed=True)  # quick calls answer directly
        assert isinstance(quick, types.CallToolResult) and quick.content[0].text == "Result: 2"

        code = (
            "import time\n"
            "for i in range(8):\n"
            "    msp.add_line((0, i), (5, i))\n"
            "    progress(i / 8, f'storey {i} of 8')\n"
            "    time.sleep(0.4)\n"
            f"{COUNT_LINES}"
        )
        started = anyio.current_time()
        handle = await run(session, script, code, allow_claimed=True, progress_callback=on_progress)
        assert isinstance(handle, CreatedTask), handle
        assert 1 <= anyio.current_time() - started < 3.2  # answered at the threshold, while it runs
        assert handle.status == "working" and len(handle.task_id) >= 32
        extra = handle.model_extra or {}
        assert extra["pollIntervalMs"] == extra["pollIntervalMilliseconds"] == 1000
        assert extra["ttlMs"] == extra["ttlSeconds"] * 1000
        assert heard and heard[0] == (0.0, "storey 0 of 8")  # progress reached the token before the task

        final, seen = await poll(session, handle.task_id)
        messages = [t.status_message or "" for t in seen]
        assert any("%: storey" in m for m in messages), messages  # progress became the status message
        assert final.status == "completed", final
        result = types.CallToolResult.model_validate(final.field("result"))
        assert not result.is_error
        text = result.content[0].text
        assert text.startswith("Result: ") and "[UNDO STEP]" in text
        assert final.meta["io.cadmcp/task"] == {"executionStarted": True}
        again = await get_task(session, handle.task_id)  # a finished task stays readable
        assert again.field("result") == final.field("result")


async def test_a_client_without_tasks_and_quick_calls_see_no_difference(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    env = {"CADMCP_TASK_AFTER": "0.5"}
    async with daemon_client(env=env) as plain, daemon_client(env=env, **task_client_kwargs()) as tasked:
        await wait_for_hosts(plain, 1)
        slow = await find_target(plain, "slow")
        swatch = await find_target(plain, "render_swatch")
        started = anyio.current_time()
        waited = await plain.call_tool("invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 1.5}})
        assert anyio.current_time() - started >= 1.5  # no task: the call is simply waited for
        assert waited.content[0].text.startswith("slept 1.5s") and not waited.is_error

        for args in ({"red": 10, "size": 4}, {"red": "loud"}):  # an image, then a validation envelope
            direct = await plain.call_tool("invoke_dynamic", {"id": swatch["id"], "arguments": args})
            same = await tasked.call_tool(
                "invoke_dynamic", {"id": swatch["id"], "arguments": args}, allow_claimed=True
            )
            assert isinstance(same, types.CallToolResult)
            assert same.model_dump() == direct.model_dump()
        stale = await tasked.call_tool("invoke_dynamic", {"id": "caaaaaaaaaaaa"}, allow_claimed=True)
        assert isinstance(stale, types.CallToolResult) and stale.structured_content["type"] == "stale"
        errors = []
        for session in (plain, tasked):  # a malformed call gets the same JSON-RPC error either way
            with pytest.raises(MCPError) as malformed:
                await raw(session, "tools/call", {"name": "invoke_dynamic", "arguments": "not an object"})
            errors.append((malformed.value.error.code, malformed.value.error.message))
        assert errors[0] == errors[1] and errors[0][0] == types.INVALID_PARAMS


async def test_cancelling_a_running_task_stops_the_script_and_leaves_the_drawing_as_it_was(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    hosts.start("dxf", str(drawing(tmp_path)))
    async with daemon_client(env={"CADMCP_TASK_AFTER": "0.5"}, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        script = await find_target(session, "execute_python_code")
        before = (await run(session, script, COUNT_LINES)).content[0].text
        code = (
            "import time\n"
            "for i in range(300):\n"
            "    msp.add_line((0, i), (10, i))\n"
            "    progress(i / 300, f'line {i}')\n"
            "    time.sleep(0.1)\n"
        )
        handle = await run(session, script, code, allow_claimed=True)
        assert isinstance(handle, CreatedTask)
        await poll(session, handle.task_id, until={"working"})
        with anyio.fail_after(10):
            while "%: line" not in ((await get_task(session, handle.task_id)).status_message or ""):
                await anyio.sleep(0.1)  # lines are being added now
        ack = await session.send_request(
            CancelTask(params=TaskParams(task_id=handle.task_id)), types.EmptyResult
        )
        assert ack is not None
        final, _ = await poll(session, handle.task_id)
        assert final.status == "cancelled"
        assert "reached the host" in (final.status_message or "") and "rolled back" in final.status_message
        assert final.meta["io.cadmcp/task"] == {"executionStarted": True}
        with anyio.fail_after(15):  # the host serves again, and the drawing is as before the script
            after = (await run(session, script, COUNT_LINES)).content[0].text
        assert after == before
        history = await find_target(session, "navigate_history")
        undo = await session.call_tool(
            "invoke_dynamic", {"id": history["id"], "arguments": {"direction": "back"}}
        )
        assert undo.structured_content["navigated"] == 0  # the cancelled run left no step behind
        again = await session.send_request(  # cancelling a finished task is acknowledged, changes nothing
            CancelTask(params=TaskParams(task_id=handle.task_id)), types.EmptyResult
        )
        assert again is not None and (await get_task(session, handle.task_id)).status == "cancelled"


async def test_input_required_inside_a_task_is_answered_with_tasks_update(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    async with daemon_client(env={"CADMCP_TASK_AFTER": "0"}, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        handle = await session.call_tool(
            "invoke_dynamic", {"id": item["id"], "arguments": {"item": "beta"}}, allow_claimed=True
        )
        assert isinstance(handle, CreatedTask)
        asking, _ = await poll(session, handle.task_id, until={"input_required"})
        requests = asking.field("inputRequests")
        assert list(requests) == ["confirm"] and requests["confirm"]["method"] == "elicitation/create"
        assert "Delete beta?" in (asking.status_message or "") and "tasks/update" in asking.status_message
        assert "pending:beta" not in json.dumps(
            asking.model_dump(by_alias=True)
        )  # the host's state stays inside

        answer = {"action": "accept", "content": {"confirm": True}}
        update = UpdateTask(params=UpdateParams(task_id=handle.task_id, input_responses={"confirm": answer}))
        assert await session.send_request(update, types.EmptyResult) is not None
        done, _ = await poll(session, handle.task_id)
        assert done.status == "completed"
        result = done.field("result")
        assert result["structuredContent"] == {"item": "beta", "deleted": True, "state": "pending:beta"}
        late = UpdateTask(params=UpdateParams(task_id=handle.task_id, input_responses={"confirm": answer}))
        await session.send_request(late, types.EmptyResult)  # an answered round answers once
        status = await find_target(session, "demo://status")
        read = await call(session, "invoke_dynamic", {"id": status["id"]})
        assert json.loads(read.content[0].resource.text)["items"] == ["alpha", "gamma"]


async def test_a_task_whose_host_is_killed_fails_and_says_why(hosts: Any, daemon_client: Any) -> None:
    victim = hosts.start("demo")
    async with daemon_client(env={"CADMCP_TASK_AFTER": "0.3"}, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        handle = await session.call_tool(
            "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 30}}, allow_claimed=True
        )
        assert isinstance(handle, CreatedTask)
        os.kill(victim.pid, signal.SIGKILL)
        final, _ = await poll(session, handle.task_id, timeout=30)
        assert final.status == "failed"
        error = final.field("error")
        assert error["code"] == types.INTERNAL_ERROR
        assert error["data"]["type"] == "invocation_failed" and error["data"]["executionStarted"] is True
        assert f"pid {victim.pid}" in (final.status_message or "")


async def test_tasks_are_forgotten_after_their_ttl_and_one_still_running_is_stopped(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    env = {"CADMCP_TASK_AFTER": "0", "CADMCP_TASK_TTL": "2"}
    async with daemon_client(env=env, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        short = await session.call_tool(
            "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 0.2}}, allow_claimed=True
        )
        long = await session.call_tool(
            "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 8}}, allow_claimed=True
        )
        assert isinstance(short, CreatedTask) and isinstance(long, CreatedTask)
        assert (short.model_extra or {})["ttlSeconds"] == 2
        done, _ = await poll(session, short.task_id)
        assert done.status == "completed"
        stopped, _ = await poll(session, long.task_id, timeout=10)
        assert stopped.status == "failed" and "time to live" in (stopped.status_message or "")
        with anyio.fail_after(10):
            while True:
                try:
                    await get_task(session, short.task_id)
                except MCPError as gone:
                    assert gone.error.code == types.INVALID_PARAMS
                    assert "expired" in gone.error.message
                    break
                await anyio.sleep(0.2)
        with pytest.raises(MCPError, match="not found"):
            await get_task(session, "x" * 32)


async def test_launch_host_runs_as_a_task(daemon_client: Any) -> None:
    async with daemon_client(env={"CADMCP_TASK_AFTER": "0"}, **task_client_kwargs()) as session:
        handle = await session.call_tool(
            "launch_host", {"filePath": str(SAMPLES / "house.ifc")}, allow_claimed=True
        )
        assert isinstance(handle, CreatedTask)
        final, seen = await poll(session, handle.task_id, timeout=120)
        assert final.status == "completed", final
        launched = final.field("result")["structuredContent"]
        assert launched["hostApp"] == "IFC" and launched["bridgeConnected"] is True
        messages = [(handle.model_extra or {}).get("statusMessage"), *(t.status_message for t in seen)]
        assert any("started the IFC host" in (m or "") for m in messages), messages
        listing = await session.call_tool("list_host_instances", {})
        assert [h["pid"] for h in listing.structured_content["hosts"]] == [launched["pid"]]


async def test_status_notifications_arrive_on_a_listen_stream_naming_the_task(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    heard: list[Any] = []

    async def on_status(params: Any) -> None:
        heard.append(params)

    async with daemon_client(env={"CADMCP_TASK_AFTER": "0"}, **task_client_kwargs(on_status)) as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        handle = await session.call_tool(
            "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 1}}, allow_claimed=True
        )
        listen = types.SubscriptionsListenRequest(
            params=types.SubscriptionsListenRequestParams(
                notifications=types.SubscriptionFilter(taskIds=[handle.task_id, "someone-elses"])
            )
        )
        with anyio.fail_after(20):  # the stream ends by itself once the task has finished
            ended = await session.send_request(listen, types.SubscriptionsListenResult)
        assert ended is not None
        statuses = [p.status for p in heard if p.task_id == handle.task_id]
        assert statuses[0] == "working" and statuses[-1] == "completed"
        assert heard[-1].model_extra["result"]["content"][0]["text"].startswith("slept 1")
        assert {p.task_id for p in heard} == {handle.task_id}

    async with daemon_client() as undeclared:  # task methods need the extension declared (-32021)
        with pytest.raises(MCPError) as refused:
            await undeclared.send_request(listen, types.SubscriptionsListenResult)
        assert refused.value.error.code == -32021
        with pytest.raises(MCPError) as unasked:
            await get_task(undeclared, handle.task_id)
        assert unasked.value.error.code == -32021
        assert unasked.value.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


TOOLSET = '''
import time
from mcp.server.mcpserver import MCPServer

server = MCPServer("task-rules")


@server.tool(meta={"io.cadmcp/taskSupport": "required"})
def archive(name: str) -> str:
    """Archive a drawing (always a task)."""
    return f"archived {name}"


@server.tool(meta={"io.cadmcp/taskSupport": "forbidden"})
def hold(seconds: float) -> str:
    """Hold the drawing (never a task)."""
    time.sleep(seconds)
    return "held"
'''


async def test_host_tools_declare_their_own_task_support(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "rules.py").write_text(TOOLSET)
    hosts.start("demo", "--toolset", str(folder))
    async with daemon_client(env={"CADMCP_TASK_AFTER": "0.3"}, **task_client_kwargs()) as session:
        await wait_for_hosts(session, 1)
        archive = await find_target(session, "archive")
        hold = await find_target(session, "hold")
        required = await session.call_tool(
            "invoke_dynamic", {"id": archive["id"], "arguments": {"name": "a.dxf"}}, allow_claimed=True
        )
        assert isinstance(required, CreatedTask)  # quick, but it asked to be a task
        assert (await poll(session, required.task_id))[0].field("result")["content"][0][
            "text"
        ] == "archived a.dxf"
        forbidden = await session.call_tool(
            "invoke_dynamic", {"id": hold["id"], "arguments": {"seconds": 1.2}}, allow_claimed=True
        )
        assert isinstance(forbidden, types.CallToolResult) and forbidden.content[0].text == "held"
