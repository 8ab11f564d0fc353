"""DWG drawings in the DXF host: fidelity against reference DXFs and open time beside the DXF twin.

python bench/bench_dwg.py [--corpus DIR] [--passes N] [--release R2010 ...]

DIR is a folder of DWG files searched recursively, e.g. LibreDWG's `test/test-data` (public, not
committed here: its drawings carry their own licences); a `NAME.dxf` beside `NAME.dwg` is taken as
its reference (the AutoCAD-made pairs). Per release it prints: files, opened, reference pairs,
model-space count exact and within 10%, counts by type equal (an entity carried as a proxy
counts by number, not by type), layers equal (ezdxf's added Defpoints ignored) and layer
on/off states equal, blocks equal, and open time (median, max) of the DWG beside its DXF twin,
each opened the way the host opens them (with --passes, each file's median over N opens, DWG and
twin one after the other). Without DIR (or CADMCP_DWG_CORPUS) it measures
generated R2000 drawings (lines and circles; 10,000 texts). It also prints how many texts were
checked against the DWG and set to its own. The converter must be installed (.ci/deps/dwg-reader.sh, or
CADMCP_DWG_READER).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "hosts" / "dxf"))
os.environ.setdefault("CADMCP_DWG_READER", str(ROOT / ".ci" / ".cache" / "dwg-reader"))

from cadmcp.hosts.dxf.documents import DocumentSet, DxfHostError  # noqa: E402
from cadmcp.hosts.dxf.dwg import _workers as dwg_workers  # noqa: E402
from cadmcp.hosts.dxf.dwg import close_workers, dwg_release, is_pre_r13  # noqa: E402

ORDER = ["R1.", "R2.", "R9", "R10", "R11", "R13", "R14", "R2000", "R2004", "R2007", "R2010", "R2013", "R2018"]


def release_key(release: str) -> int:
    return next((i for i, prefix in enumerate(ORDER) if release.startswith(prefix)), len(ORDER))


def figures(doc: Any) -> dict[str, Any]:
    layers = {
        layer.dxf.name.lower(): layer.is_on() for layer in doc.layers if layer.dxf.name.lower() != "defpoints"
    }
    return {
        "model": Counter(e.dxftype() for e in doc.modelspace()),
        "layers": layers,
        "blocks": {b.name.lower() for b in doc.blocks if not b.name.startswith("*")},
    }


def open_timed(path: Path) -> tuple[Any, float]:
    started = time.perf_counter()
    entry = DocumentSet().open(str(path))
    return entry, time.perf_counter() - started


def ms(values: list[float]) -> str:
    if not values:
        return "       -"
    return f"{statistics.median(values) * 1000:6.0f}/{max(values) * 1000:<6.0f}"


def measure(files: list[Path], passes: int = 1) -> None:
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(list))
    dwg_times: dict[Path, list[float]] = defaultdict(list)
    dxf_times: dict[Path, list[float]] = defaultdict(list)
    misses: list[str] = []
    failures: list[str] = []
    checked, mended, unread = 0, Counter[str](), 0
    warm = files[0]
    try:
        _, cold = open_timed(warm)
        print(f"first open (starts the converter, compiles LibreDWG): {cold * 1000:.0f} ms ({warm.name})")
    except DxfHostError as exc:
        print(f"first open failed: {exc}")
    for dwg in files:
        with dwg.open("rb") as stream:
            version, release = dwg_release(stream.read(16)) or ("?", "?")
        row = rows[release]
        row["files"].append(dwg)
        row["old"] = is_pre_r13(version)
        try:
            entry, seconds = open_timed(dwg)
        except DxfHostError as exc:
            failures.append(f"{dwg.name} ({release}): {str(exc)[:160]}")
            continue
        row["opened"].append(dwg)
        dwg_times[dwg].append(seconds)
        row["lost"].append(sum(i["count"] for i in entry.source.lost if i["where"] == "model space"))
        if entry.source.texts is not None:
            checked += entry.source.texts.checked
            mended.update(entry.source.texts.mended)
            unread += len(entry.source.texts.unread)
        twin = dwg.with_suffix(".dxf")
        if not twin.is_file():
            continue
        try:
            reference, twin_s = open_timed(twin)
        except DxfHostError:
            continue
        got, want = figures(entry.doc), figures(reference.doc)
        n, m = sum(got["model"].values()), sum(want["model"].values())
        row["pairs"].append(dwg)
        dxf_times[dwg].append(twin_s)
        row["exact"].append(n == m)
        row["near"].append(abs(n - m) <= 0.1 * max(m, 1))
        row["types"].append(got["model"] == want["model"])
        row["layers"].append(set(got["layers"]) == set(want["layers"]))
        row["states"].append(got["layers"] == want["layers"])
        row["blocks"].append(got["blocks"] == want["blocks"])
        if n != m:
            missing = dict(want["model"] - got["model"])
            extra = dict(got["model"] - want["model"])
            misses.append(
                f"{dwg.parent.name}/{dwg.name} ({release}): {n} of {m}; missing {missing} extra {extra}"
            )
    for _ in range(passes - 1):  # DWG and twin one after the other: a loaded machine slows both alike
        for dwg in dwg_times:
            dwg_times[dwg].append(open_timed(dwg)[1])
            if dwg in dxf_times:
                dxf_times[dwg].append(open_timed(dwg.with_suffix(".dxf"))[1])
    for row in rows.values():  # each file's median over the passes
        row["dwg_s"] = [statistics.median(dwg_times[dwg]) for dwg in row["opened"]]
        row["pair_dwg_s"] = [statistics.median(dwg_times[dwg]) for dwg in row["pairs"]]
        row["dxf_s"] = [statistics.median(dxf_times[dwg]) for dwg in row["pairs"]]
    if passes > 1:
        print(f"open times: each file's median over {passes} passes")
    header = (
        f"{'release':<9}{'files':>6}{'opened':>7}{'pairs':>6}{'exact':>6}{'<=10%':>6}{'types':>6}{'layers':>7}"
        f"{'on/off':>7}{'blocks':>7}  {'DWG open ms med/max':>20}  {'DXF twin ms med/max':>20}  {'ratio':>5}"
    )
    print(header)
    total: dict[str, Any] = defaultdict(list)
    modern: dict[str, Any] = defaultdict(list)
    for release in sorted(rows, key=release_key):
        row = rows[release]
        _print_row(release, row)
        for key, values in row.items():
            if isinstance(values, list):
                total[key].extend(values)
                if not row["old"]:
                    modern[key].extend(values)
    _print_row("R13+", modern)
    _print_row("all", total)
    made = [ms for worker in dwg_workers.values() for ms in worker.instance_ms]
    if made:  # each drawing is read by a fresh instance, so no drawing reads what another left behind
        print(
            f"fresh LibreDWG instance per drawing: median {statistics.median(made):.0f} ms, max "
            f"{max(made)} ms over {len(made)} (made after each answer, while the host reads the DXF)"
        )
    print(
        f"texts checked against the DWG: {checked:,}, set to the DWG's own: {sum(mended.values()):,} "
        f"{dict(sorted(mended.items()))}, not readable to check: {unread:,}"
    )
    for line in misses:
        print("not exact:", line)
    for line in failures:
        print("not opened:", line)


def _print_row(name: str, row: dict[str, Any]) -> None:
    pair_ratio = ""
    if row["dxf_s"]:
        pair_ratio = f"{statistics.median(row['pair_dwg_s']) / statistics.median(row['dxf_s']):5.2f}"
    print(
        f"{name:<9}{len(row['files']):>6}{len(row['opened']):>7}{len(row['pairs']):>6}{sum(row['exact']):>6}"
        f"{sum(row['near']):>6}{sum(row['types']):>6}{sum(row['layers']):>7}{sum(row['states']):>7}"
        f"{sum(row['blocks']):>7}  "
        f"{ms(row['dwg_s']):>20}  {ms(row['dxf_s']):>20}  {pair_ratio:>5}"
    )


def _release(path: Path) -> str:
    with path.open("rb") as stream:
        return (dwg_release(stream.read(16)) or ("?", "?"))[1]


def generated(folder: Path) -> list[Path]:
    """R2000 drawings written by ezdwg, with ezdxf twins, of growing size."""
    import ezdwg
    import ezdxf

    files = []
    for n in (10, 1000, 10000):
        drawing = ezdwg.new()
        doc = ezdxf.new("R2000")
        for i in range(n):
            x, y = i % 100, i // 100
            drawing.modelspace().add_line((x, y, 0), (x + 0.8, y, 0))
            doc.modelspace().add_line((x, y, 0), (x + 0.8, y, 0))
            if i % 3 == 0:
                drawing.modelspace().add_circle((x, y, 0), 0.3)
                doc.modelspace().add_circle((x, y, 0), 0.3)
        dwg = folder / f"lines{n}.dwg"
        ezdwg.to_dwg(drawing, str(dwg))
        doc.saveas(dwg.with_suffix(".dxf"))
        files.append(dwg)
    drawing = ezdwg.new()  # texts, one in ten with a line break: what checking them against the DWG costs
    doc = ezdxf.new("R2000")
    for i in range(10000):
        x, y = i % 100, i // 100
        text = f"Room {i}" + ("\nfloor 2" if i % 10 == 0 else "")
        drawing.modelspace().add_text(text, insert=(x, y, 0), height=0.2)
        doc.modelspace().add_text(text.replace("\n", "^J"), height=0.2, dxfattribs={"insert": (x, y, 0)})
    dwg = folder / "texts10000.dwg"
    ezdwg.to_dwg(drawing, str(dwg))
    doc.saveas(dwg.with_suffix(".dxf"))
    files.append(dwg)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=os.environ.get("CADMCP_DWG_CORPUS"), help="folder of .dwg files")
    parser.add_argument("--passes", type=int, default=1, help="times each file is opened (1-20; median)")
    parser.add_argument("--release", action="append", help="only drawings of these releases, e.g. R14")
    args = parser.parse_args()
    if not 1 <= args.passes <= 20:
        parser.error(f"--passes must be 1-20, not {args.passes}")
    try:
        if args.corpus:
            files = sorted(Path(args.corpus).rglob("*.dwg"))
            if args.release:
                files = [f for f in files if _release(f) in args.release]
            print(f"{len(files)} DWG files under {args.corpus}")
            measure(files, args.passes)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                print("no --corpus: generated R2000 drawings (10, 1,000 and 10,000 lines; 10,000 texts)")
                measure(generated(Path(tmp)), args.passes)
    finally:
        close_workers()


if __name__ == "__main__":
    main()
