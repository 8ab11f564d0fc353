"""The Unix socket transport: errors in a session body reach the caller; cancellation works."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession

from cadmcp.host import HostRuntime
from cadmcp.wire.sockets import connect

pytestmark = pytest.mark.anyio


@pytest.fixture
def endpoint(runtime_dir: Path) -> Iterator[Path]:
    runtime = HostRuntime("Wire", "1")
    yield runtime.start()
    runtime.stop()


async def test_an_error_inside_the_block_reaches_the_caller_unwrapped(endpoint: Path) -> None:
    with pytest.raises(ValueError, match="boom"):
        async with connect(endpoint):
            raise ValueError("boom")


async def test_a_session_over_the_socket_works_and_can_be_cancelled(endpoint: Path) -> None:
    async with connect(endpoint) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        assert (await session.list_tools()).tools == []
    with anyio.move_on_after(0.2) as scope:
        async with connect(endpoint) as (read, write), ClientSession(read, write) as session:
            await anyio.sleep(5)
    assert scope.cancelled_caught


async def test_connecting_to_a_missing_endpoint_fails_clearly(runtime_dir: Path) -> None:
    with pytest.raises(OSError):
        async with connect(runtime_dir / "cadmcp_None_1_1.sock"):
            pass
