"""Who the dashboard refuses: no or a wrong cookie, a spent link, another site, another Host."""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from tests.dashboard.conftest import Rig

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def request(
    rig: Rig, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request to the daemon (nothing added: no cookie, no Origin unless given)."""
    parts = urlsplit(rig.base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Host": parts.netloc, **(headers or {})})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def login(rig: Rig) -> tuple[str, str]:
    """A session cookie from a fresh one-time link, and the page's CSRF token."""
    link = urlsplit(rig.login_link())
    status, headers, _ = request(rig, "GET", f"{link.path}?{link.query}")
    assert status == 303, status
    cookie = headers["set-cookie"].split(";", 1)[0]
    status, _, page = request(rig, "GET", "/dashboard/", {"Cookie": cookie})
    assert status == 200
    csrf = page.decode().split('name="csrf" content="', 1)[1].split('"', 1)[0]
    return cookie, csrf


def test_a_link_works_once_and_nothing_is_served_without_its_cookie(rig: Rig) -> None:
    link = urlsplit(rig.login_link())
    first = request(rig, "GET", f"{link.path}?{link.query}")
    assert first[0] == 303 and "HttpOnly" in first[1]["set-cookie"]
    assert "SameSite=strict" in first[1]["set-cookie"] and "Path=/dashboard" in first[1]["set-cookie"]
    again = request(rig, "GET", f"{link.path}?{link.query}")
    assert again[0] == 403 and b"used or has expired" in again[2]
    for headers in ({}, {"Cookie": "cadmcp_dashboard=forged"}, {"Authorization": f"Bearer {rig.token}"}):
        for path in ("/dashboard/", "/dashboard/api/state", "/dashboard/api/events", "/dashboard/api/calls"):
            status, _, body = request(rig, "GET", path, headers)
            assert status == 401 and b"cadmcp dashboard" in body, (path, headers, status)
    # the MCP endpoint keeps its own check: the dashboard's cookie is no bearer token
    cookie, _ = login(rig)
    as_page = {"Cookie": cookie, "Content-Type": "application/json"}
    assert request(rig, "POST", "/mcp", as_page, b"{}")[0] == 401


def test_changes_need_the_pages_origin_and_token_and_another_host_name_is_refused(rig: Rig) -> None:
    cookie, csrf = login(rig)
    body = json.dumps({"callId": "1-1", "since": False}).encode()
    own = rig.base
    cases = [
        ({"Origin": "http://evil.example"}, True, "Origin"),
        ({}, True, "Origin"),
        ({"Origin": "null"}, True, "Origin"),
        ({"Origin": own}, False, "X-Cadmcp-Csrf"),
        ({"Origin": own, "X-Cadmcp-Csrf": "guess"}, False, "X-Cadmcp-Csrf"),
    ]
    for headers, with_csrf, said in cases:
        sent = {"Cookie": cookie, "Content-Type": "application/json", **headers}
        if with_csrf:
            sent["X-Cadmcp-Csrf"] = csrf
        status, _, answer = request(rig, "POST", "/dashboard/api/revert", sent, body)
        assert status == 403 and said.encode() in answer, (headers, status, answer)
    ok = {"Cookie": cookie, "Content-Type": "application/json", "Origin": own, "X-Cadmcp-Csrf": csrf}
    status, _, answer = request(rig, "POST", "/dashboard/api/revert", ok, body)
    assert status == 409 and "No checkpoint" in json.loads(answer)["error"]  # through, and why not
    # a page of a rebinding domain reaches 127.0.0.1 with another Host: refused before anything else
    rebound = {"Cookie": cookie, "Host": "evil.example"}
    assert request(rig, "GET", "/dashboard/api/state", rebound)[0] == 421


def _attacker_site(target: str, instance_id: str) -> tuple[ThreadingHTTPServer, str]:
    """A page of another origin that asks the dashboard to undo on a real host as soon as it loads:
    by `fetch` (no-cors, with credentials), then by a form whose text/plain body is valid JSON."""
    body = json.dumps({"instanceId": instance_id, "direction": "back"})
    page = f"""<!doctype html><title>elsewhere</title><body>
<form id="f" method="POST" action="{target}/dashboard/api/history" enctype="text/plain">
<input name='{{"instanceId":"{instance_id}","direction":"back","pad":"' value='"}}'></form>
<script>
fetch("{target}/dashboard/api/history", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body: '{body}'}})
  .finally(() => {{ document.title = "sent"; document.getElementById("f").submit(); }});
</script></body>"""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.2:{server.server_address[1]}/"


@pytest.mark.anyio
async def test_a_cross_site_page_in_the_logged_in_browser_changes_nothing(rig: Rig, browser: Any) -> None:
    cookie, _ = login(rig)
    state = json.loads(request(rig, "GET", "/dashboard/api/state", {"Cookie": cookie})[2])
    dxf = next(h["instanceId"] for h in state["hosts"] if h["pid"] == rig.dxf_pid)
    before = _audit_lines(rig)
    server, url = _attacker_site(rig.base, dxf)
    try:
        await anyio.to_thread.run_sync(browser.get, url)
        with anyio.fail_after(30):
            while "dashboard" not in browser.current_url and browser.title != "sent":
                await anyio.sleep(0.2)
        await anyio.sleep(1.0)
        shown = browser.page_source
    finally:
        server.shutdown()
        await anyio.to_thread.run_sync(browser.get, f"{rig.base}/dashboard/")
    assert "Not logged in" in shown or "Cross-site" in shown or browser.title == "sent", shown[:300]
    assert _audit_lines(rig) == before  # no undo reached the host


def _audit_lines(rig: Rig) -> list[str]:
    from pathlib import Path

    folder = Path(rig.env["CADMCP_LOG_DIR"])
    return [
        line
        for path in sorted(folder.glob("log_*.log"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if " policy/revert " in line or " dashboard/history " in line
    ]


def test_a_page_of_a_daemon_that_restarted_is_told_to_log_in_again(rig: Rig) -> None:
    """A daemon whose dashboard no link was made for yet (just restarted) answers an old page's
    request at its own address with 'not logged in' and what to run, not a misdirected request."""
    import subprocess
    import sys

    fresh = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0"],
        env=rig.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert fresh.stdout is not None
        url = fresh.stdout.readline().split(" at ", 1)[1].split()[0].removesuffix("/mcp")
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
        try:
            conn.request("GET", "/dashboard/api/state", headers={"Host": parts.netloc})
            response = conn.getresponse()
            status, body = response.status, response.read()
        finally:
            conn.close()
        assert status == 401 and b"cadmcp dashboard" in body, (status, body)
    finally:
        fresh.terminate()
        fresh.wait(10)
