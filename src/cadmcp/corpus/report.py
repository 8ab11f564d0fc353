"""The corpus table: one row per file, then totals per application."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from cadmcp.corpus.runner import FileResult

NAME_WIDTH = 48


@dataclass
class Totals:
    """Counts for one application (or all): the figures the corpus is judged by."""

    files: int = 0
    opened: int = 0
    warned: int = 0
    refused: int = 0
    ready_but_failed: int = 0
    pictures: int = 0
    blank_unexplained: int = 0
    blank_explained: int = 0
    picture_errors: int = 0
    changed: int = 0
    undo_exact: int = 0
    saved: int = 0
    reopen_exact: int = 0
    run_errors: int = 0

    def add(self, r: FileResult) -> None:
        self.files += 1
        self.opened += r.opened
        self.warned += bool(r.opened and r.warnings)
        self.refused += not r.launched
        self.ready_but_failed += r.ready_but_failed
        self.pictures += sum(p.ok for p in r.pictures)
        self.blank_unexplained += sum(p.unexplained_blank for p in r.pictures)
        self.blank_explained += sum(bool(p.ok and p.blank and p.note) for p in r.pictures)
        self.picture_errors += sum(p.error is not None for p in r.pictures)
        self.changed += bool(r.changed)
        self.undo_exact += bool(r.changed and r.undo_exact)
        self.saved += r.reopen_exact is not None
        self.reopen_exact += bool(r.reopen_exact)
        self.run_errors += r.error is not None


def totals(results: Iterable[FileResult]) -> dict[str, Totals]:
    """Totals per application, and 'all'."""
    out: dict[str, Totals] = {}
    for r in results:
        out.setdefault(r.app, Totals()).add(r)
        out.setdefault("all", Totals()).add(r)
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == "all", kv[0])))


def _mark(value: bool | None) -> str:
    return "-" if value is None else ("ok" if value else "FAIL")


def _name(path: str, base: str | None) -> str:
    name = os.path.relpath(path, base) if base else os.path.basename(path)
    return name if len(name) <= NAME_WIDTH else "..." + name[-(NAME_WIDTH - 3) :]


HEADER = (
    f"{'app':<7} {'file':<{NAME_WIDTH}} {'KB':>6} {'open':>4} {'pics':>5} {'undo':>4} {'save':>4} {'s':>5}"
    "  failures"
)


def row(r: FileResult, base: str | None = None) -> str:
    """One line for a file: did it open (``warn``: with a warning about the file), pictures
    (ok count / blank), undo, save/reopen, time."""
    pics = f"{sum(p.ok for p in r.pictures)}/{len(r.pictures)}" if r.pictures else "-"
    opened = ("warn" if r.warnings else "ok") if r.opened else ("REF" if not r.launched else "FAIL")
    undo = _mark(r.undo_exact) if r.changed is not False else "noop"
    failures = ", ".join(r.failures()) or "-"
    detail = r.launch_error or r.error or r.dump_error or r.context_error or r.change_error or r.undo_error
    detail = detail or r.picture_changed or r.undo_diff or r.save_error or r.reopen_diff or ""
    if r.opened and r.warnings and not detail:
        detail = "warned: " + r.warnings[0]
    if detail:
        failures += f": {detail[:160]}"
    return (
        f"{r.app:<7} {_name(r.path, base):<{NAME_WIDTH}} {r.size // 1024:>6} {opened:>4} {pics:>5} "
        f"{undo:>4} {_mark(r.reopen_exact):>4} {r.seconds:>5.1f}  {failures}"
    )


TOTALS_COLUMNS = [
    ("files", "files"),
    ("opened", "opened"),
    ("warned", "opened, warned"),
    ("refused", "refused"),
    ("ready_but_failed", "ready-but-failed"),
    ("pictures", "pictures"),
    ("blank_unexplained", "blank (no word)"),
    ("blank_explained", "blank (explained)"),
    ("picture_errors", "picture errors"),
    ("changed", "changed"),
    ("undo_exact", "exact undo"),
    ("saved", "saved+reopened"),
    ("reopen_exact", "reopen exact"),
    ("run_errors", "run errors"),
]


def totals_table(by_app: dict[str, Totals]) -> str:
    """Applications as columns, figures as rows."""
    apps = list(by_app)
    lines = [f"{'':<18}" + "".join(f"{a:>9}" for a in apps)]
    for key, label in TOTALS_COLUMNS:
        lines.append(f"{label:<18}" + "".join(f"{getattr(by_app[a], key):>9}" for a in apps))
    return "\n".join(lines)


def failure_classes(results: Iterable[FileResult]) -> dict[str, list[str]]:
    """Each failure class with the files that showed it."""
    classes: dict[str, list[str]] = {}
    for r in results:
        for failure in r.failures():
            classes.setdefault(f"{r.app}: {failure}", []).append(r.path)
    return dict(sorted(classes.items()))


def as_json(results: list[FileResult]) -> dict[str, Any]:
    by_app = totals(results)
    return {
        "files": [r.to_json() for r in results],
        "totals": {app: {f.name: getattr(t, f.name) for f in fields(t)} for app, t in by_app.items()},
        "classes": {k: len(v) for k, v in failure_classes(results).items()},
    }
