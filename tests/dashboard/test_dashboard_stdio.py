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

from cadmcp.applications import CONFIG_ENV
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from tests.core.helpers import wait_for_hosts
from tests.foreign.conftest import config_env

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
    first = _stdio_daemon()
    try:
        link = await _link_when_served()  # the only daemon when the link is asked
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


async def test_a_foreign_server_that_cannot_start_says_why_on_its_host_card(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The card of a server whose command does not exist said only 'connected · down · 0
    capabilities'; list_host_instances had the reason all along."""
    env = config_env(tmp_path, {"Broken": {"server": {"command": "mcp-server-that-is-not-installed"}}})
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.wait_ready(hosts.spawn("Broken"), 60)
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        served = await anyio.to_thread.run_sync(_dashboard)
        link = served.stdout.split("open ", 1)[1].split()[0]
        _, headers, _ = await anyio.to_thread.run_sync(_get, link)
        cookie = headers["set-cookie"].split(";", 1)[0]
        base = link.split("/dashboard/", 1)[0]
        with anyio.fail_after(60):
            while True:
                _, _, body = await anyio.to_thread.run_sync(_get, f"{base}/dashboard/api/state", cookie)
                (card,) = json.loads(body)["hosts"]
                if card.get("phase") == "down":
                    break
                await anyio.sleep(0.25)
        assert "mcp-server-that-is-not-installed" in card["problem"] and "not found" in card["problem"], card
        assert "tried again in" in card["problem"], card


async def test_a_page_whose_daemon_exited_says_so_turns_its_buttons_off_and_comes_back(
    hosts: Any, daemon_client: Any
) -> None:
    """The page of a daemon that exited kept saying 'reconnecting…' with its old hosts and an
    approval counting down; its Approve did nothing and said nothing."""
    from tests.dashboard.conftest import chromium

    hosts.start("demo")
    first = _stdio_daemon()
    try:
        link = await _link_when_served()
        with chromium() as page:
            await anyio.to_thread.run_sync(page.get, link)

            def live() -> str:
                return str(page.find_element("id", "live").text)

            def off() -> int:
                return int(page.execute_script("return document.querySelectorAll('button:disabled').length"))

            await _until(lambda: live() == "live")
            assert off() == 0
            assert first.stdin is not None
            first.stdin.close()
            await anyio.to_thread.run_sync(first.wait, 30)
            await _until(lambda: live().startswith("No daemon serves this page now"))
            assert off() >= 1  # the catalog's Search at least
            async with daemon_client() as _:
                await _until(lambda: live() == "live" and off() == 0)
    finally:
        first.kill()


def _stdio_daemon() -> subprocess.Popen[bytes]:
    """A daemon as an AI client starts it over stdio (it ends when its stdin is closed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, SEMANTIC_ENV: "off"},
    )


async def _link_when_served() -> str:
    with anyio.fail_after(60):
        while (served := await anyio.to_thread.run_sync(_dashboard)).returncode != 0:
            await anyio.sleep(0.2)
    return served.stdout.split("open ", 1)[1].split()[0]


async def _until(check: Any, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not await anyio.to_thread.run_sync(check):
            await anyio.sleep(0.25)


async def test_a_page_whose_port_another_program_answered_comes_back_once_a_daemon_serves_it(
    hosts: Any, daemon_client: Any
) -> None:
    """Another program on the page's port (a 404 to its event stream) ended the page's stream for
    good: it said 'reconnecting…' forever, and needed a reload once a daemon served it again."""
    import http.server
    import threading
    from urllib.parse import urlsplit

    from tests.dashboard.conftest import chromium

    hosts.start("demo")
    first = _stdio_daemon()
    try:
        link = await _link_when_served()
        port = urlsplit(link).port
        with chromium() as page:
            await anyio.to_thread.run_sync(page.get, link)

            def live() -> str:
                return str(page.find_element("id", "live").text)

            await _until(lambda: live() == "live")
            assert first.stdin is not None
            first.stdin.close()
            await anyio.to_thread.run_sync(first.wait, 30)
            asked: list[str] = []

            class Other(http.server.BaseHTTPRequestHandler):
                def do_GET(self) -> None:
                    asked.append(self.path)
                    self.send_error(404)

                def log_message(self, *args: Any) -> None:
                    pass

            other = http.server.HTTPServer(("127.0.0.1", port or 0), Other)
            threading.Thread(target=other.serve_forever, daemon=True).start()
            try:  # the page's stream reached the other program and was refused
                await _until(lambda: any(a.endswith("/events") for a in asked))
                await _until(lambda: live().startswith("No daemon serves this page now"))
            finally:
                other.shutdown()
                other.server_close()
            async with daemon_client() as _:
                await _until(lambda: live() == "live", timeout=60)
    finally:
        first.kill()
