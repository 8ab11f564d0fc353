"""Load: ten hosts, a thousand invokes from several sessions at once, none lost or duplicated."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from cadmcp.daemon import httpauth
from cadmcp.userdirs import CONFIG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.core.helpers import call, find, structured, wait_for_hosts
from tests.core.test_http import start_http_daemon

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOSTS = 10
SESSIONS = 5
CALLS = 1000


async def test_a_thousand_invokes_from_five_sessions_over_ten_hosts(
    hosts: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    for n in range(HOSTS):
        hosts.spawn("demo", "--app", f"Load{n}")
    for proc in hosts.procs:
        hosts.wait_ready(proc)
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime_dir), CONFIG_DIR_ENV: str(tmp_path / "config")}
    daemon, url = start_http_daemon(env)
    token = httpauth.read_token(tmp_path / "config" / httpauth.TOKEN_FILE)
    answers: dict[str, str] = {}
    failures: list[str] = []
    try:
        async with httpauth.connect(url, token=token) as (read, write), ClientSession(read, write) as first:
            await first.discover()
            await wait_for_hosts(first, HOSTS, timeout=60)
            echoes = [i for i in await find(first, "echo", limit=32) if i["target"] == "echo"]
            assert len(echoes) == HOSTS

            async def session_worker(worker: int) -> None:
                async with (
                    httpauth.connect(url, token=token) as (r, w),
                    ClientSession(r, w) as session,
                ):
                    await session.discover()
                    for n in range(worker, CALLS, SESSIONS):
                        text = f"call-{n}"
                        item = echoes[n % HOSTS]
                        result = await call(
                            session, "invoke_dynamic", {"id": item["id"], "arguments": {"text": text}}
                        )
                        if result.is_error or result.content[0].text in answers.values():
                            failures.append(f"{text}: {result.content[0].text[:200]}")
                        answers[text] = result.content[0].text

            with anyio.fail_after(600):
                async with anyio.create_task_group() as tg:
                    for worker in range(SESSIONS):
                        tg.start_soon(session_worker, worker)

            assert not failures, failures[:5]
            assert answers == {f"call-{n}": f"call-{n}" for n in range(CALLS)}
            served = 0
            for status in [
                i for i in await find(first, "demo://status", limit=32) if i["target"] == "demo://status"
            ]:
                read_back = await call(first, "invoke_dynamic", {"id": status["id"]})
                served += json.loads(read_back.content[0].resource.text)["calls"]
            assert served == CALLS  # each call reached a host exactly once
            assert (await structured(first, "list_host_instances"))["count"] == HOSTS
    finally:
        daemon.terminate()
        daemon.wait(15)
