"""Daemons an AI client started over stdio: the first one asked serves the machine's only page."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from tests.core.helpers import wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]


def _dashboard() -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cadmcp", "dashboard", "--no-open"],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
    )


def _get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        path = f"{parts.path}?{parts.query}" if parts.query else parts.path
        conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


async def test_one_of_two_stdio_daemons_serves_the_page_and_both_give_links_to_it(
    hosts: Any, daemon_client: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    none = await anyio.to_thread.run_sync(_dashboard)
    assert none.returncode == 1 and "no cadmcp daemon is running" in none.stderr
    toolset = tmp_path / "mytools"
    toolset.mkdir()
    (toolset / "broken.py").write_text("def half_written(:\n")
    demo = hosts.start("demo", "--toolset", str(toolset))
    async with daemon_client() as first, daemon_client(era="legacy") as second:
        await wait_for_hosts(first, 1)
        await wait_for_hosts(second, 1)
        links = []
        for _ in range(2):
            done = await anyio.to_thread.run_sync(_dashboard)
            assert done.returncode == 0, done.stderr
            links.append(done.stdout.split("open ", 1)[1].split()[0])
        bases = {link.split("/dashboard/", 1)[0] for link in links}
        assert len(bases) == 1 and next(iter(bases)).startswith("http://127.0.0.1:"), links
        assert links[0] != links[1]  # a new one-time code each time
        status, headers, _ = await anyio.to_thread.run_sync(_get, links[1])
        assert status == 303
        cookie = headers["set-cookie"].split(";", 1)[0]
        base = next(iter(bases))
        with anyio.fail_after(60):  # the host panel fills in as the daemon reads each host's report
            while True:
                status, _, body = await anyio.to_thread.run_sync(_get, f"{base}/dashboard/api/state", cookie)
                assert status == 200
                state = json.loads(body)
                if state["hosts"] and state["hosts"][0]["toolsets"] is not None:
                    break
                await anyio.sleep(0.25)
        assert [h["pid"] for h in state["hosts"]] == [demo.pid]
        clients = {c.get("client") for c in state["calls"] if c["target"] == "list_host_instances"}
        assert clients and all(clients), state["calls"]  # who called: the client as it introduced itself
        errors = state["hosts"][0]["toolsets"]["errors"]  # the host panel shows toolsets' load errors
        assert errors and "mytools" in errors[0]["path"], state["hosts"][0]["toolsets"]
        assert (runtime_dir / "dashboard.lock").read_text().strip() == str(state["daemon"]["pid"])
        assert (await anyio.to_thread.run_sync(_get, f"{base}/mcp"))[0] in (302, 307)  # only the page here


async def test_when_the_daemon_serving_the_page_exits_another_goes_on_at_the_same_address_and_login(
    hosts: Any, daemon_client: Any, runtime_dir: Path
) -> None:
    """The page died with the AI client session whose daemon served it, though another client's
    daemon still ran: the person had to run `cadmcp dashboard` again and log in anew."""
    hosts.start("demo")
    # the daemon of a client that goes away: started over stdio, ended by closing its stdin
    first = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, SEMANTIC_ENV: "off"},
    )
    try:
        with anyio.fail_after(60):  # the only daemon when the link is asked
            while (serving := await anyio.to_thread.run_sync(_dashboard)).returncode != 0:
                await anyio.sleep(0.2)
        link = serving.stdout.split("open ", 1)[1].split()[0]
        base = link.split("/dashboard/", 1)[0]
        status, headers, _ = await anyio.to_thread.run_sync(_get, link)
        assert status == 303
        cookie = headers["set-cookie"].split(";", 1)[0]
        status, _, body = await anyio.to_thread.run_sync(_get, f"{base}/dashboard/api/state", cookie)
        assert status == 200 and json.loads(body)["daemon"]["pid"] == first.pid
        status, _, page = await anyio.to_thread.run_sync(_get, f"{base}/dashboard/", cookie)
        csrf = page.split(b'name="csrf" content="', 1)[1].split(b'"', 1)[0]
    except BaseException:
        first.kill()
        raise
    async with daemon_client() as second:
        await wait_for_hosts(second, 1)
        assert first.stdin is not None
        first.stdin.close()
        assert await anyio.to_thread.run_sync(first.wait, 30) is not None
        with anyio.fail_after(30):
            while True:
                try:
                    status, _, body = await anyio.to_thread.run_sync(
                        _get, f"{base}/dashboard/api/state", cookie
                    )
                except OSError:  # nobody listens for a moment
                    status = 0
                if status == 200 and json.loads(body)["daemon"]["pid"] != first.pid:
                    break
                assert status in (0, 200), (status, body)
                await anyio.sleep(0.2)
        status, _, page = await anyio.to_thread.run_sync(_get, f"{base}/dashboard/", cookie)
        assert status == 200 and csrf in page  # the open page's token still holds for its changes
        stranger = await anyio.to_thread.run_sync(_get, f"{base}/dashboard/api/state", "cadmcp_dashboard=x")
        assert stranger[0] == 401
        again = await anyio.to_thread.run_sync(_dashboard)  # new links come from the daemon serving now
        assert again.returncode == 0 and again.stdout.split("open ", 1)[1].startswith(base), again.stdout
    assert (runtime_dir / "dashboard.json").stat().st_mode & 0o777 == 0o600
