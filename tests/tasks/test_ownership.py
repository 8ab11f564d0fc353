"""Tasks belong to the client that made them: over HTTP another session cannot read, list, wait
for or cancel them; a 2026-07-28 task outlives its client's connection and is polled again by id."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from cadmcp.daemon import httpauth
from tests.core.helpers import find_target, wait_for_hosts
from tests.core.test_http import start_http_daemon
from tests.security.test_http_auth import HttpDaemon, _env
from tests.tasks.helpers import CreatedTask, get_task, poll, raw, task_client_kwargs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def http_daemon(tmp_path: Path, runtime_dir: Path, hosts: Any) -> Iterator[HttpDaemon]:
    hosts.start("demo")
    env = {**_env(tmp_path), "CADMCP_RUNTIME_DIR": str(runtime_dir), "CADMCP_TASK_AFTER": "0.5"}
    proc, url = start_http_daemon(env)
    yield HttpDaemon(proc, url, tmp_path / "config", env)
    proc.terminate()
    proc.wait(10)


@asynccontextmanager
async def client(daemon: HttpDaemon, era: str, **kwargs: Any) -> AsyncIterator[ClientSession]:
    async with (
        httpauth.connect(daemon.url, token=daemon.token) as (read, write),
        ClientSession(read, write, **kwargs) as session,
    ):
        await (session.discover() if era == "modern" else session.initialize())
        yield session


async def slow_call(session: ClientSession, seconds: float) -> dict[str, Any]:
    slow = await find_target(session, "slow")
    return {"name": "invoke_dynamic", "arguments": {"id": slow["id"], "arguments": {"seconds": seconds}}}


async def test_another_session_cannot_read_list_wait_for_or_cancel_a_task(http_daemon: HttpDaemon) -> None:
    async with (
        client(http_daemon, "legacy") as first,
        client(http_daemon, "legacy") as second,
        client(http_daemon, "modern", **task_client_kwargs()) as modern,
    ):
        await wait_for_hosts(first, 1)
        call = await slow_call(first, 2)
        task_id = (await raw(first, "tools/call", {**call, "task": {}}))["task"]["taskId"]

        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            with pytest.raises(MCPError, match="Task not found") as refused:
                await raw(second, method, {"taskId": task_id})
            assert refused.value.error.code == types.INVALID_PARAMS
        assert (await raw(second, "tasks/list", {}))["tasks"] == []
        with pytest.raises(MCPError, match="Task not found"):  # nor a client of the other protocol era
            await get_task(modern, task_id)

        own = await modern.call_tool("invoke_dynamic", call["arguments"], allow_claimed=True)
        assert isinstance(own, CreatedTask)
        with pytest.raises(MCPError, match="Task not found"):
            await raw(first, "tasks/get", {"taskId": own.task_id})

        assert [t["taskId"] for t in (await raw(first, "tasks/list", {}))["tasks"]] == [task_id]
        result = await raw(first, "tasks/result", {"taskId": task_id})  # untouched by the others
        assert result["content"][0]["text"].startswith("slept 2")


async def test_a_task_outlives_the_connection_of_the_client_that_made_it(http_daemon: HttpDaemon) -> None:
    async with client(http_daemon, "modern", **task_client_kwargs()) as gone:
        await wait_for_hosts(gone, 1)
        call = await slow_call(gone, 2)
        handle = await gone.call_tool("invoke_dynamic", call["arguments"], allow_claimed=True)
        assert isinstance(handle, CreatedTask)
    async with client(http_daemon, "modern", **task_client_kwargs()) as back:  # a new connection
        final, _ = await poll(back, handle.task_id)
        assert final.status == "completed"
        assert final.field("result")["content"][0]["text"].startswith("slept 2")
