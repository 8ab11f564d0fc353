"""A host's name is the same everywhere: a server added as `Raw_cursorloop` is listed, found
running and launched once under exactly that name (its endpoint file escapes the `_`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.applications import CONFIG_ENV
from cadmcp.cli import main as cli_main
from cadmcp.wire.endpoints import list_endpoints
from tests.core.helpers import call, structured
from tests.foreign.conftest import config_env, python_server, shape_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

NAME = "Raw_cursorloop"


async def test_a_server_named_with_an_underscore_is_launched_once_and_listed_by_that_name(
    daemon_client: Any,
    runtime_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = config_env(tmp_path, {NAME: python_server("mcp_server_time", "--local-timezone", "UTC")})
    async with daemon_client(env=env) as session:
        started = await call(session, "launch_host", {"hostApp": NAME, "timeoutSeconds": 60})
        assert not started.is_error, started
        assert started.structured_content["hostApp"] == NAME
        again = (await call(session, "launch_host", {"hostApp": NAME})).structured_content
        assert again["alreadyRunning"] and again["hostApp"] == NAME, again
        assert again["hostInstanceId"] == started.structured_content["hostInstanceId"]
        listing = await structured(session, "list_host_instances")
        assert [h["hostApp"] for h in listing["hosts"]] == [NAME]  # one copy, under its own name
        other = (await call(session, "launch_host", {"hostApp": "Raw-cursorloop"})).structured_content
        assert other["type"] == "unknown_host_app" and NAME in other["supported"], other

        (endpoint,) = list_endpoints(runtime_dir)
        assert endpoint.host_app == NAME and endpoint.path.name.startswith("cadmcp_Raw%5Fcursorloop_")
        monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
        assert await anyio.to_thread.run_sync(cli_main, ["host", "list"]) == 0  # it runs a loop of its own
        assert f"  {NAME}: " in (out := capsys.readouterr().out) and f"[running (pid {endpoint.pid})]" in out


async def test_a_server_that_gives_no_version_is_listed_as_of_unknown_version(
    daemon_client: Any, tmp_path: Path
) -> None:
    """A server whose serverInfo has an empty version was listed as version "0"."""
    env = config_env(tmp_path, {"Bare": shape_server("unversioned")})
    async with daemon_client(env=env) as session:
        started = await call(session, "launch_host", {"hostApp": "Bare", "timeoutSeconds": 60})
        assert not started.is_error, started
        (host,) = (await structured(session, "list_host_instances"))["hosts"]
        assert host["hostApp"] == "Bare" and host["version"] == "unknown", host


async def test_a_server_named_with_a_space_that_does_not_come_up_is_told_how_to_fix_it_quoted(
    daemon_client: Any, tmp_path: Path
) -> None:
    """`cadmcp host add my shop --force ...` would add a host `my` running `shop`."""
    env = config_env(tmp_path, {"my shop": {"server": {"command": "no-such-mcp-server-xyz"}}})
    async with daemon_client(env=env) as session:
        failed = await call(session, "launch_host", {"hostApp": "my shop", "timeoutSeconds": 60})
        body = failed.structured_content
        assert failed.is_error and body["type"] == "server_down", body
        assert "`cadmcp host add 'my shop' --force ...`" in body["message"], body
