"""Fixtures for toolset tests: an isolated config dir and an in-process host on a real socket."""

from __future__ import annotations

import textwrap
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from cadmcp.host import HostRuntime
from cadmcp.host.toolsets import CONFIG_DIR_ENV, TOOLSETS_ENV, ToolsetManager, load_toolsets
from cadmcp.wire.sockets import connect


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every toolset test gets its own config directory (no user registry leaks in)."""
    path = tmp_path / "config"
    monkeypatch.setenv(CONFIG_DIR_ENV, str(path))
    monkeypatch.delenv(TOOLSETS_ENV, raising=False)
    return path


def write(folder: Path, name: str, source: str) -> Path:
    """Write a toolset module (dedented) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def tool_module(server: str, *tools: tuple[str, str], extra: str = "") -> str:
    """Source of a toolset module whose tools return `<server>:<tool>:<text>`."""
    body = [
        "from mcp.server.mcpserver import MCPServer",
        f"server = MCPServer({server!r})",
    ]
    for name, doc in tools:
        body += [
            "@server.tool()",
            f"def {name}(text: str = '') -> str:",
            f"    {doc!r}",
            f"    return {server + ':' + name + ':'!r} + text",
        ]
    return "\n".join(body) + "\n" + textwrap.dedent(extra)


@dataclass
class InProcessHost:
    """A real HostRuntime on a real socket, its app thread pumped by a background thread."""

    runtime: HostRuntime
    manager: ToolsetManager
    thread: threading.Thread
    closers: list[Callable[[], None]] = field(default_factory=list)

    @asynccontextmanager
    async def client(self) -> AsyncIterator[ClientSession]:
        assert self.runtime.endpoint is not None
        async with connect(self.runtime.endpoint) as (read, write), ClientSession(read, write) as session:
            await session.discover()
            yield session


@pytest.fixture
def inproc_host(runtime_dir: Path) -> Iterator[Callable[..., InProcessHost]]:
    started: list[InProcessHost] = []

    def start(
        paths: Sequence[str | Path],
        *,
        builtins: Any = None,
        application: Any = None,
        watch: bool = False,
        host_app: str = "Test",
        version: str = "1.0",
    ) -> InProcessHost:
        runtime = HostRuntime(host_app, version, runtime_dir=runtime_dir, application=application)
        if builtins is not None:
            runtime.add_server(builtins(runtime) if callable(builtins) else builtins)
        manager = load_toolsets(runtime, [str(p) for p in paths], watch=watch)  # before the app thread runs
        runtime.start()
        thread = threading.Thread(target=runtime.app_thread.run_forever, name="app", daemon=True)  # type: ignore[attr-defined]
        thread.start()
        host = InProcessHost(runtime, manager, thread)
        started.append(host)
        return host

    yield start
    for host in started:
        host.manager.close()
        host.runtime.stop()
        host.thread.join(timeout=5)
