"""FreeCAD's own undo stack as the surface's UndoStack, giving back the whole state of each step.

FreeCAD's undo restores every property a transaction recorded, most shapes computed by its
recompute included. What it does not give back: the shapes it derives from others and caches
(a group's, an App::Part's, a link's: ``Part.getShape``), outputs its recompute wrote without
recording them (a sketch's geometry that follows another sketch's edge through external
geometry, a placement an attachment computes), and which objects needed a recompute in that
state (it marks every restored object touched, and only a recompute brings those outputs back).
:class:`DocumentSteps` remembers, for each step a script made, which objects were touched
before and after it; an undo or redo of such a step recomputes the objects FreeCAD touched that
were up to date in the state it goes back to, then leaves exactly the recorded marks
(:func:`settle`). A step made elsewhere (in FreeCAD's window) keeps the marks FreeCAD set, so
the next recompute brings its outputs back.

FreeCAD keeps a fixed number of steps per document (``MaxUndoSize`` of its preferences, read
when its window makes a document; 20 without the window); the oldest one falls off silently,
so each recorded step checks and says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from cadmcp.host.builtins import HostError

__all__ = [
    "DocumentSteps",
    "FreeCADUndoStack",
    "StepMarks",
    "refresh_derived",
    "restore_marks",
    "settle",
    "touched",
]

MAX_RECORDS = 256
"""Steps remembered per document (more than FreeCAD keeps)."""


def touched(doc: Any) -> set[str]:
    """Names of the objects of ``doc`` marked as needing a recompute."""
    return {o.Name for o in doc.Objects if "Touched" in o.State}


def restore_marks(doc: Any, names: Collection[str]) -> None:
    """Mark exactly the objects ``names`` as needing a recompute."""
    for obj in doc.Objects:
        is_touched = "Touched" in obj.State
        with contextlib.suppress(Exception):
            if is_touched and obj.Name not in names:
                obj.purgeTouched()
            elif not is_touched and obj.Name in names:
                obj.touch()


def refresh_derived() -> None:
    """Drop FreeCAD's cache of derived shapes (groups, App::Part, links) after undo, redo or abort.

    A recompute clears it; an undo restores the children's shapes without one, and the
    container kept the undone geometry.
    """
    import Part

    Part.clearShapeCache()


def settle(doc: Any, names: Collection[str]) -> None:
    """End an undo, redo or abort in the recorded state: derived outputs current, ``names`` touched.

    The objects FreeCAD's restore touched that were up to date in that state are recomputed
    (the others keep their values: they were waiting for a recompute then too), so outputs its
    transactions do not record follow their restored inputs; then exactly ``names`` are marked.
    No transaction is open here, so the recompute adds no undo step and keeps the redo steps.
    """
    refresh_derived()
    waiting = set(names)
    if touched(doc) - waiting:
        for obj in doc.Objects:
            if obj.Name in waiting and "Touched" in obj.State:
                with contextlib.suppress(Exception):
                    obj.purgeTouched()
        doc.recompute()
        refresh_derived()
    restore_marks(doc, waiting)


@dataclass(frozen=True)
class StepMarks:
    """One step a script recorded: the undo stack and the touched objects before and after it."""

    name: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    touched_before: frozenset[str]
    touched_after: frozenset[str]


def _starts(names: tuple[str, ...], recorded: tuple[str, ...]) -> bool:
    """``names`` is ``recorded`` with none or some of its oldest steps fallen off."""
    return len(names) <= len(recorded) and recorded[: len(names)] == names


@dataclass
class DocumentSteps:
    """What cadmcp knows about one document's undo stack beyond FreeCAD's names."""

    depth: int
    """Steps FreeCAD keeps for this document."""
    dropped: int = 0
    """Steps that fell off the bottom of the stack since the document was opened."""
    records: list[StepMarks] = field(default_factory=list)

    def record(self, marks: StepMarks) -> str:
        """Remember a committed step; return the name of the step that fell off for it, or ''."""
        self.records.append(marks)
        del self.records[:-MAX_RECORDS]
        if marks.before and len(marks.after) <= len(marks.before):
            self.dropped += 1
            self.depth = len(marks.after)
            return marks.before[-1]
        return ""

    def after_undo(self, undo_names: tuple[str, ...]) -> frozenset[str] | None:
        """The touched objects of the state that undoing the top of ``undo_names`` gives back."""
        for marks in reversed(self.records):
            if undo_names and _starts(undo_names, marks.after):
                return marks.touched_before
        return None

    def after_redo(self, undo_names: tuple[str, ...], redo_name: str) -> frozenset[str] | None:
        """The touched objects of the state that redoing ``redo_name`` gives back."""
        for marks in reversed(self.records):
            if marks.name == redo_name and _starts(undo_names, marks.before):
                return marks.touched_after
        return None


class FreeCADUndoStack:
    """A document's own undo stack (App.Document.undo/redo) as the surface's UndoStack."""

    def __init__(self, doc: Any, steps: DocumentSteps) -> None:
        self.doc = doc
        self.steps = steps

    def undo_names(self) -> list[str]:
        return list(self.doc.UndoNames)

    def redo_names(self) -> list[str]:
        return list(self.doc.RedoNames)

    def depth(self) -> int:
        return self.steps.depth

    def dropped(self) -> int:
        return self.steps.dropped

    def _move(self, back: bool) -> None:
        names = tuple(self.doc.UndoNames)
        redo = tuple(self.doc.RedoNames)
        marks = (
            self.steps.after_undo(names) if back else self.steps.after_redo(names, redo[0] if redo else "")
        )
        expected = len(names) + (-1 if back else 1)
        self.doc.undo() if back else self.doc.redo()
        if len(self.doc.UndoNames) != expected:
            raise HostError("FreeCAD did not move its undo stack (a transaction may be open in the GUI).")
        if marks is None:
            refresh_derived()
        else:
            settle(self.doc, marks)

    def undo(self) -> None:
        self._move(True)

    def redo(self) -> None:
        self._move(False)
