"""Foreign hosts: what an agent's context pays for the tool lists, and the invoke overhead.

    ./dev python bench/bench_foreign.py

Tokens: five real servers' combined `tools/list` (mcp-server-time, mcp-server-git from PyPI;
@modelcontextprotocol/server-everything, server-memory, server-filesystem from npm, installed by
.ci/deps/mcp-servers.sh; all run offline), as an agent loading each server directly gets it,
against cadmcp's own `tools/list` with those servers behind it. Counted with OpenAI's cl100k and
o200k encodings (bpe-openai ships them; tiktoken downloads its files at run time), on the
compact JSON of the list.

Overhead: `get_current_time` of mcp-server-time called directly by an SDK client over stdio,
against the same call through the daemon's `invoke_dynamic` (daemon -> proxy -> server) and
straight to the proxy's endpoint (its hop alone); in the same run, interleaved, `echo` of the
demo host directly and through the same daemon: the overhead cadmcp's own hosts pay (bench_core's
baseline). The target: a foreign call costs no more than that (1.5 ms on a quiet machine).
Clients speak the 2026-07-28 protocol as bench_core's do (`--era legacy`: 2025-11-25). Figures are
printed, never asserted.

Big answers: a `shapes.py bulky` server answers one call with 30 MB of text while small calls to
the same server go on; printed, the big call's time and the longest wait of a small call meanwhile,
through the proxy (its own line reader) against an SDK stdio client talking to the server directly
(the reader the proxy used before; it joins a long line chunk by chunk, in quadratic time).

Search quality on real tool catalogs is bench_search.py's (these five servers beside the CAD hosts,
`eval/mcp-servers/`, and MetaTool's 199 tools, beside FastMCP's BM25, see docs/search.md); this
bench prints the command rather than running it again.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cadmcp.applications import CONFIG_ENV
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints
from cadmcp.wire.sockets import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.foreign.conftest import SHAPES
from tests.foreign.servers import npm_command, python_command

CALLS = 200
REST = 3.0
"""Seconds the daemon and the proxy are watched with no call, for their CPU at rest."""


Server = tuple[str, list[str], dict[str, str]]


def servers(work: Path) -> dict[str, Server]:
    repo, files = work / "repo", work / "files"
    for folder in (repo, files):
        folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    found: dict[str, Server] = {
        "Time": (*python_command("mcp_server_time", "--local-timezone", "UTC"), {}),
        "Git": (*python_command("mcp_server_git", "--repository", str(repo)), {}),
    }
    extra = {
        "Everything": (["stdio"], {}),
        "Memory": ([], {"MEMORY_FILE_PATH": str(work / "memory.jsonl")}),
        "Filesystem": ([str(files)], {}),
    }
    for name, (args, env) in extra.items():
        command = npm_command(name.lower(), *args)
        if isinstance(command, str):
            print(f"{name}: skipped ({command} missing)")
        else:
            found[name] = (*command, env)
    return found


def tokens(text: str) -> dict[str, int]:
    import bpe_openai

    return {name: len(bpe_openai.get_encoding(name).encode(text)) for name in ("cl100k_base", "o200k_base")}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def elicit(context: Any, params: Any) -> Any:  # declares elicitation, as agents' clients do
    import mcp_types as types

    return types.ElicitResult(action="cancel")


async def direct_lists(found: dict[str, Server]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name, (command, args, env) in found.items():
        params = StdioServerParameters(command=command, args=args, env=env or None)
        async with (
            stdio_client(params, errlog=open(os.devnull, "w")) as (r, w),
            ClientSession(r, w, elicitation_callback=elicit) as s,
        ):
            await s.initialize()
            await anyio.sleep(0.5)  # servers that add tools once a client is known (server-everything)
            listed = await s.list_tools()
            out[name] = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
    return out


def children(pid: int | str = "self") -> set[int]:
    """The child processes of `pid` (Linux; none elsewhere)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def cpu_ms(pid: int | str) -> float:
    """CPU time (user + system) a process has used so far, in ms (0 where /proc has none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


OVERHEAD_ROUNDS = 10
OVERHEAD_BATCH = 50


async def _open(session: ClientSession, era: str) -> None:
    await (session.discover() if era == "modern" else session.initialize())


async def _cap_id(session: ClientSession, query: str, app: str, target: str) -> str:
    with anyio.fail_after(120):
        while True:
            found = (
                await session.call_tool("search_dynamic", {"query": query, "limit": 10})
            ).structured_content
            items = (found or {}).get("items", [])
            hits = [i["id"] for i in items if i["hostApp"] == app and i["target"] == target]
            if hits:
                return hits[0]
            await anyio.sleep(0.3)


async def overhead(
    env: dict[str, str], runtime: Path, era: str
) -> tuple[list[dict[str, Any]], dict[str, list[float]], dict[str, float]]:
    """Times of the same calls made directly and through the daemon, interleaved in batches so all
    see the same machine: `echo` of the demo host (cadmcp's own host, bench_core's baseline) and
    `get_current_time` of mcp-server-time (directly over stdio; through the daemon and the proxy;
    and straight to the proxy's endpoint, which is the proxy's own hop). Also the CPU per call of
    the daemon and the proxy, and the daemon's own `tools/list` (what an agent loads)."""
    command, args = python_command("mcp_server_time", "--local-timezone", "UTC")
    daemon_params = StdioServerParameters(
        command=sys.executable, args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"], env=env
    )
    with anyio.fail_after(120):  # the demo host and the Time proxy serve (the proxy once its server listed)
        while not {"Demo", "Time"} <= {ep.host_app for ep in list_endpoints(runtime)}:
            await anyio.sleep(0.1)
    endpoints = {ep.host_app: ep.path for ep in list_endpoints(runtime)}
    async with (
        stdio_client(daemon_params) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit, read_timeout_seconds=120) as via,
        connect(endpoints["Demo"]) as (r2, w2),
        ClientSession(r2, w2) as demo,
        connect(endpoints["Time"]) as (r3, w3),
        ClientSession(r3, w3) as proxy,
        stdio_client(StdioServerParameters(command=command, args=args)) as (r4, w4),
        ClientSession(r4, w4) as server,
    ):
        for session in (via, demo, proxy, server):
            await _open(session, era)
        own = [
            t.model_dump(by_alias=True, mode="json", exclude_none=True)
            for t in (await via.list_tools()).tools
        ]
        echo = await _cap_id(via, "echo", "Demo", "echo")
        now = await _cap_id(via, "current time", "Time", "get_current_time")
        daemon = (await via.call_tool("list_machines", {})).structured_content["machines"][0]["daemonPid"]
        time_proxy = next(ep.pid for ep in list_endpoints(runtime) if ep.host_app == "Time")
        utc = {"timezone": "UTC"}
        calls = {
            "echo direct": lambda: demo.call_tool("echo", {"text": "hello"}),
            "echo via daemon": lambda: via.call_tool(
                "invoke_dynamic", {"id": echo, "arguments": {"text": "hello"}}
            ),
            "time direct": lambda: server.call_tool("get_current_time", utc),
            "time to the proxy": lambda: proxy.call_tool("get_current_time", utc),
            "time via daemon": lambda: via.call_tool("invoke_dynamic", {"id": now, "arguments": utc}),
        }
        for name, call in calls.items():
            for _ in range(20):
                result = await call()
            assert not result.is_error, f"{name}: {result}"
        times: dict[str, list[float]] = {name: [] for name in calls}
        watched = {
            "echo via daemon": {"daemon": daemon},
            "time via daemon": {"daemon": daemon, "proxy": time_proxy},
        }
        used: dict[str, float] = {}
        for _ in range(OVERHEAD_ROUNDS):
            for name, call in calls.items():
                before = {who: cpu_ms(pid) for who, pid in watched.get(name, {}).items()}
                for _ in range(OVERHEAD_BATCH):
                    t0 = time.perf_counter()
                    await call()
                    times[name].append((time.perf_counter() - t0) * 1000)
                for who, pid in watched.get(name, {}).items():
                    key = f"{who} ({name.split()[0]})"
                    used[key] = used.get(key, 0.0) + cpu_ms(pid) - before[who]
        calls_each = OVERHEAD_ROUNDS * OVERHEAD_BATCH
        used = {k: v / calls_each for k, v in used.items()}
    return own, times, used


BIG_MB = 30


async def _big_answer_while_small_calls(session: ClientSession) -> tuple[float, float, int]:
    """Seconds the big call takes, and the longest small call (ms) and their count meanwhile."""
    waits: list[float] = []
    done = anyio.Event()

    async def small() -> None:
        while not done.is_set():
            t0 = time.perf_counter()
            await session.call_tool("plain_tool", {"megabytes": 0})
            waits.append((time.perf_counter() - t0) * 1000)
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(small)
        await anyio.sleep(0.3)
        t0 = time.perf_counter()
        result = await session.call_tool("plain_tool", {"megabytes": BIG_MB})
        took = time.perf_counter() - t0
        done.set()
    assert not result.is_error, result
    return took, max(waits), len(waits)


async def big_answers(runtime: Path, era: str) -> dict[str, tuple[float, float, int]]:
    """A 30 MB answer beside small calls: through the proxy, and an SDK client directly."""
    with anyio.fail_after(120):
        while "Bulky" not in {ep.host_app for ep in list_endpoints(runtime)}:
            await anyio.sleep(0.1)
    endpoint = next(ep.path for ep in list_endpoints(runtime) if ep.host_app == "Bulky")
    direct = StdioServerParameters(command=sys.executable, args=[str(SHAPES), "bulky"])
    out = {}
    async with connect(endpoint) as (r, w), ClientSession(r, w, read_timeout_seconds=None) as proxy:
        await _open(proxy, era)
        out["through the proxy"] = await _big_answer_while_small_calls(proxy)
    async with stdio_client(direct) as (r, w), ClientSession(r, w, read_timeout_seconds=None) as sdk:
        await sdk.initialize()
        out["SDK stdio client, directly"] = await _big_answer_while_small_calls(sdk)
    return out


def main() -> None:
    era = sys.argv[sys.argv.index("--era") + 1] if "--era" in sys.argv else "modern"
    work = Path(tempfile.mkdtemp(prefix="cmb"))
    load_before = os.getloadavg()[0]
    found = servers(work)
    runtime = work / "run"
    runtime.mkdir(mode=0o700)
    config = work / "hosts.json"
    config.write_text(
        json.dumps(
            {
                "hosts": {
                    n: {"server": {"command": c, "args": a, **({"env": e} if e else {})}}
                    for n, (c, a, e) in found.items()
                }
                | {"Bulky": {"server": {"command": sys.executable, "args": [str(SHAPES), "bulky"]}}}
            }
        )
    )
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime), CONFIG_ENV: str(config), SEMANTIC_ENV: "off"}
    hosts = [
        subprocess.Popen([sys.executable, "-m", "cadmcp", "host", n], env=env, stderr=subprocess.DEVNULL)
        for n in [*found, "demo", "Bulky"]
    ]
    try:
        lists = anyio.run(direct_lists, found)
        own, times, cpu = anyio.run(overhead, env, runtime, era)
        big = anyio.run(big_answers, runtime, era)
    finally:
        for proc in hosts:
            proc.terminate()
        for proc in hosts:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    print(f"servers: {', '.join(f'{n} ({len(t)} tools)' for n, t in lists.items())}")
    combined = [t for tools in lists.values() for t in tools]
    direct_tokens = tokens(compact(combined))
    own_tokens = tokens(compact(own))
    for name in direct_tokens:
        print(
            f"tools/list tokens ({name}): direct {direct_tokens[name]:,} for {len(combined)} tools; "
            f"through cadmcp {own_tokens[name]:,} for its {len(own)} tools "
            f"({direct_tokens[name] / own_tokens[name]:.1f}x less; cadmcp's stays the same as servers "
            "are added)"
        )
    for name, tools in lists.items():
        print(f"  {name}: {tokens(compact(tools))['cl100k_base']:,} tokens (cl100k)")
    p50 = {name: statistics.median(t) for name, t in times.items()}
    p95 = {name: statistics.quantiles(t, n=20)[18] for name, t in times.items()}
    own_host = p50["echo via daemon"] - p50["echo direct"]
    foreign = p50["time via daemon"] - p50["time direct"]
    proxy_hop = p50["time to the proxy"] - p50["time direct"]
    daemon_hop = p50["time via daemon"] - p50["time to the proxy"]
    verdict = "met" if foreign <= max(own_host, 1.5) else "missed"
    print(
        f"invoke overhead, {era}-era clients, {OVERHEAD_ROUNDS} interleaved batches of {OVERHEAD_BATCH} "
        "calls each (p50 / p95 ms): "
        + "; ".join(f"{name} {p50[name]:.2f} / {p95[name]:.2f}" for name in times)
    )
    print(
        f"  overhead of cadmcp's own host (echo) {own_host:.2f} ms; of the foreign one (get_current_time) "
        f"{foreign:.2f} ms: the proxy's hop {proxy_hop:.2f} ms, the daemon's {daemon_hop:.2f} ms; foreign / "
        f"own {foreign / own_host:.2f}x (target: at most the own hosts' overhead, 1.5 ms: {verdict})"
    )
    print(
        "  CPU per call (ms; little moved by a loaded machine, unlike the times above): "
        + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
    )
    for name, (took, longest, count) in big.items():
        print(
            f"a {BIG_MB} MB answer, {name}: {took:.2f} s; the longest of {count} small calls to the same "
            f"server meanwhile {longest:.0f} ms"
        )
    print(
        f"load average (1 min): {load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end, "
        f"on {os.cpu_count()} cpus"
    )
    print(
        "search quality on these servers' catalogs beside the CAD hosts, and on MetaTool's 199 tools "
        "(FastMCP's BM25 beside): python bench/bench_search.py --sets "
        "MCP-servers-A,MCP-servers-B,MetaTool-A,MetaTool-B --no-scale (figures in docs/search.md)"
    )


if __name__ == "__main__":
    main()
