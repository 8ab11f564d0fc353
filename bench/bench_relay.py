"""What a second process on a call's way costs at the least: the floor under the proxy's hop.

    ./dev python bench/bench_relay.py

mcp-server-time is called by SDK clients four ways, interleaved in batches: directly over stdio;
through a bare line relay written in plain asyncio (a Unix socket to the server's stdio: each
line parsed, its id swapped, written again; nothing else); through the same relay written with
anyio tasks and streams, as cadmcp's processes are; and through cadmcp's own proxy for the
server (`cadmcp host Time`, its fast lane). Each hop is the p50 over the direct call. The relays
are measuring instruments, not cadmcp code: they have no supervision, questions, progress,
cancellation, logs or bounds. Figures are printed, never asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cadmcp.applications import CONFIG_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints
from cadmcp.wire.sockets import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.foreign.servers import python_command

ROUNDS, BATCH = 10, 50

ASYNCIO_RELAY = r"""
import asyncio, itertools, json, sys
async def main(path, command, args):
    server = await asyncio.create_subprocess_exec(command, *args, stdin=-1, stdout=-1)
    waiting, ids = {}, itertools.count(1)
    async def answers():
        while line := await server.stdout.readline():
            message = json.loads(line)
            writer, rid = waiting.pop(message.get("id"), (None, None))
            if writer is not None:
                message["id"] = rid
                writer.write(json.dumps(message).encode() + b"\n")
    async def client(reader, writer):
        while line := await reader.readline():
            message = json.loads(line)
            if "id" in message and "method" in message:
                own = f"r{next(ids)}"
                waiting[own] = (writer, message["id"])
                message["id"] = own
            server.stdin.write(json.dumps(message).encode() + b"\n")
    asyncio.ensure_future(answers())
    await (await asyncio.start_unix_server(client, path)).serve_forever()
asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
"""

ANYIO_RELAY = r"""
import itertools, json, sys, anyio
from anyio.streams.buffered import BufferedByteReceiveStream
async def main(path, command, args):
    server = await anyio.open_process([command, *args])
    waiting, ids, lock = {}, itertools.count(1), anyio.Lock()
    async def answers():
        lines = BufferedByteReceiveStream(server.stdout)
        while True:
            message = json.loads(await lines.receive_until(b"\n", 1 << 26))
            send = waiting.pop(message.get("id"), None)
            if send is not None:
                send.send_nowait(message)
    async def handle(stream):
        out_send, out_recv = anyio.create_memory_object_stream(16)
        async def writer():
            async for data in out_recv:
                await stream.send(data + b"\n")
        async def call(message):
            rid, own = message["id"], f"r{next(ids)}"
            send, recv = anyio.create_memory_object_stream(1)
            waiting[own] = send
            message["id"] = own
            async with lock:
                await server.stdin.send(json.dumps(message).encode() + b"\n")
            answer = await recv.receive()
            answer["id"] = rid
            await out_send.send(json.dumps(answer).encode())
        lines = BufferedByteReceiveStream(stream)
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            while True:
                try:
                    message = json.loads(await lines.receive_until(b"\n", 1 << 24))
                except (anyio.IncompleteRead, anyio.EndOfStream):  # the client went away
                    tg.cancel_scope.cancel()
                    break
                if "id" in message and "method" in message:
                    tg.start_soon(call, message)
                else:
                    async with lock:
                        await server.stdin.send(json.dumps(message).encode() + b"\n")
    async with anyio.create_task_group() as tg:
        tg.start_soon(answers)
        await (await anyio.create_unix_listener(path)).serve(handle)
anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
"""


async def _wait_for(path: Path) -> None:
    with anyio.fail_after(60):
        while not path.exists():
            await anyio.sleep(0.05)


async def measure(work: Path, env: dict[str, str]) -> dict[str, list[float]]:
    command, args = python_command("mcp_server_time", "--local-timezone", "UTC")
    relays = {name: work / f"{name}.sock" for name in ("asyncio", "anyio")}
    started = [
        subprocess.Popen([sys.executable, "-c", code, str(relays[name]), command, *args])
        for name, code in (("asyncio", ASYNCIO_RELAY), ("anyio", ANYIO_RELAY))
    ]
    runtime = Path(env[RUNTIME_DIR_ENV])
    try:
        for path in relays.values():
            await _wait_for(path)
        with anyio.fail_after(120):
            while not any(ep.host_app == "Time" for ep in list_endpoints(runtime)):
                await anyio.sleep(0.1)
        proxy = next(ep.path for ep in list_endpoints(runtime) if ep.host_app == "Time")
        async with (
            stdio_client(StdioServerParameters(command=command, args=args)) as (r1, w1),
            ClientSession(r1, w1) as direct,
            connect(relays["asyncio"]) as (r2, w2),
            ClientSession(r2, w2) as bare,
            connect(relays["anyio"]) as (r3, w3),
            ClientSession(r3, w3) as tasks,
            connect(proxy) as (r4, w4),
            ClientSession(r4, w4) as cadmcp,
        ):
            sessions = {
                "direct": direct,
                "asyncio relay": bare,
                "anyio relay": tasks,
                "cadmcp proxy": cadmcp,
            }
            for session in sessions.values():
                await session.discover()
            calls: dict[str, Callable[[], Awaitable[Any]]] = {
                name: (lambda s=s: s.call_tool("get_current_time", {"timezone": "UTC"}))
                for name, s in sessions.items()
            }
            for name, call in calls.items():
                for _ in range(20):
                    result = await call()
                assert not result.is_error, f"{name}: {result}"
            times: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(ROUNDS):
                for name, call in calls.items():
                    for _ in range(BATCH):
                        t0 = time.perf_counter()
                        await call()
                        times[name].append((time.perf_counter() - t0) * 1000)
            return times
    finally:
        for proc in started:
            proc.terminate()
            proc.wait(10)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="cmr"))
    runtime = work / "run"
    runtime.mkdir(mode=0o700)
    command, args = python_command("mcp_server_time", "--local-timezone", "UTC")
    config = work / "hosts.json"
    config.write_text(json.dumps({"hosts": {"Time": {"server": {"command": command, "args": args}}}}))
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime), CONFIG_ENV: str(config)}
    proxy = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", "Time"], env=env, stderr=subprocess.DEVNULL
    )
    load = os.getloadavg()[0]
    try:
        times = anyio.run(measure, work, env)
    finally:
        proxy.terminate()
        proxy.wait(10)
    p50 = {name: statistics.median(t) for name, t in times.items()}
    hops = {name: p50[name] - p50["direct"] for name in p50 if name != "direct"}
    print(
        f"get_current_time, 2026-07-28 clients, {ROUNDS} interleaved batches of {BATCH}: p50 "
        + ", ".join(f"{name} {v:.2f} ms" for name, v in p50.items())
    )
    floor = max(hops["asyncio relay"], 1e-3)
    print(
        "  the hop over the direct call: "
        + ", ".join(f"{name} {hop:.2f} ms" for name, hop in hops.items())
        + f"; cadmcp's proxy / the asyncio floor {hops['cadmcp proxy'] / floor:.1f}x"
    )
    end = os.getloadavg()[0]
    print(f"load average (1 min): {load:.1f} at start, {end:.1f} at end, on {os.cpu_count()} cpus")


if __name__ == "__main__":
    main()
