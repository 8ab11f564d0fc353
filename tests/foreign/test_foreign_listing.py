"""How the proxy lists a server's catalog when the server lacks some of it: a list method it does
not have is an empty list (said in its state), and a list that fails names the method."""

from __future__ import annotations

import sys

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
