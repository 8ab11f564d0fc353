"""execute_python_code for DXF: run agent code on the live drawing as one undoable step."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from cadmcp.host.history import Step
from cadmcp.host.pyexec import ExecResult, run_code
from cadmcp.hosts.dxf.documents import DxfDocument
from cadmcp.hosts.dxf.tracking import ChangeSet, ChangeTracker, tracked

__all__ = ["default_step_name", "execute", "run_tracked", "transaction"]

_MAX_NAME = 80
T = TypeVar("T")


def default_step_name(code: str) -> str:
    """First meaningful line of the code (not blank, not a comment), shortened."""
    for line in code.splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            return text if len(text) <= _MAX_NAME else text[: _MAX_NAME - 1] + "…"
    return "Python code"


class _Transaction:
    """pyexec hooks: track changes during the run, then record or roll back."""

    def __init__(self, entry: DxfDocument, name: str) -> None:
        self.entry = entry
        self.name = name
        self.tracker = ChangeTracker(entry.doc)
        self._ctx = tracked(self.tracker)
        self._changes: ChangeSet | None = None

    def begin(self) -> ChangeTracker:
        self._ctx.__enter__()
        return self.tracker

    def _finish(self) -> ChangeSet:
        if self._changes is None:
            self._ctx.__exit__(None, None, None)
            self._changes = self.tracker.finish()
        return self._changes

    def commit(self, _token: object) -> str | None:
        changes = self._finish()
        if changes.is_empty:
            return None
        self.entry.history.record(Step(self.name, changes.undo, changes.redo))
        self.entry.modified = True
        counts = changes.summary
        note = (
            f"[UNDO STEP] Recorded {self.name!r} ({counts['created']} created, {counts['deleted']} deleted, "
            f"{counts['modified']} modified objects). Undo it with navigate_history(direction='back')."
        )
        if changes.untracked:
            note += (
                "\n[WARNING] Undo of this step cannot restore these objects exactly (their state could not "
                "be copied): " + "; ".join(changes.untracked[:5])
            )
        return note

    def rollback(self, _token: object) -> str | None:
        changes = self._finish()
        if changes.is_empty:
            return "[ROLLBACK] The document had not been changed."
        changes.undo()
        return "[ROLLBACK] All changes made by the code were undone; the document is as it was before."


def _namespace(entry: DxfDocument) -> dict[str, Any]:
    import ezdxf

    namespace = entry.namespace
    namespace.update(doc=entry.doc, msp=entry.doc.modelspace(), ezdxf=ezdxf)
    return namespace


def execute(entry: DxfDocument, code: str, description: str | None, timeout: float | None) -> ExecResult:
    """Run ``code`` with ``doc``, ``msp`` and ``ezdxf`` in scope; mutations become one history step."""
    name = (description or "").strip() or default_step_name(code)
    transaction = _Transaction(entry, name)
    return run_code(
        code,
        _namespace(entry),
        timeout=timeout,
        begin=transaction.begin,
        commit=transaction.commit,
        rollback=transaction.rollback,
    )


def run_tracked(entry: DxfDocument, action: Callable[[], T]) -> tuple[T, ChangeSet]:
    """Call ``action()`` with change tracking and return its result and changes (not recorded).

    If the action raises, its changes are undone before the exception propagates.
    """
    tracker = ChangeTracker(entry.doc)
    try:
        with tracked(tracker):
            result = action()
    except BaseException:
        tracker.finish().undo()
        raise
    return result, tracker.finish()


@contextmanager
def transaction(entry: DxfDocument, name: str) -> Iterator[DxfDocument]:
    """Record the changes made inside the block as one undo step named ``name``.

    For toolsets that edit the drawing directly (not through execute_python_code)::

        with documents.transaction("Renumber doors") as entry:
            ...  # change entry.doc

    An exception inside the block undoes its changes and propagates.
    """
    tracker = ChangeTracker(entry.doc)
    try:
        with tracked(tracker):
            yield entry
    except BaseException:
        tracker.finish().undo()
        raise
    changes = tracker.finish()
    if not changes.is_empty:
        entry.history.record(Step(name, changes.undo, changes.redo))
        entry.modified = True
