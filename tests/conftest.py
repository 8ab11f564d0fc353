"""Shared fixtures: an isolated runtime directory, real host processes, a real daemon."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.userdirs import LOG_DIR_ENV, RECOVERY_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints

REQUIRE_ENV = "CADMCP_TEST_REQUIRE"
"""Components (comma-separated, or `all`) whose absence fails tests instead of skipping them."""


def require_component(name: str, missing_reason: str | None) -> None:
    """Skip (or, when CADMCP_TEST_REQUIRE names it, fail) a test whose system component is missing.

    `missing_reason` is None when the component is present; otherwise it says what to install.
    """
    if missing_reason is None:
        return
    wanted = {w.strip() for w in os.environ.get(REQUIRE_ENV, "").split(",") if w.strip()}
    if name in wanted or "all" in wanted:
        pytest.fail(f"{name} is required here ({REQUIRE_ENV}) but missing: {missing_reason}")
    pytest.skip(f"{name} missing: {missing_reason}")


@pytest.fixture(autouse=True)
def lexical_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Search ranks lexically unless a test turns semantic ranking on (it loads a model)."""
    monkeypatch.setenv(SEMANTIC_ENV, "off")


WHOLE_VIEWS = {
    "CADMCP_SCREENSHOT_BUDGET": "600",
    RECOVERY_DIR_ENV: tempfile.mkdtemp(prefix="cmr"),
}
"""Screenshots in tests are drawn whole, never cut short by how busy the machine is (the tests
of the budget set their own); copies of unsaved changes a stopping host keeps stay out of $HOME."""


@pytest.fixture(autouse=True)
def whole_views(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in WHOLE_VIEWS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime directory short enough for Unix socket paths (and a private log dir)."""
    path = Path(tempfile.mkdtemp(prefix="cmt"))
    os.chmod(path, 0o700)
    logs = Path(tempfile.mkdtemp(prefix="cml"))
    monkeypatch.setenv(RUNTIME_DIR_ENV, str(path))
    monkeypatch.setenv(LOG_DIR_ENV, str(logs))  # call logs of hosts and daemons stay out of $HOME
    yield path
    for endpoint in list_endpoints(path):  # hosts still serving, e.g. detached by a restart: stop them
        with contextlib.suppress(OSError):
            if b"cadmcp" in Path(f"/proc/{endpoint.pid}/cmdline").read_bytes():
                os.kill(endpoint.pid, signal.SIGTERM)
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(logs, ignore_errors=True)


class HostProcesses:
    """Starts real host processes (`python -m cadmcp host ...`) and stops them at teardown."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        """Start a host without waiting for it (start several, then `wait_ready` each)."""
        env = {**os.environ, RUNTIME_DIR_ENV: str(self.directory)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "host", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.procs.append(proc)
        return proc

    def start(self, *args: str, timeout: float = 30.0) -> subprocess.Popen[bytes]:
        """Start a host and wait until its endpoint exists."""
        return self.wait_ready(self.spawn(*args), timeout)

    def wait_ready(self, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> subprocess.Popen[bytes]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(ep.pid == proc.pid for ep in list_endpoints(self.directory)):
                return proc
            if proc.poll() is not None:
                raise RuntimeError(f"host exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.05)
        raise TimeoutError(f"host {proc.args} did not create its endpoint in {timeout}s")

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def hosts(runtime_dir: Path) -> Iterator[HostProcesses]:
    procs = HostProcesses(runtime_dir)
    yield procs
    procs.stop_all()


@pytest.fixture
def daemon_client(runtime_dir: Path) -> Callable[..., object]:
    """`async with daemon_client(era="modern") as session:` a real daemon process over stdio."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    @asynccontextmanager
    async def connect(
        era: str = "modern", env: dict[str, str] | None = None, **session_kwargs: object
    ) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
            env={
                RUNTIME_DIR_ENV: str(runtime_dir),
                LOG_DIR_ENV: os.environ.get(LOG_DIR_ENV, ""),
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                # the model would load in every daemon; tests that want it say so
                SEMANTIC_ENV: "off",
                **WHOLE_VIEWS,
                **(env or {}),
            },
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, **session_kwargs) as session,
        ):
            if era == "modern":
                await _discover(session)
            else:
                await session.initialize()
            yield session

    return connect


async def _discover(session: object, attempts: int = 3) -> None:
    """`server/discover`, asked again when it times out: the SDK waits 10 s for it, and a daemon
    starting on a busy machine (several hosts importing at once) can take longer to answer."""
    from mcp.shared.exceptions import MCPError

    for attempt in range(attempts):
        try:
            await session.discover()  # type: ignore[attr-defined]
            return
        except MCPError as exc:
            if "timed out" not in str(exc) or attempt == attempts - 1:
                raise
