"""A fourth application in one file: JSON "notes" documents served with the full built-in surface.

    python samples/adapters/notes_host.py ideas.json      # a host serving ideas.json

Registered in the host configuration (docs/hosts/adapters.md), it is a first-class application:
``cadmcp host Notes ideas.json`` and ``launch_host`` with ``filePath: ideas.json`` start it::

    {"hosts": {"Notes": {"adapter": "notes_host.py:open_notebooks", "extensions": [".json"]}}}

The application is deliberately tiny (a document is ``{"notes": {"title": "text", ...}}``) so
that everything here is the adapter: what docs/hosts/adapters.md walks through. The seven
built-in tools, the seven resources, undo/redo, rollback, the host state and the search
vocabulary all come from ``cadmcp.host.builtins``.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadmcp.host.builtins import (
    Closed,
    DocumentInfo,
    Domain,
    HistoryStack,
    HostError,
    HostProfile,
    NotFound,
    Opened,
    RecordedStep,
    RequestedDocument,
    Saved,
    Shot,
    unsaved_changes,
)
from cadmcp.host.history import History, Step

PROFILE = HostProfile(
    app="Notes",
    scheme="notes",
    library="notes 1.0",
    noun="notebook",
    file_kinds="a notebook (.json)",
    save_suffixes=(".json",),
    scope="`notes` (the active notebook's dict of title -> text).",
    step_rule="A run that changes the notes becomes one undo step named by `description`.",
    context_fields="title, path, how many notes and their titles",
    warnings_fields="empty notes",
    schedules_fields="`notes` (title and length of every note)",
    element_ids="note title",
    element_fields="its text and length",
    screenshot_view="One bar per note, as long as its text.",
    domain=Domain(names=("Notes", "notebook"), terms=("note", "notes", "memo", "title")),
)


@dataclass
class Notebook:
    """One open document: its notes, file and undo history."""

    notes: dict[str, str]
    path: Path | None
    history: History = field(default_factory=History)
    saved: dict[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.path.name if self.path else "Untitled.json"


class NotesRun:
    """One script run: a fresh namespace, a snapshot to compare with or to restore."""

    def __init__(self, book: Notebook, name: str) -> None:
        self.book, self.name = book, name
        self.namespace: dict[str, Any] = {"notes": book.notes}
        self.before: dict[str, str] = {}

    def begin(self) -> None:
        self.before = copy.deepcopy(self.book.notes)

    def _set(self, state: dict[str, str]) -> None:
        self.book.notes.clear()
        self.book.notes.update(copy.deepcopy(state))

    def commit(self) -> RecordedStep | None:
        after = copy.deepcopy(self.book.notes)
        if after == self.before:
            return None
        before = self.before
        self.book.history.record(Step(self.name, lambda: self._set(before), lambda: self._set(after)))
        return RecordedStep(self.name, f"{len(after)} notes")

    def rollback(self) -> bool:
        changed = self.book.notes != self.before
        self._set(self.before)
        return changed


class NotesAdapter:
    """The whole application behind the built-in surface."""

    profile = PROFILE
    exec_timeout: float | None = None

    def __init__(self) -> None:
        self.books: list[Notebook] = []
        self.active: Notebook | None = None
        self.application = self

    def book(self) -> Notebook:
        if self.active is None:
            self.active = Notebook({}, None)
            self.books.append(self.active)
        return self.active

    # documents
    def pending(self) -> bool:
        return False

    def requested(self) -> list[RequestedDocument]:
        return []  # main() opens its files before serving

    def documents(self) -> list[DocumentInfo]:
        return [
            DocumentInfo(
                title=b.title,
                path=str(b.path) if b.path else None,
                active=b is self.active,
                modified=b.notes != b.saved,
            )
            for b in self.books
        ]

    def open(self, path: Path) -> Opened:
        for book in self.books:
            if book.path == path:
                self.active = book
                return Opened(book.title, f"{len(book.notes)} notes", already_open=True)
        try:
            notes = json.loads(path.read_text(encoding="utf-8"))["notes"]
        except (ValueError, KeyError, TypeError):
            raise HostError(f"{path.name} is not a notebook: it needs a 'notes' object.", "invalid") from None
        self.active = Notebook(dict(notes), path, saved=dict(notes))
        self.books.append(self.active)
        return Opened(self.active.title, f"{len(notes)} notes")

    def _find(self, document: str) -> Notebook:
        for book in self.books:
            if document in (book.title, str(book.path)):
                return book
        open_now = ", ".join(book.title for book in self.books) or "none"
        raise NotFound(f"No notebook is called {document[:60]!r}. Open notebooks: {open_now}.")

    def activate(self, document: str) -> str:
        self.active = self._find(document)
        return self.active.title

    def close(self, document: str | None, discard: bool) -> Closed:
        book = self._find(document) if document is not None else self.book()
        modified = book.notes != book.saved
        if modified and not discard:
            raise unsaved_changes(book.title, "notebook")
        self.books.remove(book)
        if self.active is book:
            self.active = self.books[-1] if self.books else None
        return Closed(book.title, str(book.path) if book.path else None, discarded=modified)

    def save(self, target: Path | None) -> Saved:
        book = self.book()
        path = target or book.path
        if path is None:
            raise HostError("This notebook has no file yet: pass filePath.", "invalid")
        path.write_text(json.dumps({"notes": book.notes}, indent=2), encoding="utf-8")
        book.path, book.saved = path, dict(book.notes)
        return Saved(book.title, path)

    # code and history
    def script(self, step_name: str) -> NotesRun:
        return NotesRun(self.book(), step_name)

    def history(self) -> HistoryStack:
        return HistoryStack(self.book().history)

    # views and resources
    def screenshot(self, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        from cadmcp.host.builtins.raster import Part, camera, render_parts

        bars = []
        for i, text in enumerate(self.book().notes.values()):
            x0, x1, y0, y1 = 0.0, float(max(len(text), 1)), i * 1.5, i * 1.5 + 1.0
            quad = [[(x0, y0, 0), (x1, y0, 0), (x1, y1, 0)], [(x0, y0, 0), (x1, y1, 0), (x0, y1, 0)]]
            bars.append(Part(quad, (120, 160, 210)))
        return Shot(render_parts(bars, width, height, camera((0, 0, 1)), caption=self.book().title))

    def cheatsheet(self) -> str:
        return "# Notes\n`notes['Groceries'] = 'milk'` adds a note; `del notes['Old']` removes one.\n"

    def versions(self) -> dict[str, Any]:
        return {"notes": "1.0"}

    def context(self) -> dict[str, Any]:
        book = self.book()
        return {
            "title": book.title,
            "path": str(book.path) if book.path else None,
            "notes": sorted(book.notes),
        }

    def warnings(self) -> dict[str, Any]:
        empty = [t for t, text in self.book().notes.items() if not text.strip()]
        return {"total": len(empty), "empty": empty}

    def schedules(self) -> dict[str, Any]:
        return {"schedules": [{"id": "notes", "rows": len(self.book().notes)}]}

    def schedule_preview(self, schedule_id: str) -> str:
        if schedule_id != "notes":
            raise NotFound(f"No schedule {schedule_id[:60]!r}; the only one is 'notes'.")
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["title", "length"])
        writer.writerows([t, len(text)] for t, text in list(self.book().notes.items())[:30])
        return out.getvalue()

    def element(self, element_id: str) -> dict[str, Any]:
        notes = self.book().notes
        if element_id not in notes:
            raise NotFound(f"No note is titled {element_id[:60]!r}; notes://model/context lists them.")
        return {"title": element_id, "text": notes[element_id], "length": len(notes[element_id])}

    def warm_up(self) -> Iterator[str] | None:
        return None


def open_notebooks(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> NotesAdapter:
    """The adapter over ``paths`` (the last one active): what the registry of applications starts."""
    from cadmcp.host.builtins.paths import check_document_path

    adapter = NotesAdapter()
    adapter.exec_timeout = exec_timeout
    for raw in paths:
        adapter.open(check_document_path(raw, kind="a notebook (.json)", memory_factor=5))
    return adapter


def main(paths: list[str]) -> None:
    """Serve ``paths`` until SIGINT/SIGTERM (``cadmcp host notes`` does the same once registered)."""
    from cadmcp.host.builtins import build_server
    from cadmcp.host.hosting import DocumentHost

    DocumentHost("Notes", "1.0", build_server(open_notebooks(paths), "1.0")).run()


if __name__ == "__main__":
    main(sys.argv[1:])
