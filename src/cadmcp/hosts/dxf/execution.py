"""execute_python_code for DXF: run agent code on the live drawing as one undoable step."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from cadmcp.host.builtins.adapter import RecordedStep
from cadmcp.host.builtins.scripts import run_transaction, step_name
from cadmcp.host.history import History, Step
from cadmcp.host.pyexec import ExecResult
from cadmcp.hosts.dxf.tracking import ChangeSet, ChangeTracker, tracked

if TYPE_CHECKING:
    from ezdxf.document import Drawing

__all__ = ["DxfScriptRun", "execute", "namespace", "run_tracked", "transaction"]

T = TypeVar("T")


class DxfDocument(Protocol):
    """What a run needs of an open drawing: ``documents.DxfDocument``, which runs its
    transactions through this module (so this one does not import it back)."""

    doc: Drawing
    history: History


class DxfScriptRun:
    """One execute_python_code run: a fresh namespace, change tracking, then record or roll back."""

    def __init__(self, entry: DxfDocument, name: str) -> None:
        self.entry = entry
        self.name = name
        self.namespace = namespace(entry)
        self.tracker = ChangeTracker(entry.doc)
        self._ctx = tracked(self.tracker)
        self._changes: ChangeSet | None = None

    def begin(self) -> None:
        self._ctx.__enter__()

    def _finish(self) -> ChangeSet:
        if self._changes is None:
            self._ctx.__exit__(None, None, None)
            self._changes = self.tracker.finish()
        return self._changes

    def commit(self) -> RecordedStep | None:
        changes = self._finish()
        if changes.is_empty:
            return None
        dropped = self.entry.history.record(Step(self.name, changes.undo, changes.redo, changes.touched))
        self.entry.views.changed()
        counts = changes.summary
        warning = ""
        if changes.untracked:
            warning = (
                "Undo of this step cannot restore these objects exactly (their state could not be copied): "
                + "; ".join(changes.untracked[:5])
            )
        return RecordedStep(
            self.name,
            f"{counts['created']} created, {counts['deleted']} deleted, {counts['modified']} modified "
            "objects",
            warning,
            undo_steps=self.entry.history.back_remaining,
            depth=self.entry.history.max_depth,
            dropped=dropped,
        )

    def rollback(self) -> bool:
        changes = self._finish()
        if changes.is_empty:
            return False
        changes.undo()
        self.entry.views.changed()
        return True


def namespace(entry: DxfDocument) -> dict[str, Any]:
    """A fresh script namespace: ``doc``, ``msp`` and ``ezdxf``."""
    import ezdxf

    return {"__name__": "__agent__", "doc": entry.doc, "msp": entry.doc.modelspace(), "ezdxf": ezdxf}


def execute(entry: DxfDocument, code: str, description: str | None, timeout: float | None) -> ExecResult:
    """Run ``code`` with ``doc``, ``msp`` and ``ezdxf`` in scope; mutations become one history step."""
    run = DxfScriptRun(entry, step_name(code, description))
    return run_transaction(run, code, timeout=timeout, noun="drawing")


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
        entry.history.record(Step(name, changes.undo, changes.redo, changes.touched))
        entry.views.changed()
