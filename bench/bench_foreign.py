"""Foreign hosts: what an agent's context pays for the tool lists, and the invoke overhead.

    ./dev python bench/bench_foreign.py

Tokens: five real servers' combined `tools/list` (mcp-server-time, mcp-server-git from PyPI;
@modelcontextprotocol/server-everything, server-memory, server-filesystem from npm, installed by
.ci/deps/mcp-servers.sh; all run offline), as an agent loading each server directly gets it,
against cadmcp's own `tools/list` with those servers behind it. Counted with OpenAI's cl100k and
o200k encodings (bpe-openai ships them; tiktoken downloads its files at run time), on the
compact JSON of the list.

Overhead: `get_current_time` of mcp-server-time called directly by an SDK client over stdio,
against the same call through the daemon's `invoke_dynamic` (daemon -> proxy -> server). The
target: no more than the 1.5 ms cadmcp's own hosts add (bench_core.py). Figures are printed,
never asserted.

Search quality on real tool catalogs is bench_search.py's (MetaTool's 199 tools beside FastMCP's
BM25, see docs/search.md); this bench prints the command rather than running it again.
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
from mcp.shared.exceptions import MCPError

from cadmcp.applications import CONFIG_ENV
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
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


class CpuPerCall:
    """CPU per call of named processes over a loop of calls: unlike wall time, hardly moved by the
    other work of a loaded machine."""

    def __init__(self, pids: dict[str, int | str]) -> None:
        self.pids = pids
        self.before = {name: cpu_ms(pid) for name, pid in pids.items()}

    def per_call(self, calls: int) -> dict[str, float]:
        return {name: (cpu_ms(pid) - self.before[name]) / calls for name, pid in self.pids.items()}


async def direct_calls() -> tuple[list[float], dict[str, float]]:
    command, args = python_command("mcp_server_time", "--local-timezone", "UTC")
    params = StdioServerParameters(command=command, args=args)
    before = children()
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        server = min(children() - before, default=0)
        cpu = CpuPerCall({"client": "self", "server": server})
        times = []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            await s.call_tool("get_current_time", {"timezone": "UTC"})
            times.append((time.perf_counter() - t0) * 1000)
        used = cpu.per_call(CALLS)
    return times[5:], used


async def through_cadmcp(
    env: dict[str, str], names: list[str], time_proxy: int
) -> tuple[list[dict[str, Any]], list[float], dict[str, float]]:
    before = children()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"], env=env
    )
    async with (
        stdio_client(params) as (r, w),
        ClientSession(r, w, elicitation_callback=elicit, read_timeout_seconds=120) as s,
    ):
        for attempt in range(12):  # a busy machine starts a daemon slowly; one probe waits 10 s at most
            try:
                await s.discover()
                break
            except MCPError:
                if attempt == 11:
                    raise
        with anyio.fail_after(120):
            while True:
                listing = (await s.call_tool("list_host_instances", {})).structured_content or {}
                ready = {
                    h["hostApp"]
                    for h in listing.get("hosts", [])
                    if h.get("state", {}).get("phase") == "ready"
                }
                if set(names) <= ready:
                    break
                await anyio.sleep(0.3)
        own = [
            t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in (await s.list_tools()).tools
        ]
        found = (
            await s.call_tool("search_dynamic", {"query": "current time", "limit": 5})
        ).structured_content
        cap = next(i for i in found["items"] if i["target"] == "get_current_time")
        daemon = min(children() - before, default=0)
        server = min(children(time_proxy), default=0)
        cpu = CpuPerCall({"client": "self", "daemon": daemon, "proxy": time_proxy, "server": server})
        times = []
        started = time.perf_counter()
        for _ in range(CALLS):
            t0 = time.perf_counter()
            await s.call_tool("invoke_dynamic", {"id": cap["id"], "arguments": {"timezone": "UTC"}})
            times.append((time.perf_counter() - t0) * 1000)
        used = cpu.per_call(CALLS)
        took = time.perf_counter() - started
        resting = CpuPerCall({"daemon at rest": daemon, "proxy at rest": time_proxy})
        await anyio.sleep(REST)
        at_rest = {k: v / REST for k, v in resting.per_call(1).items()}  # ms of CPU a second, no calls
        used.update({k: v * took / CALLS for k, v in at_rest.items()})  # what the same time costs idle
    return own, times[5:], used


def main() -> None:
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
            }
        )
    )
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime), CONFIG_ENV: str(config), SEMANTIC_ENV: "off"}
    proxies = [
        subprocess.Popen([sys.executable, "-m", "cadmcp", "host", n], env=env, stderr=subprocess.DEVNULL)
        for n in found
    ]
    try:
        lists = anyio.run(direct_lists, found)
        direct, direct_cpu = anyio.run(direct_calls)
        time_proxy = proxies[list(found).index("Time")].pid
        own, via, via_cpu = anyio.run(through_cadmcp, env, list(found), time_proxy)
    finally:
        for proc in proxies:
            proc.terminate()
        for proc in proxies:
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
    d50, v50 = statistics.median(direct), statistics.median(via)
    d95, v95 = (statistics.quantiles(x, n=20)[18] for x in (direct, via))
    print(
        f"get_current_time ({len(direct)} calls each): p50 direct {d50:.2f} ms, through cadmcp "
        f"{v50:.2f} ms, overhead {v50 - d50:.2f} ms (target <= 1.5 ms, cadmcp's own hosts); p95 direct "
        f"{d95:.2f} ms, through cadmcp {v95:.2f} ms, overhead {v95 - d95:.2f} ms"
    )
    print(
        "CPU per call (ms; little moved by a loaded machine, unlike the times above): direct "
        + ", ".join(f"{k} {v:.2f}" for k, v in direct_cpu.items())
        + "; through cadmcp "
        + ", ".join(f"{k} {v:.2f}" for k, v in via_cpu.items())
    )
    print(
        f"load average (1 min): {load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end, "
        f"on {os.cpu_count()} cpus"
    )
    print(
        "search quality on real tool catalogs (MetaTool's 199 tools, FastMCP's BM25 beside): "
        "python bench/bench_search.py --sets MetaTool-A,MetaTool-B --no-scale (figures in docs/search.md)"
    )


if __name__ == "__main__":
    main()
