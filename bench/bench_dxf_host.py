"""Benchmark the DXF host: start-up, model context, screenshots, undo/redo. Prints figures, asserts nothing.

python bench/bench_dxf_host.py            # sample, 10k and 100k entities
python bench/bench_dxf_host.py --quick    # sample and 10k only
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "floorplan.dxf"


def _load_sample_builder() -> Any:
    spec = importlib.util.spec_from_file_location("make_dxf_sample", ROOT / "samples" / "make_dxf_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Median wall time in seconds over ``repeat`` runs, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def report(label: str, seconds: float, target: float | None = None) -> None:
    goal = f"target ≤ {target * 1000:.0f} ms" if target is not None else "no target"
    verdict = "" if target is None else ("  ok" if seconds <= target else "  OVER")
    print(f"  {label:<44} {seconds * 1000:>9.1f} ms   ({goal}){verdict}")


def bench_startup() -> None:
    print("start-up (fresh interpreter, sample drawing)")
    code = (
        "import time; t = time.perf_counter()\n"
        "import cadmcp.hosts.dxf as h\n"
        "t1 = time.perf_counter()\n"
        f"h.create_server([{str(SAMPLE)!r}])\n"
        "t2 = time.perf_counter()\n"
        "print(t1 - t, t2 - t1)\n"
    )
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        runs.append(tuple(float(v) for v in out.split()))
    imp = statistics.median(r[0] for r in runs)
    create = statistics.median(r[1] for r in runs)
    report("import cadmcp.hosts.dxf", imp, 0.05)
    report("create_server (imports mcp + ezdxf, opens)", create)
    report("import + create_server", imp + create, 1.5)
    from bench_host_startup import print_process_figures

    print_process_figures("dxf", SAMPLE, 3)


def bench_document(label: str, doc: Any, *, context_target: float | None, shot_target: float | None) -> None:
    from cadmcp.hosts.dxf.context import model_context
    from cadmcp.hosts.dxf.documents import DxfDocument
    from cadmcp.hosts.dxf.execution import execute
    from cadmcp.hosts.dxf.screenshot import render_png

    entry = DxfDocument(doc, None, label)
    count = len(doc.modelspace())
    print(f"{label} ({count} modelspace entities)")
    model_context(entry)
    seconds, _ = timed(lambda: json.dumps(model_context(entry)))
    report("dxf://model/context warm read", seconds, context_target)

    seconds, _ = timed(lambda: render_png(doc, width=1280), repeat=1 if count > 20_000 else 3)
    report("view_screenshot 1280 px", seconds, shot_target)

    seconds, result = timed(lambda: execute(entry, "pass", None, 600), repeat=3)
    report("execute_python_code 'pass' (tracking overhead)", seconds, None)
    code = "msp.add_line((0, 0), (1000, 1000))\nlist(msp)[10].dxf.layer = 'A-FURN'"
    seconds, result = timed(lambda: execute(entry, code, "edit", 600), repeat=1)
    assert not result.is_error, result.text()
    report("execute one edit (pre/post scan + run)", seconds, None)
    seconds, _ = timed(lambda: entry.history.navigate("back"), repeat=1)
    report("undo one edit", seconds, 1.0)
    seconds, _ = timed(lambda: entry.history.navigate("forward"), repeat=1)
    report("redo one edit", seconds, 1.0)
    bulk = "for e in msp.query('LINE')[:1000]:\n    e.translate(1, 0, 0)"
    seconds, result = timed(lambda: execute(entry, bulk, "bulk", 600), repeat=1)
    report("execute: move 1000 lines", seconds, None)
    seconds, _ = timed(lambda: entry.history.navigate("back"), repeat=1)
    report("undo: move 1000 lines", seconds, 1.0)


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    bench_startup()
    import ezdxf

    builder = _load_sample_builder()
    bench_document("sample floorplan.dxf", ezdxf.readfile(SAMPLE), context_target=0.05, shot_target=0.3)
    started = time.perf_counter()
    doc = builder.build_large(10_000)
    print(f"(generated 10k drawing in {time.perf_counter() - started:.1f} s)")
    bench_document("generated 10k", doc, context_target=None, shot_target=3.0)
    if not quick:
        started = time.perf_counter()
        doc = builder.build_large(100_000)
        print(f"(generated 100k drawing in {time.perf_counter() - started:.1f} s)")
        bench_document("generated 100k", doc, context_target=None, shot_target=None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
