"""What a down or refused server's reason quotes of its stderr: what the server wrote of its own
end, not what it logged about the proxy's `server/discover` probe (an MCP 1.x Python server logs a
traceback for it), and nothing for a catalog refused for its size; and the commands a failure
suggests name the host as a shell reads it."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from cadmcp.applications import Application, ForeignServer
from cadmcp.foreign.proxy import ForeignHost
from tests.foreign.conftest import SHAPES
from tests.foreign.shapes import CRASH_LINE, UNKNOWN


def _host(shape: str) -> ForeignHost:
    """The proxy's supervisor of a `shapes.py` server, not started yet."""
    server = ForeignServer(command=sys.executable, args=(str(SHAPES), shape))
    return ForeignHost(Application("Shaped", "Shaped", kind="mcp", server=server))


@pytest.mark.anyio
async def test_a_server_that_dies_in_a_call_is_down_quoting_its_words_not_its_log_of_our_probe() -> None:
    host = _host("crashing")
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
            assert host.state["phase"] == "ready", host.state
            with pytest.raises(MCPError) as failed:
                await host.call("plain_tool", {}, input_responses=None, state=None, reporter=None)
            while host.state["phase"] == "ready":
                await anyio.sleep(0.05)
        for reason in (failed.value.error.message, host.state["error"]):
            assert CRASH_LINE in reason, reason
            assert "server/discover" not in reason and UNKNOWN not in reason, reason
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_catalog_refused_for_its_size_quotes_no_stderr() -> None:
    host = _host("huge")
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            await host.start(tg)
        error = host.state["error"]
        assert host.state["phase"] == "refused" and "more than 1,000 tools" in error, host.state
        assert "stderr" not in error, error
        tg.cancel_scope.cancel()


def test_the_commands_a_failure_suggests_quote_a_name_with_a_space() -> None:
    """`cadmcp host add my shop ... --force` would add a host `my` running `shop`."""
    from cadmcp.foreign.proxy import _era_hint

    server = ForeignServer(command=sys.executable, args=(str(SHAPES), "crashing"))
    host = ForeignHost(Application("my shop", "my shop", kind="mcp", server=server))
    assert (
        "(cadmcp host add 'my shop' ... --call-timeout SECONDS --force)" in host._timed_out("x").error.message
    )
    assert "cadmcp host add 'my shop' ... --protocol 2025-11-25 --force" in _era_hint("my shop")
