"""Launch to ready and the first answers after it, through a real daemon, per application.

    python bench/bench_launch.py [--runs 3] [--file PATH ...] [--no-warm-up] [--kind ifc --kind dxf]

For each file, every run starts a fresh `cadmcp daemon` (stdio, MCP SDK client) and times:

- launch: `launch_host(filePath)` called -> answered with `phase: ready` (the host process started,
  connected, and the document opened);
- context: then the first `<app>://model/context` read;
- screenshot: then the first `view_screenshot` at 1280 px (the target: <= 2 s after ready on a
  5 MB IFC), with whether it was complete or said what it left out, and how many of the
  elements (IFC) or entities (DXF) in the view it drew;
- full view: when the first one was incomplete, ready -> the first complete screenshot (asked
  again every 0.5 s while the warm-up prepares the rest).

Without --file the largest generated file per application is used: an IFC office of about 5 MB
(`modelgen.build_office(4, 80)`, doors and windows in openings; generated once, about 2 min, and
kept in the temp folder), a DXF drawing of 40,000 entities (`samples/make_dxf_sample.py
build_large`) and the FreeCAD sample (skipped without FreeCAD). Nothing is asserted; the machine
is shared, so figures are noisy: compare ratios, and rerun.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = {".ifc": "ifc", ".dxf": "dxf", ".fcstd": "freecad"}
INCOMPLETE = "[INCOMPLETE VIEW]"


@dataclass
class Run:
    launch: float
    context: float
    screenshot: float
    complete: bool
    full_view: float | None
    note: str = ""
    drawn: int = 0
    of: int = 0


def office_ifc() -> Path:
    """The ~5 MB IFC office (generated once into the temp folder)."""
    path = Path(tempfile.gettempdir()) / "cadmcp-bench-office-4x80.ifc"
    if not path.exists():
        from cadmcp.hosts.ifc.modelgen import build_office

        started = time.perf_counter()
        partial = path.with_suffix(".part")
        build_office(4, 80).write(str(partial))
        partial.replace(path)
        size, spent = path.stat().st_size / 1e6, time.perf_counter() - started
        print(f"(generated {path.name}, {size:.1f} MB, in {spent:.0f} s)")
    return path


def large_dxf(count: int = 40_000) -> Path:
    path = Path(tempfile.gettempdir()) / f"cadmcp-bench-drawing-{count}.dxf"
    if not path.exists():
        spec = importlib.util.spec_from_file_location(
            "make_dxf_sample", ROOT / "samples" / "make_dxf_sample.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.build_large(count).saveas(path)
    return path


def default_files(kinds: list[str]) -> list[Path]:
    files = []
    if "ifc" in kinds:
        files.append(office_ifc())
    if "dxf" in kinds:
        files.append(large_dxf())
    if "freecad" in kinds:
        if shutil.which("freecadcmd") or os.environ.get("CADMCP_FREECAD"):
            files.append(ROOT / "samples" / "bracket.FCStd")
        else:
            print("freecad: skipped (no freecadcmd on PATH, CADMCP_FREECAD not set)")
    return files


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")


async def _target(session: ClientSession, host: str, query: str, target: str) -> str:
    found = await session.call_tool("search_dynamic", {"query": query, "hostInstanceId": host, "limit": 32})
    for item in (found.structured_content or {}).get("items", []):
        if item["target"] == target:
            return str(item["id"])
    raise RuntimeError(f"{target} not found on {host}")


async def one_run(path: Path, env: dict[str, str]) -> Run:
    scheme = SCHEMES[path.suffix.lower()]
    params = StdioServerParameters(command=sys.executable, args=["-m", "cadmcp", "daemon"], env=env)
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.discover()
            started = time.perf_counter()
            answer = await session.call_tool("launch_host", {"filePath": str(path), "timeoutSeconds": 600})
            ready = time.perf_counter()
            body = answer.structured_content or {}
            if answer.is_error or body.get("phase") != "ready":
                raise RuntimeError(f"{path.name} did not launch ready: {_text(answer)[:300]}")
            host = body["hostInstanceId"]
            context_id = await _target(session, host, "model context", f"{scheme}://model/context")
            shot_id = await _target(session, host, "screenshot", "view_screenshot")
            t0 = time.perf_counter()
            read_context = await session.call_tool("invoke_dynamic", {"id": context_id})
            context = time.perf_counter() - t0
            if read_context.is_error:
                raise RuntimeError(_text(read_context)[:300])
            t0 = time.perf_counter()
            shot = await session.call_tool("invoke_dynamic", {"id": shot_id, "arguments": {"width": 1280}})
            screenshot = time.perf_counter() - t0
            if shot.is_error:
                raise RuntimeError(_text(shot)[:300])
            note = _text(shot)
            complete = INCOMPLETE not in note
            view = shot.structured_content or {}
            counts = view.get("elements") or view.get("entities") or {}
            drawn = int(counts.get("drawn", 0))
            of = drawn + int(view.get("notPreparedYet", 0))
            full_view = 0.0 if complete else None
            while full_view is None and time.perf_counter() - ready < 300:
                await anyio.sleep(0.5)
                again = await session.call_tool(
                    "invoke_dynamic", {"id": shot_id, "arguments": {"width": 1280}}
                )
                if INCOMPLETE not in _text(again):
                    full_view = time.perf_counter() - ready
            return Run(
                ready - started,
                context,
                screenshot,
                complete,
                full_view,
                note.splitlines()[0][:160] if note else "",
                drawn,
                of,
            )


def p50(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:7.0f} ms  min {min(values) * 1000:7.0f} ms"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--file", action="append", type=Path, help="a file of your own (repeatable)")
    parser.add_argument("--kind", action="append", choices=["ifc", "dxf", "freecad"])
    parser.add_argument("--no-warm-up", action="store_true", help="CADMCP_WARM_UP=0 in the hosts")
    args = parser.parse_args(argv)
    files = args.file or default_files(args.kind or ["ifc", "dxf", "freecad"])
    print(f"launch to ready and first answers, {args.runs} runs each, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="cadmcp-bench-") as tmp:
        runtime = Path(tmp) / "run"
        runtime.mkdir(mode=0o700)
        env = {
            **os.environ,
            "CADMCP_RUNTIME_DIR": str(runtime),
            "CADMCP_LOG_DIR": str(Path(tmp) / "logs"),
            "CADMCP_HOSTS_CONFIG": str(Path(tmp) / "hosts.json"),
        }
        Path(env["CADMCP_HOSTS_CONFIG"]).write_text('{"hosts": {}}')
        if args.no_warm_up:
            env["CADMCP_WARM_UP"] = "0"
        for path in files:
            size = path.stat().st_size / 1e6
            print(f"\n{path.name} ({size:.1f} MB){' without warm-up' if args.no_warm_up else ''}")
            try:
                runs = [anyio.run(one_run, path, env) for _ in range(args.runs)]
            except Exception as exc:
                print(f"  failed: {exc}")
                continue
            print(f"  {'launch_host -> phase ready':<40} {p50([r.launch for r in runs])}")
            print(f"  {'then model/context':<40} {p50([r.context for r in runs])}")
            print(
                f"  {'then view_screenshot 1280 px':<40} {p50([r.screenshot for r in runs])}   target <= 2 s"
            )
            complete = sum(r.complete for r in runs)
            print(f"  {'  complete at once':<40} {complete} of {len(runs)}")
            shown = ", ".join(f"{r.drawn}/{r.of}" for r in runs)
            print(f"  {'  elements drawn / in view':<40} {shown}")
            partial = [r for r in runs if not r.complete]
            if partial:
                print(f"  {'  its note':<40} {partial[0].note}")
                full = [r.full_view for r in partial if r.full_view is not None]
                if full:
                    print(f"  {'ready -> first complete screenshot':<40} {p50(full)}")


if __name__ == "__main__":
    main()
