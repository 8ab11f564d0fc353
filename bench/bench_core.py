"""Core benchmarks: search_dynamic latency on a big merged catalog, invoke_dynamic overhead.

    ./dev python bench/bench_core.py

Figures are printed, never asserted. Baselines: search p50 on 10,000 capabilities (50 hosts x
200 tools) against the 2 ms target; invoke through the daemon against calling the host directly
over the same socket.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.search import SearchIndex, capability_docs
from cadmcp.daemon.searching import search
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints
from cadmcp.wire.sockets import connect

VERBS = ["create", "delete", "list", "export", "count", "rename", "move", "measure", "render", "audit"]
NOUNS = [
    "wall",
    "door",
    "window",
    "layer",
    "block",
    "slab",
    "storey",
    "sheet",
    "view",
    "dimension",
    "schedule",
    "room",
    "level",
    "grid",
    "section",
    "family",
    "material",
    "hatch",
    "text",
    "xref",
]


def synthetic_directory(hosts: int = 50, tools: int = 200) -> HostDirectory:
    index = SearchIndex()
    directory = HostDirectory(index, directory=Path(tempfile.gettempdir()))
    for h in range(hosts):
        key = HostKey("bench", 10_000 + h)
        items = []
        for t in range(tools):
            verb, noun = VERBS[t % len(VERBS)], NOUNS[(t // len(VERBS)) % len(NOUNS)]
            items.append(
                {
                    "name": f"{verb}_{noun}_{t}",
                    "description": f"{verb.capitalize()} a {noun} in the model of host {h} (variant {t}).",
                    "inputSchema": {
                        "type": "object",
                        "properties": {noun: {"type": "string", "description": f"The {noun}"}},
                        "required": [noun],
                    },
                }
            )
        entry = HostEntry.build(
            key,
            host_app=f"App{h % 7}",
            version="1",
            endpoint="",
            protocol_version="2026-07-28",
            server_name="bench",
            tools=items,
            resources=[],
            templates=[],
        )
        ids = {(c.kind, c.target): c.id for c in entry.capabilities}
        docs = capability_docs(
            host_app=entry.host_app,
            host_version="1",
            host_key=key.instance_id,
            tools=items,
            key=lambda kind, target, ids=ids: ids[(kind, target)],
        )
        directory.entries[key] = entry
        index.replace_host(key.instance_id, docs)
    return directory


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_search() -> None:
    started = time.perf_counter()
    directory = synthetic_directory()
    build_ms = (time.perf_counter() - started) * 1000
    queries = [
        "count walls",
        "export door schedule",
        "rename layer",
        "render the view",
        "measure dimension",
        "delete_slab_12",
        "how many windows",
        "move grid",
        "audit",
        "create text",
    ] * 20
    times = []
    for q in queries:
        t0 = time.perf_counter()
        search(directory, {"query": q, "limit": 12})
        times.append((time.perf_counter() - t0) * 1000)
    p50, p95 = statistics.median(times), percentile(times, 0.95)
    print(
        f"search_dynamic over {len(directory.index)} capabilities (50 hosts x 200 tools): "
        f"index build {build_ms:.0f} ms, p50 {p50:.2f} ms, p95 {p95:.2f} ms (target p50 < 2 ms: "
        f"{'met' if p50 < 2 else 'missed'}, {2 / p50:.1f}x under)"
    )


def _cpu_ms(pid: int) -> float:
    """User+system CPU milliseconds a process has used (Linux /proc), or nan elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def bench_invoke(rounds: int = 400, batch: int = 50) -> None:
    """Echo straight to the host and through the daemon, interleaved in batches so both see the
    same machine load; also the daemon's own CPU per call (steadier than wall time on a busy box)."""
    runtime = Path(tempfile.mkdtemp(prefix="cmb"))
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime)}
    host = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", "demo"], env=env, stderr=subprocess.DEVNULL
    )
    try:
        while not list_endpoints(runtime):
            await anyio.sleep(0.05)
        endpoint = list_endpoints(runtime)[0].path
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
            # the semantic layer's one-off embedding of a new catalog is not part of invoking
            env={RUNTIME_DIR_ENV: str(runtime), "CADMCP_SEARCH_SEMANTIC": "off"},
        )
        async with (
            connect(endpoint) as (r, w),
            ClientSession(r, w) as direct,
            stdio_client(params) as (r2, w2),
            ClientSession(r2, w2) as session,
        ):
            await direct.discover()
            await session.discover()
            item = None
            while item is None:
                found = await session.call_tool("search_dynamic", {"query": "echo"})
                item = next((i for i in found.structured_content["items"] if i["target"] == "echo"), None)
                await anyio.sleep(0.1)
            daemon_pid = (await session.call_tool("list_machines", {})).structured_content["machines"][0][
                "daemonPid"
            ]
            args = {"id": item["id"], "arguments": {"text": "hello"}}
            for _ in range(20):
                await direct.call_tool("echo", {"text": "warm"})
                await session.call_tool("invoke_dynamic", args)
            direct_times: list[float] = []
            via: list[float] = []
            cpu = 0.0
            for _ in range(rounds // batch):
                for _ in range(batch):
                    t0 = time.perf_counter()
                    await direct.call_tool("echo", {"text": "hello"})
                    direct_times.append((time.perf_counter() - t0) * 1000)
                before = _cpu_ms(daemon_pid)
                for _ in range(batch):
                    t0 = time.perf_counter()
                    await session.call_tool("invoke_dynamic", args)
                    via.append((time.perf_counter() - t0) * 1000)
                cpu += _cpu_ms(daemon_pid) - before
        d50, v50 = statistics.median(direct_times), statistics.median(via)
        print(
            f"invoke echo (interleaved batches of {batch}): direct to host p50 {d50:.2f} ms p95 "
            f"{percentile(direct_times, 0.95):.2f} ms; client->daemon->host p50 {v50:.2f} ms p95 "
            f"{percentile(via, 0.95):.2f} ms; overhead {v50 - d50:.2f} ms p50 (target <= 1.5 ms: "
            f"{'met' if v50 - d50 <= 1.5 else 'missed'}), ratio {v50 / d50:.2f}x; daemon CPU "
            f"{cpu / len(via):.2f} ms per invoke"
        )
    finally:
        host.terminate()
        host.wait()


if __name__ == "__main__":
    bench_search()
    anyio.run(bench_invoke)
