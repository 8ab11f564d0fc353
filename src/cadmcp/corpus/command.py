"""`cadmcp eval corpus PATH...`: run every CAD/BIM file under the paths and print the table."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from cadmcp.corpus import report
from cadmcp.corpus.files import APPS, CorpusError, find
from cadmcp.corpus.runner import FileResult, Settings, run_all


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cadmcp eval corpus",
        description=(
            "Run each .dxf, .dwg, .ifc and .FCStd file under PATH through a real daemon as an agent would: "
            "launch, model context, default and top screenshots (blank check), one typical change, undo, "
            "an exact compare of the canonical state, save-as, reopen and compare. Prints one row per "
            "file and totals per application."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (searched recursively)")
    parser.add_argument("--app", action="append", choices=sorted(set(APPS.values())), help="only these apps")
    parser.add_argument("--json", metavar="FILE", help="also write every result and the totals as JSON")
    parser.add_argument("--limit", type=int, default=None, help="run at most this many files")
    parser.add_argument("--jobs", type=int, default=1, help="files run at once (1-8; default 1)")
    parser.add_argument("--launch-timeout", type=float, default=180.0, help="seconds for a launch (180)")
    parser.add_argument("--call-timeout", type=float, default=300.0, help="seconds for any other call (300)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the corpus; exit 0 when every file opened and every check passed, 1 otherwise."""
    args = _parser().parse_args(argv)
    for label, value in (("--launch-timeout", args.launch_timeout), ("--call-timeout", args.call_timeout)):
        if not 1 <= value <= 3600:
            print(f"cadmcp eval corpus: {label} must be 1-3600 seconds, not {value:g}", file=sys.stderr)
            return 2
    if not 1 <= args.jobs <= 8:
        print(f"cadmcp eval corpus: --jobs must be 1-8, not {args.jobs}", file=sys.stderr)
        return 2
    try:
        files = find(args.paths, args.app)
    except CorpusError as exc:
        print(f"cadmcp eval corpus: {exc}", file=sys.stderr)
        return 2
    if args.limit is not None:
        files = files[: max(0, args.limit)]
    base = os.path.commonpath([str(f.path.parent) for f in files]) if len(files) > 1 else None
    print(report.HEADER, flush=True)

    done: list[FileResult] = []

    def each(result: FileResult) -> None:
        print(report.row(result, base), flush=True)
        done.append(result)
        if args.json:  # kept up to date, so a run stopped half-way still has its figures
            _write_json(args.json, done)

    results = run_all(files, Settings(args.launch_timeout, args.call_timeout, args.jobs), each)
    print()
    print(report.totals_table(report.totals(results)))
    classes = report.failure_classes(results)
    if classes:
        print("\nfailure classes:")
        for name, paths in classes.items():
            print(f"  {name}: {len(paths)}")
    if args.json:
        _write_json(args.json, results)
    return 0 if not classes else 1


def _write_json(path: str, results: list[FileResult]) -> None:
    partial = f"{path}.part"
    with open(partial, "w", encoding="utf-8") as fh:
        json.dump(report.as_json(results), fh, indent=1)
    os.replace(partial, path)
