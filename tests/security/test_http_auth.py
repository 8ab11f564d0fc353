"""Over HTTP only the holder of the user's token reaches the daemon: a stranger on the same
machine gets 401 without it or with a wrong one, and in with the right one."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp.client.session import ClientSession

from cadmcp.daemon import httpauth
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.userdirs import CONFIG_DIR_ENV, LOG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.core.test_http import start_http_daemon
from tests.security.conftest import Stranger

pytestmark = pytest.mark.slow

HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class HttpDaemon:
    proc: subprocess.Popen[str]
    url: str
    config: Path
    env: dict[str, str]

    @property
    def token(self) -> str:
        return httpauth.read_token(self.config / httpauth.TOKEN_FILE)


def _env(base: Path) -> dict[str, str]:
    for name in ("config", "run", "logs"):
        (base / name).mkdir(mode=0o700, exist_ok=True)
    return {
        **os.environ,
        CONFIG_DIR_ENV: str(base / "config"),
        RUNTIME_DIR_ENV: str(base / "run"),
        LOG_DIR_ENV: str(base / "logs"),
        SEMANTIC_ENV: "off",
    }


@pytest.fixture(scope="module")
def daemon() -> Iterator[HttpDaemon]:
    """One HTTP daemon for the request-level tests of this module."""
    base = Path(tempfile.mkdtemp(prefix="cmh"))
    env = _env(base)
    proc, url = start_http_daemon(env)
    yield HttpDaemon(proc, url, base / "config", env)
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(base, ignore_errors=True)


def _post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(
        url, data=json.dumps(INITIALIZE).encode(), headers={**MCP_HEADERS, **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


def test_without_a_token_the_answer_is_401_with_a_bearer_challenge(daemon: HttpDaemon) -> None:
    status, headers, body = _post(daemon.url, {})
    assert status == 401
    challenge = headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
    assert "cadmcp daemon --print-token" in json.loads(body)["error_description"]
    assert "initialize" not in body and "serverInfo" not in body

    metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    with urllib.request.urlopen(metadata_url, timeout=10) as response:
        metadata = json.loads(response.read())
    assert metadata["resource"] == daemon.url
    assert metadata["bearer_methods_supported"] == ["header"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer cadmcp_tok_" + "A" * 43,
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Bearer {token}x",
        "Bearer {token_cut}",
    ],
)
def test_a_wrong_or_malformed_token_is_401(daemon: HttpDaemon, header: str) -> None:
    token = daemon.token
    value = header.format(token=token, token_cut=token[:-1])
    status, _, body = _post(daemon.url, {"Authorization": value})
    assert status == 401 and "serverInfo" not in body


def test_every_path_is_guarded_not_only_mcp(daemon: HttpDaemon) -> None:
    base = daemon.url.rsplit("/mcp", 1)[0]
    assert _post(base + "/", {})[0] == 401
    assert _post(base + "/mcp/../mcp", {})[0] == 401


def test_the_right_token_lets_a_real_client_in(daemon: HttpDaemon) -> None:
    status, _, body = _post(daemon.url, {"Authorization": f"Bearer {daemon.token}"})
    assert status == 200 and '"serverInfo"' in body


@pytest.mark.anyio
async def test_cadmcp_as_a_client_reads_the_token_file_itself(daemon: HttpDaemon, monkeypatch) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(daemon.config))
    async with httpauth.connect(daemon.url) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        tools = await session.list_tools()
    assert "search_dynamic" in [t.name for t in tools.tools]


def test_the_token_file_is_private_and_kept_across_restarts(tmp_path: Path) -> None:
    env = _env(tmp_path)
    first = subprocess.run(
        [sys.executable, "-m", "cadmcp", "daemon", "--print-token"], env=env, capture_output=True, text=True
    )
    path = tmp_path / "config" / httpauth.TOKEN_FILE
    assert first.returncode == 0 and first.stdout.strip() == httpauth.read_token(path)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert first.stdout.startswith(httpauth.TOKEN_PREFIX) and len(first.stdout.strip()) >= 50
    again = subprocess.run(
        [sys.executable, "-m", "cadmcp", "daemon", "--print-token"], env=env, capture_output=True, text=True
    )
    assert again.stdout == first.stdout
    rotated = subprocess.run(
        [sys.executable, "-m", "cadmcp", "daemon", "--print-token", "--new-token"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert rotated.stdout != first.stdout and rotated.stdout.strip() == httpauth.read_token(path)


def test_a_token_file_others_can_read_stops_the_daemon_with_the_fix(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = tmp_path / "config" / httpauth.TOKEN_FILE
    path.write_text(httpauth.TOKEN_PREFIX + "x" * 43 + "\n")
    os.chmod(path, 0o644)
    run = subprocess.run(
        [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert str(path) in run.stderr and "chmod 600" in run.stderr and "--new-token" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_busy_port_is_a_clear_message(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", str(port)],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 2 and f"127.0.0.1:{port}" in run.stderr and "--port" in run.stderr


# -- as a second local user -------------------------------------------------------------------------
STRANGER_CLIENT = r"""
import json, sys, urllib.request, urllib.error
url, token = sys.argv[1], sys.stdin.read().strip()
hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "s", "version": "1"}}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if token:
    headers["Authorization"] = "Bearer " + token
try:
    with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10) as r:
        print(r.status, "serverInfo" in r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, False)
"""


@pytest.mark.parametrize(
    ("token", "expected"), [("", "401 False"), ("wrong", "401 False"), ("right", "200 True")]
)
def test_a_stranger_gets_in_only_with_the_users_token(
    daemon: HttpDaemon, stranger: Stranger, token: str, expected: str
) -> None:
    sent = {"": "", "wrong": httpauth.TOKEN_PREFIX + "B" * 43, "right": daemon.token}[token]
    probe = stranger.run(["/usr/bin/python3", "-I", "-c", STRANGER_CLIENT, daemon.url], input=sent)
    assert probe.stdout.strip() == expected, probe.stderr


def test_a_stranger_cannot_read_the_token_file(daemon: HttpDaemon, stranger: Stranger) -> None:
    path = daemon.config / httpauth.TOKEN_FILE
    probe = stranger.run(["cat", str(path)])
    assert probe.returncode != 0 and daemon.token not in probe.stdout


# -- HTTP on a Unix socket ---------------------------------------------------------------------------
@pytest.mark.anyio
async def test_http_on_a_unix_socket_is_0600_and_still_needs_the_token(
    tmp_path: Path, shared_tmp: Path, stranger: Stranger
) -> None:
    import httpx2

    env = _env(tmp_path)
    path = shared_tmp / "cadmcp-http.sock"
    proc, url = start_http_daemon(env, "--unix-socket", str(path))
    try:
        assert url == "http://localhost/mcp"
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        token = httpauth.read_token(tmp_path / "config" / httpauth.TOKEN_FILE)
        async with httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(path))) as client:
            refused = await client.post(url, json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401
        async with (
            httpauth.connect(url, unix_socket=path, token=token) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.discover()
            assert "invoke_dynamic" in [t.name for t in (await session.list_tools()).tools]
        probe = stranger.python(
            "import socket, sys\nc = socket.socket(socket.AF_UNIX)\n"
            "try:\n    c.connect(sys.argv[1]); print('connected')\nexcept PermissionError: print('denied')\n",
            str(path),
        )
        assert probe.stdout.strip() == "denied", probe.stderr
    finally:
        proc.terminate()
        proc.wait(10)
    assert not path.exists()  # removed on exit
