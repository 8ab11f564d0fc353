"""How the proxy lists a server's catalog when the server lacks some of it: a list method it does
not have is an empty list (said in its state), and a list that fails names the method; and what
its state says when its entry is edited while it runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from cadmcp.applications import Application, ForeignServer
from cadmcp.foreign.proxy import ForeignHost
from tests.foreign.conftest import SHAPES

pytestmark = pytest.mark.anyio


def _host(shape: str) -> ForeignHost:
    """The proxy's supervisor of a `shapes.py` server, not started yet."""
    server = ForeignServer(command=sys.executable, args=(str(SHAPES), shape))
    return ForeignHost(Application("Shaped", "Shaped", kind="mcp", server=server))


async def test_a_list_method_the_server_lacks_is_empty_and_its_tools_are_served() -> None:
    """As mcp-server-sqlite: it declares resources and prompts, and answers Method not found to
    resources/templates/list (and here prompts/list too)."""
    host = _host("notemplates")
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
        assert host.state["phase"] == "ready", host.state
        assert [t.name for t in host.tools] == ["plain_tool"]
        assert [str(r.uri) for r in host.resources] == ["memo://insights"]
        assert host.templates == []
        note = host.state["foreign"]["notListed"]
        assert note.startswith("resources/templates/list, prompts/list: the server declares"), note
        tg.cancel_scope.cancel()


async def test_a_list_the_server_fails_to_answer_names_the_method() -> None:
    host = _host("listfails")
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
        assert host.state["phase"] == "down", host.state
        error = host.state["error"]
        assert error.startswith("the server answered resources/list with an error (-32000: widget"), error
        assert "notListed" not in host.state["foreign"]
        tg.cancel_scope.cancel()


async def test_an_edited_entry_of_a_running_server_is_said_to_apply_at_its_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editing a running server's entry changed nothing, and nothing said so: the server keeps
    the entry it started with (restarting it would end its calls and what it holds), and its state
    says the new one applies when it is started again."""
    from cadmcp.applications import CONFIG_ENV, find

    def write(shape: str) -> None:
        entry = {"server": {"command": sys.executable, "args": [str(SHAPES), shape]}}
        path.write_text(json.dumps({"hosts": {"Shaped": entry}}))

    path = tmp_path / "hosts.json"
    monkeypatch.setenv(CONFIG_ENV, str(path))
    write("twice")
    app = find("Shaped")
    assert app is not None
    host = ForeignHost(app)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.state["phase"] == "ready" and "entryChanged" not in host.state["foreign"]
            pid = host.server_pid
        write("notemplates")
        with anyio.fail_after(10):  # the proxy looks at the file every second
            while "entryChanged" not in host.state["foreign"]:
                await anyio.sleep(0.1)
        note = host.state["foreign"]["entryChanged"]
        assert "the new one applies when it is started again" in note, note
        assert host.state["phase"] == "ready" and host.server_pid == pid
        assert host.listed_twice == ["tool 'plain_tool'"]  # still the server it started as
        write("twice")  # edited back: nothing to apply
        with anyio.fail_after(10):
            while "entryChanged" in host.state["foreign"]:
                await anyio.sleep(0.1)
        tg.cancel_scope.cancel()


async def test_what_a_server_logs_through_mcp_is_kept_in_the_proxys_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A FastMCP server's ctx.info and ctx.warning reached nobody; they are in the proxy's log now
    (the call log), a hundred per ten seconds at most, saying the rest are left out."""
    from cadmcp.foreign import serverlog

    host = _host("logging")
    caplog.set_level("INFO", logger="cadmcp.foreign")
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.session is not None
            await host.session.raw_request("tools/call", {"name": "plain_tool", "arguments": {}})
            while sum("Shaped (shop) logged" in r.getMessage() for r in caplog.records) < serverlog.MAX_LINES:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    lines = [r for r in caplog.records if "Shaped (shop) logged" in r.getMessage()]
    assert lines[0].getMessage() == "Shaped (shop) logged warning: note 0" and lines[0].levelname == "WARNING"
    assert len(lines) == serverlog.MAX_LINES  # the other 50 are left out, and that is said at once
    assert any("Shaped logs more than 100 messages in 10 s" in r.getMessage() for r in caplog.records)
