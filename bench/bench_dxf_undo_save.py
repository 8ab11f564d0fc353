"""DXF host on real drawings: does a save after a change and its undo give the save without the change?

python bench/bench_dxf_undo_save.py DIR... [--dwg]

Each .dxf under DIR (with --dwg also each .dwg, read through the converter) is opened the way the
host opens it and saved as is; then the corpus runner's typical change (a LINE added, the first
movable entity moved) runs as an agent script, is undone through the document's history, and
the drawing is saved again. Both files are read back with ezdxf and compared entity by entity
(the corpus probe's dump: every entity of every block and layout with its DXF tags, and the
layers). Prints one line per file that does not end exact and the counts: opened, refused,
save failed (the write or its read-back raised), differs, exact. Use e.g. LibreDWG's
`test/test-data` (public, not committed here: its drawings carry their own licences).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CADMCP_DWG_READER", str(ROOT / ".ci" / ".cache" / "dwg-reader"))

from cadmcp.corpus.probes import source  # noqa: E402
from cadmcp.host.builtins.adapter import HostError  # noqa: E402
from cadmcp.hosts.dxf.documents import DocumentSet  # noqa: E402
from cadmcp.hosts.dxf.execution import execute  # noqa: E402

PROBE: dict[str, Any] = {}
exec(source("dxf"), PROBE)  # the same dump and change the corpus runner sends into the host


def saved_dump(path: Path) -> dict[str, Any]:
    import ezdxf

    dump: dict[str, Any] = PROBE["dump"](ezdxf.readfile(path))
    return dump


def measure(path: Path, folder: Path) -> tuple[str, str]:
    """One file: (outcome, detail)."""
    documents = DocumentSet()
    try:
        entry = documents.open(str(path))
    except HostError as exc:
        return "refused", str(exc)[:100]
    plain, after_undo = folder / "plain.dxf", folder / "after-undo.dxf"
    try:
        documents.save(str(plain))
        before = saved_dump(plain)
    except Exception as exc:
        return "save failed", f"without a change: {type(exc).__name__}: {str(exc)[:100]}"
    code = source("dxf") + "\nprint(change(doc, msp))\n"
    result = execute(entry, code, "corpus change", None)
    if result.error:
        return "save failed", f"the change raised: {str(result.error)[:100]}"
    entry.history.navigate("back")
    try:
        documents.save(str(after_undo))
        after = saved_dump(after_undo)
    except Exception as exc:
        return "save failed", f"after change and undo: {type(exc).__name__}: {str(exc)[:100]}"
    if before == after:
        return "exact", ""
    a, b = before["entities"], after["entities"]
    handles = sorted(h for h in a.keys() | b.keys() if a.get(h) != b.get(h))
    layers = "" if before["layers"] == after["layers"] else "; layers differ"
    return "differs", f"{len(handles)} entities differ {handles[:5]}{layers}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--dwg", action="store_true", help="also the .dwg files (needs the DWG converter)")
    args = parser.parse_args()
    patterns = ["*.dxf", "*.DXF"] + (["*.dwg", "*.DWG"] if args.dwg else [])
    files = sorted({p for folder in args.folders for pattern in patterns for p in folder.rglob(pattern)})
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            outcome, detail = measure(path, Path(tmp))
            counts[outcome] += 1
            if outcome != "exact":
                print(f"{outcome:12} {path}: {detail}")
    if args.dwg:
        from cadmcp.hosts.dxf.dwg import close_workers

        close_workers()
    opened = sum(counts[k] for k in ("save failed", "differs", "exact"))
    print(
        f"files {len(files)}  opened {opened}  refused {counts['refused']}  save failed "
        f"{counts['save failed']}  differs {counts['differs']}  exact {counts['exact']}"
    )


if __name__ == "__main__":
    main()
