"""Third-party MCP servers as hosts, through a real daemon and real SDK clients.

mcp-server-time and mcp-server-git (PyPI) and @modelcontextprotocol/server-everything (npm) run
as the servers of foreign hosts beside a DXF host: one search finds them all, invoke runs them,
the servers' own input rounds, progress, resources and prompts pass through, and a server that
dies, hangs or lists a bad catalog costs only itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cadmcp.applications import CONFIG_ENV
from cadmcp.wire.endpoints import pid_alive
from tests.core.helpers import call, find, structured
from tests.foreign.conftest import config_env, python_server, shape_server
from tests.foreign.shapes import LOG_LINE, SERVER_ERROR
from tests.policy.helpers import host_calls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"


async def _hosts_ready(session: Any, names: set[str], timeout: float = 120.0) -> dict[str, dict[str, Any]]:
    """The connected hosts by app name once every one of `names` is ready (its server listed)."""
    with anyio.fail_after(timeout):
        while True:
            listing = await structured(session, "list_host_instances")
            by_app = {h["hostApp"]: h for h in listing["hosts"]}
            if names <= by_app.keys() and all(
                by_app[n].get("state", {}).get("phase", "ready") == "ready" for n in names
            ):
                return by_app
            await anyio.sleep(0.2)


async def _item(session: Any, query: str, target: str, **kw: Any) -> dict[str, Any]:
    items = await find(session, query, limit=32, **kw)
    found = [i for i in items if i["target"] == target]
    assert found, f"{target} not found for {query!r}: {[i['target'] for i in items]}"
    return found[0]


async def _invoke(session: Any, cap_id: str, arguments: dict[str, Any], **kw: Any) -> Any:
    return await call(session, "invoke_dynamic", {"id": cap_id, "arguments": arguments}, **kw)


def _git_repo(path: Path) -> Path:
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "a.txt").write_text("hello\n")
    return path


@pytest.mark.timeout(300)  # five servers and a DXF host start at once
async def test_search_and_invoke_span_third_party_servers_and_the_dxf_host(
    hosts: Any, daemon_client: Any, tmp_path: Path, everything: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _git_repo(tmp_path / "repo")
    env = config_env(
        tmp_path,
        {
            "Time": python_server("mcp_server_time", "--local-timezone", "UTC"),
            "Git": python_server("mcp_server_git", "--repository", str(repo)),
            "Everything": {"server": {"command": everything[0], "args": [everything[1], "stdio"]}},
            "Poisoned": shape_server("poisoned"),
        },
        policy={"profile": "confirm-changes", "confirmTimeoutSeconds": 20},
    )
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.start("dxf", str(SAMPLE), timeout=60)
    for proc in [hosts.spawn(name) for name in ("Time", "Git", "Everything", "Poisoned")]:
        hosts.wait_ready(proc, 120)  # before the daemon: its first answer must come within 10 s

    async def unused(context: Any, params: Any) -> types.ElicitResult:  # declares elicitation
        raise AssertionError("the daemon asks 2026-07-28 clients in an input round, not by request")

    async with daemon_client(era="modern", env=env, elicitation_callback=unused) as session:
        by_app = await _hosts_ready(session, {"Time", "Git", "Everything", "Poisoned", "DXF"})
        assert by_app["Everything"]["state"]["foreign"]["serverName"] == "mcp-servers/everything"
        assert by_app["Time"]["state"]["foreign"]["transport"] == "stdio"

        # one search over every host: the foreign tools sit beside the DXF host's
        items = await find(session, "current time in a timezone", limit=32)
        apps = {i["hostApp"] for i in items}
        assert "Time" in apps
        both = await find(session, "layers of the drawing and git status", limit=32)
        assert {"DXF", "Git"} <= {i["hostApp"] for i in both}

        # invoke runs a third-party tool with the same ids and argument checks as ours
        now = await _item(session, "current time timezone", "get_current_time")
        result = await _invoke(session, now["id"], {"timezone": "Europe/Paris"})
        assert not result.is_error, result
        assert json.loads(result.content[0].text)["timezone"] == "Europe/Paris"
        bad = await _invoke(session, now["id"], {"zone": "Europe/Paris"})
        assert bad.is_error and bad.structured_content["type"] == "validation_error"

        # a read-only foreign tool runs at once under confirm-changes; one without readOnlyHint asks first
        status = await _item(session, "git status of the working tree", "git_status")
        result = await _invoke(session, status["id"], {"repo_path": str(repo)})
        assert not result.is_error and "a.txt" in result.content[0].text
        add = await _item(session, "git add files to the staging area", "git_add")
        asked = await _invoke(
            session, add["id"], {"repo_path": str(repo), "files": ["a.txt"]}, allow_input_required=True
        )
        assert asked.result_type == "input_required", asked
        assert "git_add" in json.dumps(asked.model_dump(mode="json", by_alias=True))
        declined = await call(
            session,
            "invoke_dynamic",
            {"id": add["id"], "arguments": {"repo_path": str(repo), "files": ["a.txt"]}},
            allow_input_required=True,
            input_responses={key: types.ElicitResult(action="decline") for key in asked.input_requests or {}},
            request_state=asked.request_state,
        )
        assert declined.is_error and declined.structured_content["type"] == "not_confirmed"
        staged = subprocess.run(
            ["git", "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True
        )
        assert staged.stdout == ""  # nothing ran

        # the server's own question mid-call (elicitation/create) arrives as an input round
        elicit = await _item(session, "elicitation request", "trigger-elicitation-request")
        first = await _invoke(session, elicit["id"], {}, allow_input_required=True)
        assert first.result_type == "input_required", first
        policy_keys = [k for k in first.input_requests or {} if k != "elicitation"]
        answers = {k: types.ElicitResult(action="accept", content={"confirm": True}) for k in policy_keys}
        result = first
        for _ in range(3):  # the policy's question first (confirm-changes), then the server's own
            if result.result_type != "input_required":
                break
            requests = result.input_requests or {}
            answers = {
                k: types.ElicitResult(action="accept", content={"name": "Ada", "check": True})
                if k == "elicitation"
                else types.ElicitResult(action="accept", content={"approve": True, "confirm": True})
                for k in requests
            }
            result = await call(
                session,
                "invoke_dynamic",
                {"id": elicit["id"], "arguments": {}},
                allow_input_required=True,
                input_responses=answers,
                request_state=result.request_state,
            )
        assert result.result_type == "complete" and not result.is_error, result
        assert "Ada" in " ".join(c.text for c in result.content if c.type == "text")

        # progress notifications of the server reach the agent
        long_op = await _item(session, "long running operation", "trigger-long-running-operation")
        seen: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append(value)

        result = await _invoke_confirmed(session, long_op["id"], {"duration": 1, "steps": 3}, progress)
        assert not result.is_error, result
        assert len(seen) >= 3, seen

        # a call the agent cancels is cancelled at the proxy, and the server takes the next call
        with anyio.move_on_after(2.0):
            await _invoke_confirmed(session, long_op["id"], {"duration": 60, "steps": 60}, progress)
        proxy = by_app["Everything"]["pid"]
        with anyio.fail_after(20):
            while not any(
                line.get("target") == "trigger-long-running-operation" and line["outcome"] == "cancelled"
                for line in host_calls(proxy, "trigger-long-running-operation")
            ):
                await anyio.sleep(0.2)
        echo = await _item(session, "echo the message back", "echo")
        again = await _invoke_confirmed(session, echo["id"], {"message": "still here"}, progress)
        assert "still here" in again.content[0].text

        # resources and prompts are read through the same ids
        prompt = await _item(session, "arguments prompt city", "prompt://args-prompt{?city,state}")
        read = await _invoke(session, prompt["id"], {"city": "Paris"})  # its optional state left out
        text = read.content[0].resource.text
        assert "Paris" in json.loads(text)["messages"][0]["content"]["text"]
        assert prompt["requiredArgs"] == ["city"] and prompt["argsHint"] == "city: string, state?: string"
        unsaid = await _invoke(session, prompt["id"], {"state": "Texas"})  # its required city left out
        assert unsaid.is_error and unsaid.structured_content["type"] == "validation_error", unsaid
        assert "missing ['city']" in unsaid.structured_content["message"]
        assert "(state optional)" in unsaid.structured_content["message"]

        # someone else's text: a description that steers the agent is flagged, a plain one is not
        poisoned = await find(
            session, "add numbers", limit=32, hostInstanceId=by_app["Poisoned"]["hostInstanceId"]
        )
        flags = {i["target"]: i.get("flag") for i in poisoned}
        assert flags["plain_tool"] is None
        assert (
            "not an instruction" in flags["add_numbers"]
            and "which tool to call first" in flags["add_numbers"]
        )
        assert len(next(i for i in poisoned if i["target"] == "add_numbers")["description"]) <= 201
        ours = await find(session, "", limit=32, hostInstanceId=by_app["DXF"]["hostInstanceId"])
        assert ours and not any(i.get("flag") for i in ours)


async def test_a_huge_or_malformed_catalog_is_refused_by_the_proxy_and_said_at_once(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = config_env(
        tmp_path,
        {
            "Huge": shape_server("huge"),
            "Malformed": shape_server("malformed"),
            "Endless": shape_server("endless"),
        },
    )
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    for proc in [hosts.spawn("Malformed")]:
        hosts.wait_ready(proc, 120)
    async with daemon_client(era="modern", env=env) as session:
        by_app = await _hosts_listed(session, {"Malformed"})
        malformed = by_app["Malformed"]
        assert malformed["state"]["phase"] == "refused" and "item 1" in malformed["state"]["error"]
        assert malformed["capabilities"] == 0
        # over the bounds the daemon holds every host to: the proxy refuses it before serving it,
        # so launch_host answers with why at once (not after its timeout) and starts no second copy
        with anyio.fail_after(30):
            refused = await call(session, "launch_host", {"hostApp": "Huge", "timeoutSeconds": 120})
        body = refused.structured_content
        assert refused.is_error and body["phase"] == "refused", body
        assert "more than 1,000 tools" in body["message"], body
        again = (await call(session, "launch_host", {"hostApp": "Huge"})).structured_content
        assert again["hostInstanceId"] == body["hostInstanceId"], again
        listing = await structured(session, "list_host_instances")
        assert [h["hostApp"] for h in listing["hosts"]].count("Huge") == 1
        endless = await call(session, "launch_host", {"hostApp": "Endless", "timeoutSeconds": 120})
        body = endless.structured_content  # not served cut to what fits
        assert endless.is_error and body["phase"] == "refused" and "never ends" in body["message"], body


def _sluggish(tmp_path: Path, *, connect_timeout: float) -> dict[str, str]:
    """The environment of a daemon whose one host, Sluggish, takes 5 s to answer initialize."""
    sluggish = shape_server("sluggish")
    sluggish["server"]["connectTimeoutSeconds"] = connect_timeout
    return config_env(tmp_path, {"Sluggish": sluggish})


async def _down_at_launch(session: Any, app: str) -> dict[str, Any]:
    """Launch the host of a server that does not come up: the answer, `server_down` with why."""
    failed = await call(session, "launch_host", {"hostApp": app, "timeoutSeconds": 60})
    body = failed.structured_content
    assert failed.is_error and body["type"] == "server_down", body  # never a ready answer
    return body


async def _launched_tool(session: Any, app: str) -> dict[str, Any]:
    """Launch the host of a `shapes.py` server and find its one tool."""
    launched = await call(session, "launch_host", {"hostApp": app, "timeoutSeconds": 60})
    assert not launched.is_error, launched
    host = launched.structured_content["hostInstanceId"]
    return await _item(session, "multiplies two numbers", "plain_tool", hostInstanceId=host)


async def _hosts_listed(session: Any, names: set[str], timeout: float = 60.0) -> dict[str, dict[str, Any]]:
    """The connected hosts by app name once every one of `names` is listed, in whatever phase."""
    with anyio.fail_after(timeout):
        while True:
            listing = await structured(session, "list_host_instances")
            by_app = {h["hostApp"]: h for h in listing["hosts"]}
            if names <= by_app.keys():
                return by_app
            await anyio.sleep(0.2)


async def _invoke_confirmed(session: Any, cap_id: str, arguments: dict[str, Any], progress: Any) -> Any:
    """An invoke under confirm-changes: the policy's question answered yes."""
    result = await _invoke(session, cap_id, arguments, allow_input_required=True, progress_callback=progress)
    if result.result_type == "input_required":
        result = await call(
            session,
            "invoke_dynamic",
            {"id": cap_id, "arguments": arguments},
            allow_input_required=True,
            progress_callback=progress,
            input_responses={
                k: types.ElicitResult(action="accept", content={"approve": True, "confirm": True})
                for k in result.input_requests or {}
            },
            request_state=result.request_state,
        )
    return result


async def test_a_killed_server_comes_back_and_a_hung_one_fails_only_its_calls(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = config_env(
        tmp_path,
        {"Time": python_server("mcp_server_time", "--local-timezone", "UTC", callTimeoutSeconds=3)},
    )
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.start("dxf", str(SAMPLE), timeout=60)
    hosts.start("Time", timeout=120)
    async with daemon_client(era="legacy", env=env) as session:
        by_app = await _hosts_ready(session, {"Time", "DXF"})
        first_pid = by_app["Time"]["state"]["foreign"]["pid"]
        now = await _item(session, "current time timezone", "get_current_time")

        os.kill(first_pid, signal.SIGKILL)
        with anyio.fail_after(20):
            while True:  # said to be down (with why) until it is back
                state = (await _hosts_ready(session, {"DXF"})).get("Time", {}).get("state", {})
                if state.get("phase") == "down":
                    break
                await anyio.sleep(0.1)
        assert state["error"].startswith("the server's process ended"), state  # not the SDK's wording
        by_app = await _hosts_ready(session, {"Time", "DXF"})
        back = by_app["Time"]["state"]["foreign"]
        assert back["pid"] != first_pid and back["restarts"] >= 1
        result = await _invoke(session, now["id"], {"timezone": "UTC"})  # the same id works again
        assert not result.is_error, result

        # a server that stops answering fails its own calls only; search and the DXF host go on
        layers = await _item(session, "list the open documents", "list_documents")
        os.kill(back["pid"], signal.SIGSTOP)
        try:
            async with anyio.create_task_group() as tg:
                outcome: dict[str, Any] = {}

                async def stuck() -> None:
                    outcome["time"] = await _invoke(session, now["id"], {"timezone": "UTC"})

                tg.start_soon(stuck)
                await anyio.sleep(0.3)
                with anyio.fail_after(2.5):  # well inside the hung server's 3 s call timeout
                    dxf = await _invoke(session, layers["id"], {})
                    found = await find(session, "layers", limit=5)
                assert not dxf.is_error and found
            failed = outcome["time"]
            assert failed.is_error, failed
            assert failed.structured_content["type"] == "server_timeout", failed.structured_content
            # once its calls say it is down (the probes gave up), the listing says so too within a
            # re-listing's time (it said ready for 5 s more, while the stopped process was killed)
            with anyio.fail_after(40):
                while True:
                    again = await _invoke(session, now["id"], {"timezone": "UTC"})
                    if again.is_error and again.structured_content["type"] == "server_down":
                        break
                    await anyio.sleep(0.2)
            said = time.monotonic()
            while (await _hosts_ready(session, {"DXF"})).get("Time", {}).get("state", {}).get(
                "phase"
            ) == "ready":
                assert time.monotonic() - said < 1.0, "listed ready after its calls said it was down"
                await anyio.sleep(0.05)
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed and started again by then
                os.kill(back["pid"], signal.SIGCONT)


@contextlib.asynccontextmanager
async def _http_host(
    name: str, command: Callable[[int], list[str]], monkeypatch: pytest.MonkeyPatch, **config: Any
) -> AsyncIterator[Any]:
    """A streamable HTTP server started on a free port by `command(port)`, listening, and a
    ForeignHost for it whose Authorization header comes from the environment."""
    import socket

    from cadmcp.applications import Application, ForeignServer
    from cadmcp.foreign.proxy import ForeignHost

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        command(port),
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    monkeypatch.setenv("CADMCP_TEST_TOKEN", "t0ken")
    server_config = ForeignServer(
        url=f"http://127.0.0.1:{port}/mcp",
        headers={"Authorization": "Bearer env:CADMCP_TEST_TOKEN"},
        **config,
    )
    try:
        with anyio.fail_after(60):
            while True:  # the server is listening once a connection is accepted
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    await anyio.sleep(0.1)
        yield ForeignHost(Application(name, name, kind="mcp", server=server_config))
    finally:
        server.terminate()
        server.wait(10)


async def test_a_streamable_http_server_is_reached_with_headers_from_the_environment(
    everything: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    command = [everything[0], everything[1], "streamableHttp"]  # its port from PORT
    async with (
        _http_host("Remote", lambda port: command, monkeypatch) as host,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.state["phase"] == "ready", host.state
            assert host.state["foreign"]["transport"] == "http"
            assert "t0ken" not in json.dumps(host.state)
            assert "echo" in {t.name for t in host.tools}
            assert host.session is not None
            echoed = await host.session.raw_request(
                "tools/call", {"name": "echo", "arguments": {"message": "hi"}}
            )
            assert "hi" in echoed["content"][0]["text"]
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_that_cannot_be_reached_is_down_saying_what_to_fix(transport: str) -> None:
    """A missing command, or a URL nothing listens at, is down with a reason the person can act on,
    not `FileNotFoundError: [Errno 2] ...` or httpx's `All connection attempts failed`."""
    import socket

    from cadmcp.applications import Application, ForeignServer
    from cadmcp.foreign.proxy import ForeignHost

    if transport == "stdio":
        config = ForeignServer(command="no-such-mcp-server-xyz", args=("--flag",))
        said = "the command 'no-such-mcp-server-xyz' was not found: install it, or give its full path"
    else:
        with socket.socket() as probe:  # a port nothing listens at
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = ForeignServer(url=f"http://127.0.0.1:{port}/mcp")
        said = f"nothing answers at http://127.0.0.1:{port}/mcp ("
    host = ForeignHost(Application("Gone", "Gone", kind="mcp", server=config))
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
        assert host.state["phase"] == "down" and host.state["error"].startswith(said), host.state
        tg.cancel_scope.cancel()


async def test_a_2026_era_sdk_http_server_gets_each_request_with_its_method_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A streamable HTTP server on the 2026-07-28 SDK refuses a request whose `Mcp-Method` header
    is missing; the proxy's listing and calls carry it, and the secret header too."""
    script = Path(__file__).with_name("sdk_http_server.py")
    async with (
        _http_host("Headers", lambda port: [sys.executable, str(script), str(port)], monkeypatch) as host,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.state["phase"] == "ready", host.state
            assert host.state["foreign"]["protocolVersion"] in MODERN_PROTOCOL_VERSIONS, host.state
            assert [t.name for t in host.tools] == ["show_headers", "wait"]
            assert host.session is not None
            result = await host.session.raw_request("tools/call", {"name": "show_headers", "arguments": {}})
            assert not result.get("isError"), result
            headers = {k.lower(): v for k, v in json.loads(result["content"][0]["text"]).items()}
            assert headers["mcp-method"] == "tools/call" and headers["mcp-name"] == "show_headers"
            assert headers["authorization"] == "Bearer t0ken"
        tg.cancel_scope.cancel()


async def test_an_http_server_too_slow_for_its_call_timeout_is_said_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Path(__file__).with_name("sdk_http_server.py")
    command = lambda port: [sys.executable, str(script), str(port)]  # noqa: E731
    async with (
        _http_host("Slow", command, monkeypatch, call_timeout=1.0) as host,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.state["phase"] == "ready", host.state
            with pytest.raises(MCPError) as raised:
                await host.call("wait", {"seconds": 10}, input_responses=None, state=None, reporter=None)
        assert raised.value.error.data == {"type": "server_timeout", "timeoutSeconds": 1.0}
        assert "did not answer wait within 1 s (its callTimeoutSeconds)" in raised.value.error.message
        tg.cancel_scope.cancel()


async def test_an_http_server_refusing_the_token_is_said_so_with_its_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server answering 401 (a wrong or expired token) is down with that status and what to fix,
    not the SDK's bare "Server returned an error response"."""
    script = Path(__file__).with_name("sdk_http_server.py")
    command = lambda port: [sys.executable, str(script), str(port), "another-token"]  # noqa: E731
    async with (
        _http_host("Expired", command, monkeypatch) as host,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(60):
            await host.start(tg)
        reason = host.state.get("error", "")
        assert host.state["phase"] == "down", host.state
        assert reason.startswith("the server answered HTTP 401 Unauthorized"), reason
        assert "credentials in Authorization (a wrong or expired token?)" in reason
        assert "t0ken" not in json.dumps(host.state)
        tg.cancel_scope.cancel()


async def test_a_call_the_server_refuses_with_an_http_status_says_which(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The token expires while the server is up: the call fails with the status and what to fix."""
    script = Path(__file__).with_name("sdk_http_server.py")
    accepted = tmp_path / "token"
    accepted.write_text("t0ken")
    command = lambda port: [sys.executable, str(script), str(port), str(accepted)]  # noqa: E731
    async with (
        _http_host("Expiring", command, monkeypatch) as host,
        anyio.create_task_group() as tg,
    ):
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.state["phase"] == "ready", host.state
            accepted.write_text("rotated")
            with pytest.raises(MCPError) as raised:
                await host.call("show_headers", {}, input_responses=None, state=None, reporter=None)
        message = raised.value.error.message
        assert message.startswith("show_headers failed: the server answered HTTP 401 Unauthorized"), message
        tg.cancel_scope.cancel()


async def test_launch_host_starts_a_server_when_needed_and_says_why_one_does_not_come_up(
    daemon_client: Any, tmp_path: Path
) -> None:
    env = config_env(
        tmp_path,
        {
            "Time": python_server("mcp_server_time", "--local-timezone", "UTC"),
            "Missing": {"server": {"command": str(tmp_path / "no-such-mcp-server")}},
            "Secretive": python_server("mcp_server_time", env={"TOKEN": "env:CADMCP_TEST_UNSET_VARIABLE"}),
        },
    )
    async with daemon_client(env=env) as session:
        # nothing runs yet: search says what launch_host can start, configured servers first
        empty = await structured(session, "search_dynamic", {"query": "current time"})
        told = empty["guidance"]["message"]
        assert empty["count"] == 0 and "launch_host" in told, told
        assert "Time, Missing, Secretive, DXF" in told, told
        own = await structured(session, "search_dynamic", {"query": "list the checkpoints"})
        assert own["count"] >= 1 and {i["hostApp"] for i in own["items"]} == {"cadmcp"}, own
        assert "No host is connected" in own["guidance"]["message"]  # the daemon's own match is no model
        started = await call(session, "launch_host", {"hostApp": "Time", "timeoutSeconds": 60})
        assert not started.is_error, started
        assert started.structured_content["phase"] == "ready"
        now = await _item(session, "current time", "get_current_time")
        assert not (await _invoke(session, now["id"], {"timezone": "UTC"})).is_error
        again = (await call(session, "launch_host", {"hostApp": "Time"})).structured_content
        assert (
            again["alreadyRunning"]
            and again["hostInstanceId"] == started.structured_content["hostInstanceId"]
        )
        listing = await structured(session, "list_host_instances")
        assert [h["hostApp"] for h in listing["hosts"]].count("Time") == 1  # no second copy was started
        down: dict[str, Any] = {}
        for name, words in (("Missing", "no-such-mcp-server"), ("Secretive", "CADMCP_TEST_UNSET_VARIABLE")):
            body = await _down_at_launch(session, name)
            assert words in body["message"] and "cadmcp host add" in body["message"], body
            assert body["phase"] == "down" and body["hostRunning"] and body["retryInSeconds"] > 0
            if name == "Secretive":  # the entry's own field is named, not masked as a secret
                assert "env.TOKEN refers to the environment variable" in body["message"], body
                # launching it again gave the same host, still without the variable: the way out
                restart = f"restartHostInstanceId={body['hostInstanceId']!r}"
                assert restart in body["message"] and "keeps the environment it started" in body["message"]
            still = (await call(session, "launch_host", {"hostApp": name})).structured_content
            assert still["type"] == "server_down" and still["hostInstanceId"] == body["hostInstanceId"]
            down[name] = body
        listed = {h["hostApp"]: h for h in (await structured(session, "list_host_instances"))["hosts"]}
        shown = listed["Secretive"]["state"]
        assert "retryAt" not in shown and 0 <= shown["retryInSeconds"] <= 30, shown  # counted down
        # fixed as the answer says: the running proxy starts the server again with the new entry
        assert "as soon as the file changes" in down["Missing"]["message"]
        config = Path(env[CONFIG_ENV])
        fixed = json.loads(config.read_text())
        fixed["hosts"]["Missing"] = shape_server("chatty")
        config.write_text(json.dumps(fixed))
        by_app = await _hosts_ready(session, {"Missing"}, timeout=20)  # not after its backoff's 30 s
        assert by_app["Missing"]["hostInstanceId"] == down["Missing"]["hostInstanceId"]  # the same proxy


async def test_a_server_logging_to_stdout_works_and_one_that_only_logs_is_down_saying_so(
    daemon_client: Any, tmp_path: Path
) -> None:
    mute = shape_server("mute")
    mute["server"]["connectTimeoutSeconds"] = 2
    env = config_env(tmp_path, {"Chatty": shape_server("chatty"), "Mute": mute})
    async with daemon_client(env=env) as session:
        chatty = await call(session, "launch_host", {"hostApp": "Chatty", "timeoutSeconds": 60})
        assert not chatty.is_error and chatty.structured_content["phase"] == "ready", chatty
        tool = await _item(session, "multiplies two numbers", "plain_tool")
        assert (await _invoke(session, tool["id"], {})).content[0].text == "3"  # the log lines are skipped
        body = await _down_at_launch(session, "Mute")
        assert "no MCP messages" in body["reason"] and LOG_LINE in body["reason"], body
        assert "logging belongs on stderr" in body["message"]


@pytest.mark.parametrize(
    ("shape", "said"),
    [("failing", SERVER_ERROR["message"]), ("closedtext", "the server answered: Connection closed")],
)
async def test_a_servers_own_generic_error_is_its_answer_not_its_end(
    daemon_client: Any, tmp_path: Path, shape: str, said: str
) -> None:
    # -32000 is JSON-RPC's generic server error, which the SDK also uses for a closed connection
    env = config_env(tmp_path, {"Failing": shape_server(shape)})
    async with daemon_client(env=env) as session:
        tool = await _launched_tool(session, "Failing")
        for _ in range(2):
            failed = await _invoke(session, tool["id"], {})
            text = failed.content[0].text
            assert failed.is_error and said in text and "went away" not in text, text
            assert failed.structured_content["type"] == "host_error", failed.structured_content
        hosts = (await call(session, "list_host_instances", {})).structured_content["hosts"]
        failing = next(h for h in hosts if h["hostApp"] == "Failing")
        assert failing["state"]["phase"] == "ready" and failing["state"]["foreign"]["restarts"] == 0, failing


async def test_a_server_slower_to_start_than_its_connect_timeout_is_down_saying_which_setting(
    daemon_client: Any, tmp_path: Path
) -> None:
    async with daemon_client(env=_sluggish(tmp_path, connect_timeout=1)) as session:
        body = await _down_at_launch(session, "Sluggish")
        assert (
            "connectTimeoutSeconds (1 s)" in body["message"]
            and "answering its first request" in body["message"]
        )


@pytest.mark.parametrize(
    ("shape", "said"),
    [("broken", "content that is not a list"), ("nullresult", "its result is null, not an object")],
)
async def test_a_servers_broken_result_is_said_as_its_error_at_once(
    daemon_client: Any, tmp_path: Path, shape: str, said: str
) -> None:
    env = config_env(tmp_path, {"Broken": shape_server(shape)})
    async with daemon_client(env=env) as session:
        tool = await _launched_tool(session, "Broken")
        with anyio.fail_after(20):  # not after the call's 120 s timeout
            failed = await _invoke(session, tool["id"], {})  # a tool error, not a protocol failure
        text = failed.content[0].text
        assert failed.is_error and said in text and "author" in text, text
        assert failed.structured_content["type"] == "invalid_result", failed.structured_content


async def test_launching_again_after_a_timed_out_launch_waits_for_that_host(
    daemon_client: Any, tmp_path: Path
) -> None:
    async with daemon_client(env=_sluggish(tmp_path, connect_timeout=20)) as session:
        first = await call(session, "launch_host", {"hostApp": "Sluggish", "timeoutSeconds": 1})
        body = first.structured_content
        assert first.is_error and body["type"] == "launch_timeout" and body["running"], body
        again = await call(session, "launch_host", {"hostApp": "Sluggish", "timeoutSeconds": 60})
        assert not again.is_error, again
        assert again.structured_content["pid"] == body["pid"], again.structured_content  # that one
        listing = await structured(session, "list_host_instances")
        assert [h["hostApp"] for h in listing["hosts"]].count("Sluggish") == 1


async def test_a_server_that_ends_is_listed_down_at_once_not_when_its_process_is_gone(
    daemon_client: Any, tmp_path: Path
) -> None:
    # the server closes its stdout and stays up: stopping its process takes the SDK seconds, and
    # meanwhile the listing and new calls must not take it for ready
    env = config_env(tmp_path, {"Hangup": shape_server("hangup")})
    async with daemon_client(env=env) as session:
        tool = await _launched_tool(session, "Hangup")
        server = (await _hosts_ready(session, {"Hangup"}))["Hangup"]["state"]["foreign"]["pid"]
        failed = await _invoke(session, tool["id"], {})
        assert failed.is_error and failed.structured_content["type"] == "server_down", failed
        with anyio.fail_after(10):
            while True:
                state = (await _hosts_listed(session, {"Hangup"}))["Hangup"]["state"]
                if state["phase"] != "ready":
                    break
                await anyio.sleep(0.05)
        assert state["phase"] == "down" and "closed its stdout" in state["error"], state
        assert pid_alive(server), "said down only once its process was gone"
        again = await _invoke(session, tool["id"], {})  # nothing is sent to a server that ended
        assert "did not reach it" in again.content[0].text or "is down" in again.content[0].text, again


async def test_an_answer_too_long_to_read_fails_only_its_call(daemon_client: Any, tmp_path: Path) -> None:
    # the answer is read and dropped as it streams, never held whole: the call is told why, at once,
    # and the server (which did nothing wrong by the protocol) stays up for the next call
    env = config_env(tmp_path, {"Bulky": shape_server("bulky")})
    async with daemon_client(env=env) as session:
        tool = await _launched_tool(session, "Bulky")
        with anyio.fail_after(60):
            failed = await _invoke(session, tool["id"], {"megabytes": 65})
        body = failed.structured_content
        assert failed.is_error and body["type"] == "result_too_large", body
        assert "over 64 MiB" in body["message"] and "ask for less" in body["message"], body
        fine = await _invoke(session, tool["id"], {"megabytes": 1})
        assert not fine.is_error and len(fine.content[0].text) == 1024 * 1024
        listing = await structured(session, "list_host_instances")
        bulky = next(h for h in listing["hosts"] if h["hostApp"] == "Bulky")
        assert bulky["state"]["foreign"]["restarts"] == 0, bulky


async def test_a_name_listed_twice_is_served_once_and_said(daemon_client: Any, tmp_path: Path) -> None:
    env = config_env(tmp_path, {"Twice": shape_server("twice")})
    async with daemon_client(env=env) as session:
        tool = await _launched_tool(session, "Twice")  # found by the first one's description
        assert tool["description"].startswith("Multiplies"), tool
        listing = await structured(session, "list_host_instances")
        twice = next(h for h in listing["hosts"] if h["hostApp"] == "Twice")
        note = twice["state"]["foreign"]["listedTwice"]
        assert note.startswith("tool 'plain_tool': the server lists these names twice"), note


async def test_a_servers_json_logging_is_skipped_and_an_unreadable_answer_fails_at_once(
    daemon_client: Any, tmp_path: Path
) -> None:
    # a structured log line carrying the request's id and method is no answer: nothing is made up
    # from it (the call then returns the server's real result); an answer that is no UTF-8 fails
    # its call at once, saying so, rather than after the call's timeout
    env = config_env(tmp_path, {"Logger": shape_server("jsonlog"), "Garbled": shape_server("garbled")})
    async with daemon_client(env=env) as session:
        logged = await _launched_tool(session, "Logger")
        result = await _invoke(session, logged["id"], {})
        assert not result.is_error and result.content[0].text == "3", result
        garbled = await _launched_tool(session, "Garbled")
        with anyio.fail_after(20):
            failed = await _invoke(session, garbled["id"], {})
        body = failed.structured_content
        assert failed.is_error and body["type"] == "invalid_result", body
        assert "not UTF-8" in body["message"] and "author" in body["message"], body


async def test_a_server_answering_what_it_does_not_know_with_nonsense_is_said_so(
    daemon_client: Any, tmp_path: Path
) -> None:
    # the reason is the answer that is no MCP, not "the server's process ended" (the proxy closed it)
    async with daemon_client(env=config_env(tmp_path, {"Sloppy": shape_server("sloppy")})) as session:
        body = await _down_at_launch(session, "Sloppy")
        assert "an answer of the server's is not what MCP says (DiscoverResult" in body["message"], body
        assert "process ended" not in body["message"], body


async def test_an_argument_may_be_an_env_reference_filled_in_when_the_server_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cadmcp.applications import Application, ForeignServer
    from cadmcp.foreign.proxy import ForeignHost
    from tests.foreign.conftest import SHAPES

    monkeypatch.setenv("CADMCP_TEST_SHAPE", "twice")  # the server's one argument, its shape
    server = ForeignServer(command=sys.executable, args=(str(SHAPES), "env:CADMCP_TEST_SHAPE"))
    host = ForeignHost(Application("Shaped", "Shaped", kind="mcp", server=server))
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
        assert host.state["phase"] == "ready", host.state
        assert host.listed_twice == ["tool 'plain_tool'"]  # it ran as `shapes.py twice`
        assert host.state["foreign"]["server"].endswith("env:CADMCP_TEST_SHAPE")  # never the value
        tg.cancel_scope.cancel()


async def test_a_server_asking_with_ctx_elicit_says_how_and_works_held_to_the_2025_protocol(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2026-SDK server asking with `ctx.elicit` has no channel on 2026-07-28: its failure says
    what makes it work, and held to 2025-11-25 (`protocolVersion`) its question reaches the client."""
    script = [sys.executable, str(Path(__file__).with_name("sdk_elicit_server.py"))]
    server = {"command": script[0], "args": script[1:]}
    env = config_env(
        tmp_path,
        {"Asking": {"server": server}, "Held": {"server": {**server, "protocolVersion": "2025-11-25"}}},
    )
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    for proc in [hosts.spawn(name) for name in ("Asking", "Held")]:
        hosts.wait_ready(proc, 120)
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"value": "Ada"})

    async with daemon_client(era="legacy", env=env, elicitation_callback=answer) as session:
        by_app = await _hosts_ready(session, {"Asking", "Held"})
        assert by_app["Held"]["state"]["foreign"]["protocolVersion"] == "2025-11-25"
        assert by_app["Asking"]["state"]["foreign"]["protocolVersion"] in MODERN_PROTOCOL_VERSIONS
        items = await find(session, "ask the user for their name", limit=32)
        by_host = {i["hostApp"]: i for i in items if i["target"] == "ask_name"}
        failing, held = by_host["Asking"], by_host["Held"]
        result = await _invoke(session, failing["id"], {})
        said = " ".join(c.text for c in result.content if c.type == "text")
        assert result.is_error and "--protocol 2025-11-25" in said, said
        result = await _invoke(session, held["id"], {})
        assert not result.is_error and result.content[0].text == "accept Ada", result
        assert asked == ["What is your name?"]
