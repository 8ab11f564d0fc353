"""A foreign server on another machine, through a real nats-server: found and invoked from here."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from cadmcp.applications import CONFIG_ENV
from tests.core.helpers import call, find
from tests.foreign.conftest import python_server
from tests.gateway.conftest import machines, nats_server, wait_machine  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_another_machines_foreign_server_is_searched_and_invoked_through_the_gateway(
    nats_server: Any,  # noqa: F811
    machines: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    bravo.config.write_text(
        json.dumps({"hosts": {"Time": python_server("mcp_server_time", "--local-timezone", "UTC")}})
    )
    monkeypatch.setenv(CONFIG_ENV, str(bravo.config))  # the proxy reads bravo's configuration
    bravo.host("Time")
    bravo.serve(CADMCP_GATEWAY=server.url)
    # a 2025-era client: its handshake waits for a daemon slow to start on a busy machine (discover: 10 s)
    async with alpha.client(era="legacy", CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1, timeout=60)
        with anyio.fail_after(60):  # the machine is seen before its hosts' catalogs are mirrored
            while not (
                items := [i for i in await find(session, "current time", limit=8) if i["hostApp"] == "Time"]
            ):
                await anyio.sleep(0.3)
        found = next(i for i in items if i["target"] == "get_current_time")
        assert found["machineId"] == "bravo-render"
        result = await call(
            session, "invoke_dynamic", {"id": found["id"], "arguments": {"timezone": "Asia/Tokyo"}}
        )
        assert not result.is_error, result
        assert json.loads(result.content[0].text)["timezone"] == "Asia/Tokyo"
