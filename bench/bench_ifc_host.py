"""IFC host timings on the sample house and a generated 2,000-wall model, printed beside their targets.

    python bench/bench_ifc_host.py [--walls 2000] [--repeat 5] [--runs 3]

Figures: `cadmcp host ifc` process start to ready (bench_host_startup.py), import + create_server
in a fresh process, ifc://model/context warm read, screenshot at 1280 px (cold = tessellation
included, warm = cached), the warm-up `cadmcp host ifc` runs once ready and the first screenshot
after it, one undo and one redo of a wall edit, schema validation (ifc://model/warnings, cold).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cadmcp import __version__
from cadmcp.host.builtins import navigate
from cadmcp.host.builtins.scripts import run_script
from cadmcp.hosts.ifc.adapter import IfcAdapter
from cadmcp.hosts.ifc.modelgen import build_wall_grid

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "house.ifc"

STARTUP = """
import time
t0 = time.perf_counter()
import mcp
t1 = time.perf_counter()
from cadmcp.hosts.ifc import create_server
t2 = time.perf_counter()
server = create_server([{path!r}])
t3 = time.perf_counter()
server.adapter.context()
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3)
"""

EDIT = """
w = model.by_type("IfcWall")[0]
w.Name = "Bench " + str(len(w.Name or ""))
m = util.placement.get_local_placement(w.ObjectPlacement)
api.geometry.edit_object_placement(model, product=w, matrix=m)
"""


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def row(label: str, seconds: float, target: str) -> None:
    print(f"  {label:<44} {seconds * 1000:>9.1f} ms   target {target}")


WARM_UP = """
import time
from cadmcp.hosts.ifc import create_server
server = create_server([{path!r}])
jobs, steps = [], server.warm_up()
while True:
    t = time.perf_counter()
    if next(steps, None) is None:
        break
    jobs.append(time.perf_counter() - t)
t = time.perf_counter()
server.adapter.screenshot(1280, None, {{}})
print(len(jobs), sum(jobs), max(jobs), time.perf_counter() - t)
"""


def warm_up_figures(path: Path) -> None:
    """What `cadmcp host ifc` does once ready, in a fresh process: the warm-up's jobs, then the first
    screenshot."""
    out = subprocess.run(
        [sys.executable, "-c", WARM_UP.format(path=str(path))], capture_output=True, text=True, check=True
    ).stdout.split()
    jobs, total, longest, first_shot = int(out[-4]), *(float(v) for v in out[-3:])
    row(f"warm-up in a fresh process, {jobs} app-thread jobs", total, "off the ready path")
    row("  longest warm-up job (a call waits at most this)", longest, "")
    row("first screenshot 1280 px after warm-up", first_shot, "<= 1000 ms on the sample")


def bench(name: str, path: Path, repeat: int) -> None:
    print(f"\n{name}: {path.name} ({path.stat().st_size / 1e6:.2f} MB)")
    out = subprocess.run(
        [sys.executable, "-c", STARTUP.format(path=str(path))], capture_output=True, text=True, check=True
    ).stdout.split()
    import_mcp, import_host, create, first_use = (float(v) for v in out[-4:])
    row("import mcp (fresh process)", import_mcp, "(SDK cost, ~1 s)")
    row("import cadmcp.hosts.ifc", import_host, "cheap")
    row("create_server (paths checked, loading deferred)", create, "")
    row("  host ready = sum", import_mcp + import_host + create, "<= 1500 ms (before process spawn/socket)")
    row("first call: import ifcopenshell + parse + context", first_use, "")

    host = IfcAdapter(exec_timeout=600)
    start = time.perf_counter()
    host.workspace.open(str(path))
    row("open document (in a warm process)", time.perf_counter() - start, "")
    host.context()
    row("ifc://model/context warm read", timed(host.context, repeat * 4), "<= 50 ms")

    start = time.perf_counter()
    host.screenshot(1280, None, {})
    row("screenshot 1280 px, cold (tessellation)", time.perf_counter() - start, "<= 1000 ms on the sample")
    warm_up_figures(path)
    row(
        "screenshot 1280 px, warm",
        timed(lambda: host.screenshot(1280, None, {}), repeat),
        "<= 1000 ms on the sample",
    )
    row(
        "plan screenshot 1280 px, lowest storey",
        timed(lambda: host.screenshot(1280, None, {"view": "plan"}), repeat),
        "",
    )

    start = time.perf_counter()
    result = run_script(host, EDIT, "bench edit")
    assert not result.is_error, result.text()
    row("execute_python_code (rename + move a wall)", time.perf_counter() - start, "")

    def undo_redo() -> None:
        navigate(host.history(), "back", 1)
        navigate(host.history(), "forward", 1)

    row("undo + redo of that step", timed(undo_redo, repeat), "")
    row(
        "screenshot after the edit (1 element re-tessellated)",
        timed(lambda: host.screenshot(1280, None, {}), 1),
        "",
    )

    start = time.perf_counter()
    host.warnings()
    row("ifc://model/warnings cold (schema validation)", time.perf_counter() - start, "cached per revision")
    row("ifc://model/warnings warm", timed(host.warnings, repeat), "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walls", type=int, default=2000, help="walls in the generated model (0: skip it)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="host processes for start-to-ready (0: skip)")
    args = parser.parse_args()
    if args.runs:
        from bench_host_startup import print_process_figures

        print_process_figures("ifc", SAMPLE, args.runs)
    bench("sample house", SAMPLE, args.repeat)
    if args.walls:
        # Generated once per version and size, kept in the system temp folder (never committed).
        cache = Path(tempfile.gettempdir()) / "cadmcp-bench" / f"ifc_grid_{args.walls}_{__version__}.ifc"
        if not cache.exists():
            cache.parent.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            build_wall_grid(args.walls).write(str(cache))
            print(f"\n(generated {args.walls} walls in {time.perf_counter() - start:.1f} s: {cache.name})")
        bench(f"{args.walls}-wall model", cache, args.repeat)


if __name__ == "__main__":
    main()
