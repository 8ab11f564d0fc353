"""Task benchmarks: what tasks cost a quick call, and how fast progress reaches the client.

    ./dev python bench/bench_tasks.py

Figures are printed, never asserted. Baselines:
- quick-call overhead: `invoke_dynamic` of the demo host's `echo` from a client that declares
  the tasks extension against the same call from one that does not (two daemons side by side,
  calls interleaved); target: under 0.3 ms p50.
- progress latency: a script on a real DXF host reports `progress(i/n, <monotonic time>)`; the
  client notes when each notification arrives. Measured direct to the host (the floor), through
  the daemon for a plain call, and as task status notifications on a `subscriptions/listen`
  stream (host -> daemon -> task status -> client).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from fixtures import daemon, find, percentile, start_host
from mcp.client.session import ClientSession

from cadmcp.wire.endpoints import list_endpoints
from cadmcp.wire.sockets import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.tasks.helpers import TASKS, CreatedTask, raw, task_client_kwargs

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "floorplan.dxf"
REPORTS = 40


async def _interleaved(a: Any, b: Any, rounds: int) -> tuple[list[float], list[float]]:
    """Time `a()` and `b()` alternately (each first half the time), in ms."""
    times_a, times_b = [], []
    for _ in range(30):
        await a()
        await b()
    for n in range(rounds):
        order = ((a, times_a), (b, times_b)) if n % 2 else ((b, times_b), (a, times_a))
        for call, times in order:
            t0 = time.perf_counter()
            await call()
            times.append((time.perf_counter() - t0) * 1000)
    return times_a, times_b


def _report(what: str, without: list[float], with_tasks: list[float], target: bool) -> None:
    p50_without, p50_with = statistics.median(without), statistics.median(with_tasks)
    delta = p50_with - p50_without
    verdict = f" (target < 300 us: {'met' if delta < 0.3 else 'missed'})" if target else ""
    print(
        f"{what}: without tasks p50 {p50_without:.2f} ms p95 {percentile(without, 0.95):.2f} ms; "
        f"declaring tasks p50 {p50_with:.2f} ms p95 {percentile(with_tasks, 0.95):.2f} ms; "
        f"overhead p50 {delta * 1000:+.0f} us{verdict}"
    )


async def bench_quick_call_overhead(runtime: Path, rounds: int = 400) -> None:
    # The same raw client on both sides (no result parsing), differing only in the declaration:
    # what the daemon adds for a task-capable client.
    async with daemon(runtime) as plain, daemon(runtime, extensions={TASKS: {}}) as declaring:
        echo = await find(plain, "echo")
        params = {"name": "invoke_dynamic", "arguments": {"id": echo["id"], "arguments": {"text": "hello"}}}
        without, with_tasks = await _interleaved(
            lambda: raw(plain, "tools/call", params), lambda: raw(declaring, "tools/call", params), rounds
        )
    _report(
        f"quick invoke_dynamic(echo), raw client, {rounds} interleaved calls each", without, with_tasks, True
    )

    # What an SDK client sees end to end (its task claim adds result parsing on the client side).
    async with daemon(runtime) as plain, daemon(runtime, **task_client_kwargs()) as tasked:
        args = {"id": echo["id"], "arguments": {"text": "hello"}}

        async def call_plain() -> None:
            await plain.call_tool("invoke_dynamic", args)

        async def call_tasked() -> None:
            assert isinstance(
                await tasked.call_tool("invoke_dynamic", args, allow_claimed=True), types.CallToolResult
            )

        without, with_tasks = await _interleaved(call_plain, call_tasked, rounds // 2)
    _report(
        f"the same through SDK clients (claim parsing included), {rounds // 2} calls each",
        without,
        with_tasks,
        False,
    )


def progress_script(pause: float) -> str:
    return (
        "import time\n"
        f"for i in range({REPORTS}):\n"
        f"    progress(i / {REPORTS}, repr(time.monotonic()))\n"
        f"    time.sleep({pause})\n"
        "'done'"
    )


def collector(delays: list[float]) -> Any:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message:
            delays.append((time.monotonic() - float(message)) * 1000)

    return on_progress


async def bench_progress_latency(runtime: Path) -> None:
    (endpoint,) = [ep for ep in list_endpoints(runtime) if ep.host_app == "DXF"]
    direct: list[float] = []
    async with connect(endpoint.path) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        await session.call_tool(
            "execute_python_code", {"code": progress_script(0.05)}, progress_callback=collector(direct)
        )

    through: list[float] = []
    async with daemon(runtime) as session:
        script = await find(session, "execute_python_code")
        args = {"id": script["id"], "arguments": {"code": progress_script(0.05)}}
        await session.call_tool("invoke_dynamic", args, progress_callback=collector(through))

    listened: list[float] = []

    async def on_status(params: Any) -> None:
        message = params.status_message or ""
        if "%: " in message:
            listened.append((time.monotonic() - float(message.split("%: ", 1)[1])) * 1000)

    async with daemon(runtime, {"CADMCP_TASK_AFTER": "0"}, **task_client_kwargs(on_status)) as session:
        script = await find(session, "execute_python_code")
        args = {"id": script["id"], "arguments": {"code": progress_script(0.05)}}
        handle = await session.call_tool("invoke_dynamic", args, allow_claimed=True)
        assert isinstance(handle, CreatedTask)
        listen = types.SubscriptionsListenRequest(
            params=types.SubscriptionsListenRequestParams(
                notifications=types.SubscriptionFilter(taskIds=[handle.task_id])
            )
        )
        await session.send_request(listen, types.SubscriptionsListenResult)

    for name, delays in (
        ("direct to the host (floor)", direct),
        ("through the daemon, plain call", through),
        ("task status on a listen stream", listened),
    ):
        if delays:
            print(
                f"progress -> client, {name}: {len(delays)} notifications, "
                f"p50 {statistics.median(delays):.2f} ms, p95 {percentile(delays, 0.95):.2f} ms"
            )
    if direct and through:
        extra = statistics.median(through) - statistics.median(direct)
        print(f"progress forwarding adds {extra:.2f} ms p50 over the direct path")


async def main() -> None:
    runtime = Path(tempfile.mkdtemp(prefix="cmt"))
    os.chmod(runtime, 0o700)
    drawing = runtime / "plan.dxf"
    shutil.copy(SAMPLE, drawing)
    hosts = [start_host(runtime, "demo"), start_host(runtime, "dxf", str(drawing))]
    try:
        print("(shared 2-core machine: figures are noisy; compare within a run)")
        await bench_quick_call_overhead(runtime)
        await bench_progress_latency(runtime)
    finally:
        for host in hosts:
            host.terminate()
        for host in hosts:
            host.wait()
        shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    anyio.run(main)
