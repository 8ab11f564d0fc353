"""Repeated DXF views of an unchanged drawing: how much a second view reuses of what the first drew.

python bench/bench_dxf_views.py [--entities N] [--budget S]

On a generated floor plan of N model-space entities (default 10,000) it times, through the host's
own cache, the default view twice, then a window on a quarter of the plan twice, another window
of the same size elsewhere, and a window half that size; each with the view budget S (default
none: views drawn to the end). Prints seconds per view and, for a view that stopped at its
budget, how many entities it left for the next one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_dxf_host import _load_sample_builder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--budget", type=float, default=None)
    args = parser.parse_args()
    from cadmcp.hosts.dxf.screenshot import render
    from cadmcp.hosts.dxf.viewcache import ViewCache

    doc = _load_sample_builder().build_large(args.entities)
    frame = (render(doc, width=320, cache=ViewCache()).coverage or {})["frame"]  # where the plan is
    lo, hi = frame["min"], frame["max"]
    w, h = hi[0] - lo[0], hi[1] - lo[1]
    quarter = [lo[0], lo[1], lo[0] + w / 2, lo[1] + h / 2]
    beside = [lo[0] + w / 2, lo[1], lo[0] + w, lo[1] + h / 2]
    eighth = [lo[0], lo[1], lo[0] + w / 4, lo[1] + h / 4]
    cache = ViewCache()
    print(f"{len(doc.modelspace())} model-space entities, budget {args.budget}")
    for label, window in [
        ("default view", None),
        ("default view again", None),
        ("window on a quarter", quarter),
        ("same window again", quarter),
        ("same-size window beside it", beside),
        ("window on an eighth", eighth),
        ("window on an eighth again", eighth),
        ("default view a third time", None),
    ]:
        started = time.perf_counter()
        shot = render(doc, width=1280, window=window, budget=args.budget, cache=cache)
        seconds = time.perf_counter() - started
        left = (shot.coverage or {}).get("notPreparedYet", 0)
        print(f"  {label:30} {seconds:6.2f} s{f'  ({left} not drawn yet)' if left else ''}")


if __name__ == "__main__":
    main()
