"""Fault and load figures for the daemon (printed beside their targets, never asserted).

    ./dev python bench/bench_faults.py [--quick]

- hung host: SIGSTOP a host mid-call, time until the call answers `invocation_failed` (target < 10 s);
- 10 MB argument: time to refuse it (target < 50 ms) and the p95 of another client's echo
  calls meanwhile, against its p95 alone (target: unchanged);
- load: 10 hosts, 1,000 invokes from 5 HTTP sessions: p50/p95, lost/duplicated (target 0);
- launches: 100 consecutive `launch_host` with the semantic layer on: hung launches (target 0);
- orphans: 50 daemons each launching an attached host then killed: hosts left (target 0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cadmcp.daemon import httpauth
from cadmcp.daemon.limits import MAX_REQUEST_BYTES
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.userdirs import CONFIG_DIR_ENV, LOG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints, pid_alive
from cadmcp.wire.sockets import message_streams

ROOT = Path(__file__).resolve().parents[1]
PASSED_ENV = (RUNTIME_DIR_ENV, LOG_DIR_ENV, CONFIG_DIR_ENV, SEMANTIC_ENV, "PATH", "HOME", "PYTHONPATH")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Place:
    """A private runtime, log and config folder for one measurement."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="cbf"))
        for name in ("run", "logs", "config"):
            (self.root / name).mkdir(mode=0o700)
        self.env = {
            **os.environ,
            RUNTIME_DIR_ENV: str(self.root / "run"),
            LOG_DIR_ENV: str(self.root / "logs"),
            CONFIG_DIR_ENV: str(self.root / "config"),
            SEMANTIC_ENV: "off",
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def host(self, *args: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "host", *args], env=self.env, stderr=subprocess.DEVNULL
        )
        self.procs.append(proc)
        return proc

    def wait_endpoints(self, count: int) -> None:
        deadline = time.monotonic() + 120
        while len(list_endpoints(self.root / "run")) < count:
            if time.monotonic() > deadline:
                raise TimeoutError("hosts did not start")
            time.sleep(0.05)

    @asynccontextmanager
    async def daemon(self, **env: str) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
            env={
                k: v
                for k, v in {**self.env, **env}.items()
                if k
                in (RUNTIME_DIR_ENV, LOG_DIR_ENV, CONFIG_DIR_ENV, SEMANTIC_ENV, "PATH", "HOME", "PYTHONPATH")
            },
        )
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.discover()
            yield session

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)


async def find_id(session: ClientSession, target: str, count: int = 1) -> list[str]:
    deadline = time.monotonic() + 60
    while True:
        found = await session.call_tool("search_dynamic", {"query": target, "limit": 32})
        ids = [i["id"] for i in found.structured_content["items"] if i["target"] == target]
        if len(ids) >= count:
            return ids
        if time.monotonic() > deadline:
            raise TimeoutError(f"{target} not found")
        await anyio.sleep(0.1)


async def stop_mid_call() -> float:
    """Seconds from SIGSTOP of a host in the middle of a call until that call fails."""
    place = Place()
    try:
        host = place.host("demo")
        place.wait_endpoints(1)
        async with place.daemon() as session:
            (slow,) = await find_id(session, "slow")
            answer: dict[str, Any] = {}

            async def call() -> None:
                args = {"id": slow, "arguments": {"seconds": 60}}
                result = await session.call_tool("invoke_dynamic", args)
                answer["at"], answer["body"] = time.monotonic(), result.structured_content

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.5)
                os.kill(host.pid, signal.SIGSTOP)
                stopped = time.monotonic()
            assert answer["body"]["type"] == "invocation_failed", answer
            return float(answer["at"] - stopped)
    finally:
        place.close()


async def hung_host(rounds: int) -> None:
    figures = [await stop_mid_call() for _ in range(rounds)]
    print(
        f"hung host (SIGSTOP mid-call) -> invocation_failed: min {min(figures):.1f} s, "
        f"median {statistics.median(figures):.1f} s, max {max(figures):.1f} s over {rounds} "
        f"(target < 10 s: {'met' if max(figures) < 10 else 'missed'})"
    )


@asynccontextmanager
async def http_daemon(place: Place) -> AsyncIterator[tuple[str, str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0", "--scan-interval", "0.5"],
        env=place.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split(" at ", 1)[1].split()[0]
    token = httpauth.read_token(place.root / "config" / httpauth.TOKEN_FILE)
    try:
        yield url, token
    finally:
        proc.terminate()
        proc.wait(15)


NOISY_CLIENT = """
import sys, time, anyio, contextlib
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from cadmcp.daemon import httpauth
url, token, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
async def main():
    big = "q" * (10 * 1024 * 1024)
    async with httpauth.connect(url, token=token) as (r, w), ClientSession(r, w) as s:
        await s.discover()
        for _ in range(rounds):
            t0 = time.perf_counter()
            with contextlib.suppress(MCPError):  # HTTP: 413 before the body is parsed
                await s.call_tool("search_dynamic", {"query": big})
            print((time.perf_counter() - t0) * 1000, flush=True)
anyio.run(main)
"""
"""Sends 10 MB queries from a process of its own, so its own JSON work does not slow the measured client."""


async def big_argument(rounds: int) -> None:
    place = Place()
    try:
        place.host("demo")
        place.wait_endpoints(1)
        async with (
            http_daemon(place) as (url, token),
            httpauth.connect(url, token=token) as (r1, w1),
            ClientSession(r1, w1) as calm,
        ):
            await calm.discover()
            (echo,) = await find_id(calm, "echo")

            async def echoes(until: Any) -> list[float]:
                times = []
                while not until():
                    t0 = time.perf_counter()
                    await calm.call_tool("invoke_dynamic", {"id": echo, "arguments": {"text": "x"}})
                    times.append((time.perf_counter() - t0) * 1000)
                return times

            count = iter(range(300))
            alone = await echoes(lambda: next(count, None) is None)
            seen: dict[str, tuple[list[float], list[float]]] = {}
            # Once as is, once at the lowest CPU priority: on two cores the sender's own work (JSON of
            # 10 MB per call) competes with everything; at nice 19 what is left is the daemon's share.
            for label, prefix in (("as is", []), ("sender at nice 19", ["nice", "-n", "19"])):
                noisy = subprocess.Popen(
                    [*prefix, sys.executable, "-c", NOISY_CLIENT, url, token, str(rounds)],
                    env=place.env,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                together = await echoes(lambda proc=noisy: proc.poll() is not None)
                refusals = [float(line) for line in (noisy.stdout.read() if noisy.stdout else "").split()]
                seen[label] = (together, refusals)
        inside = await refusal_inside_the_daemon()
        print(
            f"10 MB query refused: inside the daemon (read, skip unparsed, answer) p50 "
            f"{statistics.median(inside):.1f} ms (target < 50 ms: "
            f"{'met' if statistics.median(inside) < 50 else 'missed'}); another client's echo p95 alone "
            f"{pct(alone, 0.95):.1f} ms"
        )
        for label, (together, refusals) in seen.items():
            print(
                f"  while another process sends 10 MB queries over HTTP ({label}): it waits p50 "
                f"{statistics.median(refusals):.0f} ms per refusal (its own 10 MB included); the other "
                f"client's echo p95 {pct(together, 0.95):.1f} ms "
                f"({pct(together, 0.95) / pct(alone, 0.95):.2f}x alone, {len(together)} calls)"
            )
    finally:
        place.close()


class _Feed(anyio.abc.ByteStream):
    """A byte stream that delivers one request line in socket-sized chunks and keeps the answer."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.out = data, 0, b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self.pos >= len(self.data):
            await anyio.sleep_forever()
        chunk = self.data[self.pos : self.pos + 262144]
        self.pos += len(chunk)
        return chunk

    async def send(self, item: bytes) -> None:
        self.out += item

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def refusal_inside_the_daemon(rounds: int = 20) -> list[float]:
    """Milliseconds the daemon's transport spends on a 10 MB request line before its answer is out."""
    body = {"name": "search_dynamic", "arguments": {"query": "q" * (10 * 1024 * 1024)}}
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": body}).encode() + b"\n"
    figures = []
    for _ in range(rounds):
        feed = _Feed(line)
        started = time.perf_counter()
        async with message_streams(feed, role="server", max_line=MAX_REQUEST_BYTES):
            while not feed.out:
                await anyio.sleep(0)
        figures.append((time.perf_counter() - started) * 1000)
    return figures


async def load(calls: int, hosts: int = 10, sessions: int = 5) -> None:
    place = Place()
    try:
        for n in range(hosts):
            place.host("demo", "--app", f"Load{n}")
        place.wait_endpoints(hosts)
        async with http_daemon(place) as (url, token):
            async with httpauth.connect(url, token=token) as (r, w), ClientSession(r, w) as first:
                await first.discover()
                echoes = await find_id(first, "echo", hosts)
            times: list[float] = []
            answers: dict[str, str] = {}

            async def worker(k: int) -> None:
                async with httpauth.connect(url, token=token) as (r, w), ClientSession(r, w) as s:
                    await s.discover()
                    for n in range(k, calls, sessions):
                        t0 = time.perf_counter()
                        result = await s.call_tool(
                            "invoke_dynamic", {"id": echoes[n % hosts], "arguments": {"text": f"c{n}"}}
                        )
                        times.append((time.perf_counter() - t0) * 1000)
                        answers[f"c{n}"] = result.content[0].text

            started = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for k in range(sessions):
                    tg.start_soon(worker, k)
            wall = time.perf_counter() - started
        lost = sum(1 for n in range(calls) if answers.get(f"c{n}") != f"c{n}")
        print(
            f"load: {calls} invokes, {sessions} sessions, {hosts} hosts: "
            f"p50 {statistics.median(times):.1f} ms, p95 {pct(times, 0.95):.1f} ms, "
            f"{calls / wall:.0f} calls/s; lost or wrong {lost} (target 0)"
        )
    finally:
        place.close()


async def launches(count: int) -> None:
    place = Place()
    drawing = place.root / "plan.dxf"
    shutil.copy(ROOT / "samples" / "floorplan.dxf", drawing)
    hung, times = 0, []
    try:
        async with place.daemon(**{SEMANTIC_ENV: "on"}) as session:
            for _ in range(count):
                t0 = time.perf_counter()
                with anyio.move_on_after(60) as scope:
                    result = await session.call_tool(
                        "launch_host", {"filePath": str(drawing), "timeoutSeconds": 55}
                    )
                if scope.cancelled_caught or result.is_error:
                    hung += 1
                    continue
                times.append(time.perf_counter() - t0)
                os.kill(result.structured_content["pid"], signal.SIGTERM)
        print(
            f"launch_host x{count} with the semantic layer on: hung or failed {hung} (target 0); "
            f"launch to ready p50 {statistics.median(times):.2f} s, max {max(times):.2f} s"
        )
    finally:
        place.close()


def orphans(count: int) -> None:
    place = Place()
    left = []
    try:
        for _ in range(count):
            daemon = subprocess.Popen(
                [sys.executable, "-m", "cadmcp", "daemon"],
                env=place.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert daemon.stdin is not None and daemon.stdout is not None
            for message in (
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "b", "version": "1"},
                    },
                },
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "launch_host", "arguments": {"hostApp": "Demo"}},
                },
            ):
                daemon.stdin.write(json.dumps(message).encode() + b"\n")
                daemon.stdin.flush()
            pid = None
            while pid is None:
                line = json.loads(daemon.stdout.readline())
                if line.get("id") == 1:
                    pid = line["result"]["structuredContent"]["pid"]
            daemon.kill()
            daemon.wait()
            deadline = time.monotonic() + 10
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if pid_alive(pid):
                left.append(pid)
                os.kill(pid, signal.SIGKILL)
        print(
            f"daemon killed (SIGKILL) after launching a host, x{count}: orphan hosts {len(left)} (target 0)"
        )
    finally:
        place.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for a smoke run)")
    quick = parser.parse_args().quick
    anyio.run(hung_host, 1 if quick else 3)
    anyio.run(big_argument, 3 if quick else 10)
    anyio.run(load, 200 if quick else 1000)
    anyio.run(launches, 5 if quick else 100)
    orphans(5 if quick else 50)


if __name__ == "__main__":
    main()
