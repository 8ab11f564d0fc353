"""Document hosts served by a real HostRuntime on a real socket (the built-in surface attached)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from cadmcp.host import HostRuntime
from cadmcp.host.builtins import attach
from cadmcp.wire.sockets import connect


@pytest.fixture
def served(runtime_dir: Path) -> Iterator[Callable[..., Any]]:
    """`async with served(server, "Notes") as session:` the server attached to a real HostRuntime."""
    runtimes: list[tuple[HostRuntime, threading.Thread]] = []

    @asynccontextmanager
    async def serve(server: Any, app: str = "Notes") -> AsyncIterator[ClientSession]:
        runtime = HostRuntime(app, "1.0", runtime_dir=runtime_dir)
        attach(runtime, server)
        runtime.start()
        thread = threading.Thread(target=runtime.app_thread.run_forever, name="app", daemon=True)  # type: ignore[attr-defined]
        thread.start()
        runtimes.append((runtime, thread))
        assert runtime.endpoint is not None
        async with connect(runtime.endpoint) as (read, write), ClientSession(read, write) as session:
            await session.discover()
            yield session

    yield serve
    for runtime, thread in runtimes:
        runtime.stop()
        thread.join(timeout=5)
