"""Host start to ready as a user sees it: spawn `python -m cadmcp host KIND FILE`, time until its
endpoint accepts a connection and answers `tools/list`, then the first useful answers.

    python bench/bench_host_startup.py [--runs 5] [--kind dxf --kind ifc --kind demo]

Every run is a fresh process with a private CADMCP_RUNTIME_DIR, reached through an MCP SDK
`ClientSession` over `cadmcp.wire.sockets.connect` (what the daemon does). Figures (p50 and
min over the runs, beside the 1.5 s target and the peers' 2.3-4.2 s start):

- ready: spawn -> socket accepts -> initialize -> tools/list answered;
- context: ready -> `<app>://model/context` read (the first thing an agent reads);
- screenshot now: context read -> `view_screenshot` at 1280 px, asked at once (it queues behind
  whatever warm-up job is running);
- IFC only: the first screenshot once the warm-up has finished (the host logs
  "warm-up ... done in N ms" with -v), and cold with CADMCP_WARM_UP=0 (no warm-up at all).

Nothing is asserted. `start_to_ready()` is reused by bench_dxf_host.py and bench_ifc_host.py.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession

from cadmcp.wire.sockets import connect

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = {"dxf": ROOT / "samples" / "floorplan.dxf", "ifc": ROOT / "samples" / "house.ifc", "demo": None}
CONTEXT_URI = {
    "dxf": "dxf://model/context",
    "ifc": "ifc://model/context",
    "demo": "demo://status",
    "freecad": "freecad://model/context",
}
TARGET_S = 1.5
PEERS = "peers 2.3-4.2 s"
WARM_DONE = re.compile(r"warm-up \S+ done in (\d+) ms")


@dataclass
class Run:
    """One host process from spawn to the last timed answer (seconds from spawn unless noted)."""

    ready: float
    context: float | None = None
    """Seconds from ready to the context read answered."""
    screenshot: float | None = None
    """Seconds for the first view_screenshot (asked right after the context read, or after warm-up)."""
    warm_up_ms: float | None = None
    """The host's own figure for its warm-up (from its log), when it ran one."""
    stderr: list[str] = field(default_factory=list)


def _reader(stream: Any, lines: list[str], warm_done: threading.Event) -> None:
    for line in stream:
        lines.append(line)
        if WARM_DONE.search(line):
            warm_done.set()


async def _endpoint(endpoint_dir: Path, proc: subprocess.Popen[str], deadline: float) -> Path:
    """Poll until the host's socket file `cadmcp_*_{PID}.sock` appears."""
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"host exited with {proc.returncode}: {proc.args}")
        sockets = list(endpoint_dir.glob(f"*_{proc.pid}.sock"))
        if sockets:
            return sockets[0]
        await anyio.sleep(0.002)
    raise TimeoutError("no endpoint appeared")


async def _one_run(
    kind: str,
    file: Path | None,
    *,
    context: bool,
    screenshot: str | None,
    warm_up: bool = True,
    timeout: float = 60.0,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Run:
    """Spawn one host; `screenshot` is None, "now" (right after ready/context) or "after-warm-up".

    `args` go after the host kind (e.g. `--gui`); `env` adds to the environment (DISPLAY, HOME).
    """
    with tempfile.TemporaryDirectory(prefix="cadmcp-bench-") as tmp:
        runtime_dir = Path(tmp) / "run"
        runtime_dir.mkdir(mode=0o700)
        extra_env = env or {}
        env = {**os.environ, **extra_env, "CADMCP_RUNTIME_DIR": str(runtime_dir)}
        if not warm_up:
            env["CADMCP_WARM_UP"] = "0"
        argv = [sys.executable, "-m", "cadmcp", "-v", "host", kind, *args, *([str(file)] if file else [])]
        lines: list[str] = []
        warm_done = threading.Event()
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=_reader, args=(proc.stderr, lines, warm_done), daemon=True)
        reader.start()
        try:
            deadline = start + timeout
            endpoint = await _endpoint(runtime_dir, proc, deadline)
            while True:  # the socket file exists once bound; connect until it answers
                try:
                    async with (
                        connect(endpoint, timeout=timeout) as (read, write),
                        ClientSession(read, write) as session,
                    ):
                        await session.initialize()
                        await session.list_tools()
                        run = Run(ready=time.perf_counter() - start, stderr=lines)
                        if context:
                            t0 = time.perf_counter()
                            await session.read_resource(CONTEXT_URI[kind])
                            run.context = time.perf_counter() - t0
                        if screenshot == "after-warm-up":
                            with anyio.fail_after(timeout):
                                while not warm_done.is_set():
                                    await anyio.sleep(0.01)
                        if screenshot:
                            t0 = time.perf_counter()
                            result = await session.call_tool("view_screenshot", {"width": 1280})
                            run.screenshot = time.perf_counter() - t0
                            if result.is_error:
                                raise RuntimeError(f"screenshot failed: {result.content}")
                        break
                except OSError:
                    if time.perf_counter() > deadline:
                        raise
                    await anyio.sleep(0.002)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            reader.join(timeout=5)
        for line in lines:
            if match := WARM_DONE.search(line):
                run.warm_up_ms = float(match.group(1))
        return run


def start_to_ready(kind: str, file: Path | None = None, runs: int = 5, **options: Any) -> list[Run]:
    """Spawn `cadmcp host KIND [FILE]` `runs` times (one after another); one `Run` each."""
    options = {"context": False, "screenshot": None} | options
    return [anyio.run(lambda: _one_run(kind, file, **options)) for _ in range(runs)]


def p50_min(values: Sequence[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:7.0f} ms   min {min(values) * 1000:7.0f} ms"


def print_ready(label: str, runs: Sequence[Run]) -> None:
    print(f"  {label:<46} {p50_min([r.ready for r in runs])}   target {TARGET_S:.1f} s, {PEERS}")


def print_process_figures(kind: str, file: Path | None, runs: int) -> None:
    """Start-to-ready and first useful answer of `cadmcp host KIND FILE` processes (other benches)."""
    print(f"`cadmcp host {kind}` process, {runs} runs (bench_host_startup.py)")
    if note := bytecode_note():
        print(f"  {note}")
    shot = "after-warm-up" if kind == "ifc" else None
    results = start_to_ready(kind, file, runs, context=True, screenshot=shot)
    print_ready("spawn -> socket -> initialize + tools/list", results)
    label = f"  spawn -> {CONTEXT_URI[kind]} answered"
    print(f"  {label:<46} {p50_min([r.ready + (r.context or 0) for r in results])}")
    if shot:
        shots = [r.screenshot for r in results if r.screenshot is not None]
        print(f"  {'first screenshot 1280 px after warm-up':<46} {p50_min(shots)}   target <= 1 s")


def bytecode_note() -> str | None:
    """Say so when imports compile from source on every start (no .pyc written or shipped)."""
    import numpy

    cached = any(Path(numpy.__file__).parent.glob("ma/__pycache__/*.pyc"))
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not cached:
        return (
            "note: PYTHONDONTWRITEBYTECODE is set and parts of site-packages have no .pyc: those imports "
            "compile from source on every start (a normal pip install writes .pyc files)"
        )
    return None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per figure (default 5)")
    parser.add_argument(
        "--kind", action="append", choices=sorted(SAMPLES), help="hosts to time (default all)"
    )
    args = parser.parse_args(argv)
    kinds = args.kind or ["dxf", "ifc", "demo"]
    print(f"host start to ready, {args.runs} runs each, Python {sys.version.split()[0]}")
    if note := bytecode_note():
        print(note)
    for kind in kinds:
        file = SAMPLES[kind]
        print(f"\n{kind}: {file.relative_to(ROOT) if file else '(no document)'}")
        shot = None if kind == "demo" else "now"
        runs = start_to_ready(kind, file, args.runs, context=True, screenshot=shot)
        print_ready("spawn -> socket -> initialize + tools/list", runs)
        contexts = [r.context for r in runs if r.context is not None]
        print(f"  {'then ' + CONTEXT_URI[kind] + ' read':<46} {p50_min(contexts)}")
        print(
            f"  {'  spawn -> first useful answer':<46} {p50_min([r.ready + (r.context or 0) for r in runs])}"
        )
        if shot:
            label = "then screenshot 1280 px at once"
            print(f"  {label:<46} {p50_min([r.screenshot for r in runs if r.screenshot is not None])}")
        warm = [r.warm_up_ms for r in runs if r.warm_up_ms is not None]
        if kind != "ifc":
            continue
        if warm:
            print(f"  {'warm-up on the app thread (host log)':<46} p50 {statistics.median(warm):7.0f} ms")
        after = start_to_ready(kind, file, args.runs, screenshot="after-warm-up")
        label = "first screenshot 1280 px after warm-up"
        shots = [r.screenshot for r in after if r.screenshot is not None]
        print(f"  {label:<46} {p50_min(shots)}   target <= 1 s")
        cold = start_to_ready(kind, file, args.runs, context=True, screenshot="now", warm_up=False)
        print_ready("ready without warm-up (CADMCP_WARM_UP=0)", cold)
        label = "first screenshot 1280 px, cold (no warm-up)"
        print(f"  {label:<46} {p50_min([r.screenshot for r in cold if r.screenshot is not None])}")


if __name__ == "__main__":
    main()
