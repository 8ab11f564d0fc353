"""A foreign server's questions and tasks with several calls in flight, through a real daemon and
@modelcontextprotocol/server-everything (npm).

Its `simulate-research-query` runs only as a (2025-11-25) task and asks, mid-task, which reading of
an ambiguous topic is meant; `trigger-elicitation-request` asks in a plain call;
`trigger-long-running-operation` reports progress. Each answer must reach the call that asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession

from cadmcp.applications import CONFIG_ENV
from tests.foreign.conftest import config_env
from tests.foreign.test_foreign_e2e import _hosts_ready, _item
from tests.policy.helpers import host_calls
from tests.tasks.helpers import (
    CancelTask,
    CreatedTask,
    TaskParams,
    UpdateParams,
    UpdateTask,
    poll,
    task_client_kwargs,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

APPROVE = {"approve": True, "confirm": True}
RELATED = "io.modelcontextprotocol/related-task"


@pytest.fixture
def everything_host(
    hosts: Any, tmp_path: Path, everything: list[str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """server-everything over stdio as the foreign host Everything, ready; the daemon's environment."""
    env = config_env(
        tmp_path, {"Everything": {"server": {"command": everything[0], "args": [everything[1], "stdio"]}}}
    )
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.wait_ready(hosts.spawn("Everything"), 120)
    return env


async def _answered(
    session: ClientSession, cap_id: str, arguments: dict[str, Any], answer: dict[str, Any]
) -> Any:
    """An invoke driven through its input rounds: the server's question (`elicitation`) gets
    `answer`, any question of the person's policy a yes; the rounds' keys and the final result."""
    asked: list[str] = []
    state = responses = None
    for _ in range(4):
        result = await session.call_tool(
            "invoke_dynamic",
            {"id": cap_id, "arguments": arguments},
            allow_input_required=True,
            input_responses=responses,
            request_state=state,
        )
        if result.result_type != "input_required":
            return asked, result
        asked += list(result.input_requests or {})
        responses = {
            key: types.ElicitResult(action="accept", content=answer if key == "elicitation" else APPROVE)
            for key in result.input_requests or {}
        }
        state = result.request_state
    raise AssertionError(f"still asking after four rounds: {asked}")


def _text(result: Any) -> str:
    return " ".join(c.text for c in result.content if c.type == "text")


@pytest.mark.timeout(240)
async def test_each_question_of_concurrent_calls_reaches_the_call_that_asked(
    daemon_client: Any, everything_host: dict[str, str]
) -> None:
    env = everything_host
    async with daemon_client(era="modern", env=env) as session:
        await _hosts_ready(session, {"Everything"})
        research = await _item(session, "simulate a research query", "simulate-research-query")
        plain = await _item(session, "elicitation request", "trigger-elicitation-request")
        long_op = await _item(session, "long running operation", "trigger-long-running-operation")

        # three research tasks and one plain question in flight at once, each answered differently
        readings = {"snake": "python snakes", "comedy": "python comedy", "programming": "python code"}
        outcomes: dict[str, Any] = {}

        async def research_one(reading: str, topic: str) -> None:
            outcomes[reading] = await _answered(
                session, research["id"], {"topic": topic, "ambiguous": True}, {"interpretation": reading}
            )

        async def plain_one() -> None:
            outcomes["plain"] = await _answered(session, plain["id"], {}, {"name": "Grace", "check": True})

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for reading, topic in readings.items():
                    tg.start_soon(research_one, reading, topic)
                tg.start_soon(plain_one)
        for reading, topic in readings.items():
            asked, result = outcomes[reading]
            assert "elicitation" in asked and not result.is_error, result
            assert f"{topic} ({reading})" in _text(result), _text(result)[:300]
            assert RELATED not in json.dumps(result.model_dump(mode="json", by_alias=True))
        asked, result = outcomes["plain"]
        assert "elicitation" in asked and "Grace" in _text(result), result

        # two plain calls in flight: the question names neither, so it goes to none of them
        outcomes.clear()

        async def long_one() -> None:
            outcomes["long"] = await _answered(session, long_op["id"], {"duration": 4, "steps": 4}, {})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_one)
                await anyio.sleep(1.0)
                tg.start_soon(plain_one)
        asked, result = outcomes["long"]
        assert "elicitation" not in asked and not result.is_error, result  # never asked another's question
        asked, result = outcomes["plain"]
        assert "elicitation" not in asked and "Grace" not in _text(result), result


@pytest.mark.timeout(240)
async def test_a_foreign_tool_as_a_daemon_task_reports_progress_asks_and_is_cancelled_at_the_server(
    daemon_client: Any, everything_host: dict[str, str]
) -> None:
    env = everything_host
    heard: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, message))

    async with daemon_client(env={**env, "CADMCP_TASK_AFTER": "0.5"}, **task_client_kwargs()) as session:
        by_app = await _hosts_ready(session, {"Everything"})
        long_op = await _item(session, "long running operation", "trigger-long-running-operation")
        research = await _item(session, "simulate a research query", "simulate-research-query")

        # the server's progress reaches the task's caller, and the task completes with its result
        handle = await session.call_tool(
            "invoke_dynamic",
            {"id": long_op["id"], "arguments": {"duration": 3, "steps": 3}},
            allow_claimed=True,
            progress_callback=on_progress,
        )
        assert isinstance(handle, CreatedTask), handle
        done, seen = await poll(session, handle.task_id)
        assert done.status == "completed", done
        assert "Long running operation completed" in json.dumps(done.field("result"))
        progress = {t.status_message for t in seen if "%" in (t.status_message or "")}
        assert len(progress) >= 2, [t.status_message for t in seen]  # the server's progress, as status

        # a server task behind a daemon task: its stages are progress, its question an input round
        heard.clear()
        handle = await session.call_tool(
            "invoke_dynamic",
            {"id": research["id"], "arguments": {"topic": "python", "ambiguous": True}},
            allow_claimed=True,
            progress_callback=on_progress,
        )
        assert isinstance(handle, CreatedTask), handle
        asking, seen = await poll(session, handle.task_id, until={"input_required"})
        requests = asking.field("inputRequests")
        assert list(requests) == ["elicitation"], requests
        assert "could have multiple interpretations" in json.dumps(requests)
        answer = {"action": "accept", "content": {"interpretation": "comedy"}}
        update = UpdateTask(
            params=UpdateParams(task_id=handle.task_id, input_responses={"elicitation": answer})
        )
        await session.send_request(update, types.EmptyResult)
        done, after = await poll(session, handle.task_id)
        assert done.status == "completed", done
        assert "python (comedy)" in json.dumps(done.field("result"))
        stages = " ".join(str(t.status_message) for t in seen + after) + " ".join(str(m) for _, m in heard)
        assert "Analyzing content" in stages or "Gathering sources" in stages, stages

        # cancelling the daemon's task cancels the call at the proxy and the task at the server
        handle = await session.call_tool(
            "invoke_dynamic",
            {"id": long_op["id"], "arguments": {"duration": 60, "steps": 60}},
            allow_claimed=True,
        )
        assert isinstance(handle, CreatedTask), handle
        await session.send_request(CancelTask(params=TaskParams(task_id=handle.task_id)), types.Result)
        final, _ = await poll(session, handle.task_id)
        assert final.status == "cancelled", final
        proxy = by_app["Everything"]["pid"]
        with anyio.fail_after(20):
            while not any(
                line["outcome"] == "cancelled" and line.get("durationMs", 60_000) < 30_000
                for line in host_calls(proxy, "trigger-long-running-operation")
            ):
                await anyio.sleep(0.2)
