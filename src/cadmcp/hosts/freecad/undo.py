"""FreeCAD's own undo stack as the surface's UndoStack, giving back the whole state of each step.

FreeCAD's undo pastes back every property its transaction recorded, in no set order, and each
paste runs that object's change handlers: an attachment places its object again from a support
not yet restored, a sketch solves again against the external geometry of the change, a feature
writes its direction from a profile. So some outputs end where the change put them, marked fresh
or touched; the shapes it derives and caches (a group's, an App::Part's, a link's:
``Part.getShape``) keep the undone geometry too.

While a script runs, a :class:`ValueLog` keeps each property's saved content from before its
first change (FreeCAD's own serialisation, ``dumpPropertyContent``); an undo, redo or abort of
that step puts back, after FreeCAD's own restore, every property that step or the restore changed
to its content in the state it goes back to, then exactly the recorded "touched" marks
(:func:`restore_state`). An object marked Invalid (its recompute failed) in one state and not in the
other is recomputed (FreeCAD clears or sets the mark only then), and what that recompute wrote (an
object's own ``execute`` writes properties of its own: an Arch window its IFC data) is put back too;
an object whose recompute fails again keeps the mark (FreeCAD 0.20 has no other way to clear it).
Nothing else is recomputed but spreadsheets: a file whose saved values differ from what a recompute
would give (written by another FreeCAD version) gets its saved values back.
A spreadsheet keeps its cells, column widths and row heights (kept for every sheet when a script
starts: ``clearAll`` changes them unheard, and FreeCAD does not undo it) and computes the rest: each
sheet the step or the restore changed reads its cells back whole and computes every cell again
(FreeCAD's own restore leaves its alias index stale and its cell values typed as before rows or
columns moved). Steps are told apart by where cadmcp left the stack, so a script run twice (two
steps of one name) undoes as two. A step made elsewhere (in FreeCAD's window) keeps what FreeCAD
restored and marked; a step whose values outgrew :data:`MAX_STEP_BYTES` falls back to recomputing
what the restore touched (:func:`settle`).

FreeCAD keeps a fixed number of steps per document (``MaxUndoSize`` of its preferences, read
when its window makes a document; 20 without the window); the oldest one falls off silently,
so each recorded step checks and says so.
"""

from __future__ import annotations

import contextlib
import io
import zipfile
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cadmcp.host.builtins import HostError
from cadmcp.host.history import Touched
from cadmcp.host.pyexec import shielded

__all__ = [
    "DocumentSteps",
    "FreeCADUndoStack",
    "StepMarks",
    "ValueLog",
    "comparable",
    "invalid",
    "listening",
    "recompute_sheets",
    "refresh_derived",
    "restore_marks",
    "restore_state",
    "restore_values",
    "settle",
    "touched",
]

MAX_RECORDS = 256
"""Steps remembered per document (more than FreeCAD keeps)."""
MAX_STEP_BYTES = 64 * 2**20
"""Saved property content kept for one step; past it the step falls back to :func:`settle`."""
MAX_DOCUMENT_BYTES = 256 * 2**20
"""Saved property content kept per document; the oldest steps' values are let go first."""
RESTORE_PASSES = 3
"""Rounds of putting values back: a put-back value's change handler can move another one."""

Key = tuple[str, str]
"""An object's internal name and one of its property names."""


def touched(doc: Any) -> set[str]:
    """Names of the objects of ``doc`` marked as needing a recompute."""
    return {o.Name for o in doc.Objects if "Touched" in o.State}


def invalid(doc: Any) -> set[str]:
    """Names of the objects of ``doc`` whose last recompute failed (marked Invalid)."""
    return {o.Name for o in doc.Objects if "Invalid" in o.State}


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


SHAPE = "Part::PropertyPartShape"
EXPRESSIONS = "App::PropertyExpressionEngine"
SHEET = "Spreadsheet::Sheet"
CELLS = "cells"
SHEET_SIZES = ("columnWidths", "rowHeights")
SHEET_PARTS = (CELLS, *SHEET_SIZES)
"""What a spreadsheet keeps (the rest of it is computed from them)."""
PROP_DYNAMIC, PROP_NO_PERSIST = 21, 22
"""``App::Property`` status bits: added to one object, not written to its file."""
Saved = Any
"""A property's value as it was: its saved content (bytes); for a shape the shape itself (FreeCAD
replaces a shape rather than changing it, and a shape read back from its content can differ in the
last bit of a coordinate); for the expressions their (path, expression) pairs (read back from
content, expressions on a sketch's constraints are dropped)."""


def _type(obj: Any, prop: str) -> str:
    try:
        return str(obj.getTypeIdOfProperty(prop))
    except Exception:
        return ""


def _save(obj: Any, prop: str) -> Saved | None:
    """``prop``'s value as it is now (None: it cannot be kept)."""
    try:
        kind = _type(obj, prop)
        if kind == SHAPE:
            return getattr(obj, prop)
        if kind == EXPRESSIONS:
            return tuple((str(path), str(expression)) for path, expression in getattr(obj, prop))
        return bytes(obj.dumpPropertyContent(prop))
    except Exception:
        return None


def comparable(saved: Saved | None) -> Any:
    """What ``saved`` holds, to compare: saved content is a zip archive stamped with the time it was
    written (two dumps of one value a second apart differ), so its members' text is compared."""
    if not isinstance(saved, bytes):
        return saved
    try:
        with zipfile.ZipFile(io.BytesIO(saved)) as archive:
            return tuple((name, archive.read(name)) for name in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return saved


def _same(obj: Any, prop: str, saved: Saved) -> bool:
    """``prop`` holds ``saved`` again (a property that cannot be read counts as the same)."""
    try:
        if isinstance(saved, bytes | tuple):
            return comparable(_save(obj, prop)) == comparable(saved)
        current = getattr(obj, prop)
        return current.isNull() if saved.isNull() else bool(current.isSame(saved))
    except Exception:
        return True


def _put(obj: Any, prop: str, saved: Saved) -> bool:
    """Give ``prop`` the value ``saved``; whether that worked."""
    try:
        if isinstance(saved, bytes) and prop in SHEET_PARTS and obj.TypeId == SHEET:
            _put_sheet(obj, prop, saved)
        elif isinstance(saved, bytes):
            obj.restorePropertyContent(prop, saved)
        elif isinstance(saved, tuple):
            wanted = dict(saved)
            for path, _ in getattr(obj, prop):
                if str(path) not in wanted:
                    obj.setExpression(str(path), None)
            for path, expression in saved:
                obj.setExpression(path, expression)
        else:
            setattr(obj, prop, saved)
        return True
    except Exception:
        return False


def _cell_value(obj: Any, prop: str) -> bool:
    """``prop`` is a spreadsheet's computed value of one cell (named by its address), which the sheet
    makes from its cells when it recomputes and never writes to a file.

    It is not put back: FreeCAD's undo pastes it back beside cells whose aliases it does not index
    again (the next recompute then says "Property 'alias' not found") and with the type it had, which
    after rows or columns moved is another cell's (``std::bad_cast``); the sheet computes it again.
    """
    try:
        if obj.TypeId != SHEET:
            return False
        status = obj.getPropertyStatus(prop)
        return PROP_DYNAMIC in status and PROP_NO_PERSIST in status
    except Exception:
        return False


def recompute_sheets(doc: Any, names: Collection[str]) -> None:
    """Give the spreadsheets among ``names`` their cells again, read back from their content (also
    what FreeCAD's own undo restored: reading them rebuilds the sheet's alias index), and compute
    every cell from them, sheets that others read first."""
    sheets = {name for name in names if (obj := doc.getObject(name)) is not None and obj.TypeId == SHEET}
    if not sheets:
        return
    ordered = [o for o in doc.TopologicalSortedObjects if o.Name in sheets]
    for sheet in reversed(ordered):  # FreeCAD lists an object before those it depends on
        saved = _save(sheet, CELLS)
        if saved is not None:
            _put(sheet, CELLS, saved)


def _put_sheet(sheet: Any, prop: str, saved: bytes) -> None:
    """Give a spreadsheet's cells, column widths or row heights (``prop``) exactly ``saved``: reading
    them adds to those it has, so the sheet is emptied first (all three: the others are read back as
    they were) and its cells computed again."""
    parts = {part: bytes(sheet.dumpPropertyContent(part)) for part in SHEET_PARTS}
    parts[prop] = saved
    sheet.clearAll()
    for part, content in parts.items():
        sheet.restorePropertyContent(part, content)
    with contextlib.suppress(Exception):  # a cell in error is the sheet's state, not a failed put-back
        sheet.recompute()


def _size(saved: Saved) -> int:
    if isinstance(saved, tuple):
        return sum(len(a) + len(b) for a, b in saved)
    return len(saved) if isinstance(saved, bytes) else 0  # a shape is shared with FreeCAD's own undo


class ValueLog:
    """A document observer keeping, for each property of one document that changes while it
    listens, its saved content from before its first change."""

    def __init__(self, doc: Any, limit: int = MAX_STEP_BYTES) -> None:
        self.doc = doc
        self.limit = limit
        self.values: dict[Key, Saved] = {}
        self.size = 0
        self.overflowed = False
        """More content changed than ``limit``: ``values`` was let go."""

    @shielded
    def slotBeforeChangeObject(self, obj: Any, prop: str) -> None:
        if obj.Document is self.doc:
            self._keep(obj, prop)

    def _keep(self, obj: Any, prop: str) -> None:
        key = (obj.Name, prop)
        if self.overflowed or key in self.values:
            return
        saved = _save(obj, prop)
        if saved is None:
            return  # FreeCAD's own restore is all there is for it
        self.values[key] = saved
        self.size += _size(saved)
        if self.size > self.limit:
            self.values, self.size, self.overflowed = {}, 0, True

    def keep_cells(self) -> None:
        """Keep every spreadsheet's cells, column widths and row heights as they are now, before any
        change: some calls change them without a word to observers (``clearAll``), and FreeCAD's undo
        does not give them back then."""
        for obj in self.doc.Objects:
            if obj.TypeId == SHEET:
                for prop in SHEET_PARTS:
                    self._keep(obj, prop)

    def drop_unchanged_cells(self) -> None:
        """Let go of what :meth:`keep_cells` kept that is as it was (nothing to put back, no sheet to
        compute again)."""
        for key in [k for k in self.values if k[1] in SHEET_PARTS]:
            obj = self.doc.getObject(key[0])
            if obj is not None and obj.TypeId == SHEET and _same(obj, key[1], self.values[key]):
                self.size -= _size(self.values.pop(key))


@contextlib.contextmanager
def listening(observer: Any) -> Iterator[Any]:
    """``observer`` hears FreeCAD's document signals inside the block."""
    import FreeCAD as App

    App.addDocumentObserver(observer)
    try:
        yield observer
    finally:
        with contextlib.suppress(Exception):
            App.removeDocumentObserver(observer)


def snapshot(doc: Any, keys: Collection[Key]) -> dict[Key, Saved]:
    """The current values of the properties ``keys`` of ``doc`` (objects gone are left out)."""
    out = {}
    for name, prop in keys:
        obj = doc.getObject(name)
        saved = None if obj is None else _save(obj, prop)
        if saved is not None:
            out[(name, prop)] = saved
    return out


def restore_values(doc: Any, values: Mapping[Key, Saved]) -> int:
    """Put back every property of ``values`` that holds another value; return how many were put back.

    Shapes go first, once: an object's placement moves its shape along without FreeCAD recording
    it, and a shape put back moves the placement to its own, so the placement must follow. A
    put-back value runs its object's change handlers, which can move another property (an
    attachment its placement; a sketch's constraints read back drop the expressions on them), so
    what they moved is put back as it was too, and the rest gone over again until none differs.
    """
    targets = dict(values)
    shapes = [key for key, saved in targets.items() if not isinstance(saved, bytes | tuple)]
    others = [key for key, saved in targets.items() if isinstance(saved, bytes | tuple)]
    moved_by_handlers = ValueLog(doc, limit=2**62)
    restored = 0
    with listening(moved_by_handlers):
        for round_ in range(RESTORE_PASSES):
            moved = 0
            for name, prop in shapes + others if round_ == 0 else others:
                obj = doc.getObject(name)
                if obj is None or prop not in obj.PropertiesList or _cell_value(obj, prop):
                    continue
                saved = targets[(name, prop)]
                if not _same(obj, prop, saved) and _put(obj, prop, saved):
                    moved += 1
            for key, saved in moved_by_handlers.values.items():
                # a sheet's parts are put back whole (see _put_sheet): what the log saw was half-way
                if key not in targets and isinstance(saved, bytes | tuple) and key[1] not in SHEET_PARTS:
                    targets[key] = saved
                    others.append(key)
                    moved += 1
            restored += moved
            if not moved:
                break
    return restored


def restore_state(
    doc: Any, values: Mapping[Key, Saved], names: Collection[str], failed: Collection[str] | None = None
) -> None:
    """End an undo, redo or abort in the recorded state: ``values`` back, exactly ``names`` touched
    and, when ``failed`` is given, exactly ``failed`` marked Invalid.

    Some objects need a recompute without being marked (a spreadsheet whose cells were read back
    keeps them dirty), so the next recompute would redo them and what follows from them; an Invalid
    mark goes only with a recompute that succeeds (and comes back with one that fails again). They are
    recomputed here, with only they marked, and everything that recompute wrote (their own
    ``execute`` writes properties of theirs: an Arch window its IFC data) is put back as it was before
    it, with ``values``.
    """
    restore_values(doc, values)
    recompute_sheets(doc, {name for name, _ in values})  # their cell values are never put back
    wrong = set() if failed is None else invalid(doc) ^ set(failed)
    restore_marks(doc, wrong)
    written = ValueLog(doc, limit=2**62)
    with listening(written):
        recomputed = doc.recompute()
    if recomputed:
        restore_values(doc, {**written.values, **values})
    refresh_derived()
    restore_marks(doc, names)


def settle(doc: Any, names: Collection[str]) -> None:
    """End an undo, redo or abort whose values were not kept: derived outputs current, ``names`` touched.

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


@dataclass(eq=False)
class StepMarks:
    """One step a script recorded: the undo stack and the touched objects before and after it, and
    the saved content of what it changed before it (``values``; None: not kept) and after it
    (``after``, taken at its first undo)."""

    name: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    touched_before: frozenset[str]
    touched_after: frozenset[str]
    values: dict[Key, Saved] | None = None
    values_after: dict[Key, Saved] = field(default_factory=dict)
    changes: Touched | None = None
    """The objects it created, modified and deleted, by name."""
    invalid_before: frozenset[str] | None = None
    invalid_after: frozenset[str] | None = None
    """The objects marked Invalid (their recompute failed) before and after it (None: not known)."""
    below: StepMarks | None = None
    """The recorded step under it when it was made (None: none, or not known)."""

    @property
    def size(self) -> int:
        kept = [*(self.values or {}).values(), *self.values_after.values()]
        return sum(_size(v) for v in kept)


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
    top: StepMarks | None = None
    """The recorded step on top of the undo stack as cadmcp last left it (None: none or not known)."""
    stack: tuple[str, ...] | None = None
    """FreeCAD's undo names then (None: not known); when they still are, ``top`` is the step that
    an undo undoes, even where names repeat (a script run twice)."""

    def record(self, marks: StepMarks) -> str:
        """Remember a committed step; return the name of the step that fell off for it, or ''."""
        if self.stack == marks.before:
            marks.below = self.top
        self.top, self.stack = marks, marks.after
        self.records.append(marks)
        del self.records[:-MAX_RECORDS]
        self.trim()
        if marks.before and len(marks.after) <= len(marks.before):
            self.dropped += 1
            self.depth = len(marks.after)
            return marks.before[-1]
        return ""

    def trim(self, limit: int = MAX_DOCUMENT_BYTES) -> None:
        """Let the oldest steps' values go until what is kept fits ``limit`` (they fall back to
        :func:`settle`)."""
        total = sum(m.size for m in self.records)
        for marks in self.records:
            if total <= limit:
                return
            if marks.values is not None:
                total -= marks.size
                marks.values, marks.values_after = None, {}

    def for_undo(self, undo_names: tuple[str, ...]) -> StepMarks | None:
        """The record of the step that undoing the top of ``undo_names`` undoes.

        Where the stack is as cadmcp left it, the step on top; otherwise (steps made or undone in
        FreeCAD's window) the newest record whose stack was these names, else the newest whose
        stack began with them (older steps fell off since)."""
        if not undo_names:
            return None
        if self.stack == undo_names and self.top is not None and self.top.name == undo_names[0]:
            return self.top
        for marks in reversed(self.records):
            if marks.after == undo_names:
                return marks
        for marks in reversed(self.records):
            if _starts(undo_names, marks.after):
                return marks
        return None

    def for_redo(self, undo_names: tuple[str, ...], redo_name: str) -> StepMarks | None:
        """The record of the step ``redo_name`` that a redo on top of ``undo_names`` redoes (where the
        stack is as cadmcp left it, one made on top of the step there)."""
        fitting = [m for m in self.records if m.name == redo_name and _starts(undo_names, m.before)]
        if self.stack == undo_names:
            above = [m for m in fitting if m.below is self.top]
            fitting = above or fitting
        return fitting[-1] if fitting else None

    def moved(self, marks: StepMarks | None, back: bool, undo_names: tuple[str, ...]) -> None:
        """The stack moved one step (``marks``: the record of it, None: not one of ours)."""
        if marks is None:
            self.top, self.stack = None, None
        else:
            self.top, self.stack = (marks.below if back else marks), undo_names


class StepNumbers:
    """Numbers for each document's undo steps, which FreeCAD names but does not number: an
    application observer of FreeCAD's own signals, whoever moved the stack (cadmcp or the window).
    A committed transaction is a new step with the next number (one that changed nothing commits
    none); an undo moves the top number to the redo side, a redo moves it back."""

    def __init__(self) -> None:
        self.count = 0
        self._undo: dict[str, list[int | None]] = {}
        self._redo: dict[str, list[int | None]] = {}
        self.installed = False

    def install(self) -> None:
        """Listen from now on (once per process)."""
        if not self.installed:
            import FreeCAD as App

            App.addDocumentObserver(self)
            self.installed = True

    def undo_ids(self, doc: Any) -> list[int | None]:
        """The numbers of `doc`'s undo steps, most recent first (None for steps made before cadmcp
        listened)."""
        depth = len(doc.UndoNames)
        known = self._undo.get(doc.Name, [])[-depth:] if depth else []
        return [*reversed(known), *[None] * (depth - len(known))]

    @shielded
    def slotCommitTransaction(self, doc: Any) -> None:
        self.count += 1
        undo = self._undo.setdefault(doc.Name, [])
        undo.append(self.count)
        del undo[: max(0, len(undo) - len(doc.UndoNames))]  # what fell off FreeCAD's stack
        self._redo[doc.Name] = []

    @shielded
    def slotUndoDocument(self, doc: Any) -> None:
        undo = self._undo.setdefault(doc.Name, [])
        self._redo.setdefault(doc.Name, []).append(undo.pop() if undo else None)

    @shielded
    def slotRedoDocument(self, doc: Any) -> None:
        redo = self._redo.setdefault(doc.Name, [])
        self._undo.setdefault(doc.Name, []).append(redo.pop() if redo else None)

    @shielded
    def slotDeletedDocument(self, doc: Any) -> None:
        self._undo.pop(doc.Name, None)
        self._redo.pop(doc.Name, None)


STEP_NUMBERS = StepNumbers()


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

    def undo_ids(self) -> list[int | None]:
        return STEP_NUMBERS.undo_ids(self.doc)

    def touched(self) -> Touched | None:
        """What the step on top of the undo stack changed, when a script of ours recorded it."""
        marks = self.steps.for_undo(tuple(self.doc.UndoNames))
        return marks.changes if marks is not None else None

    def _move(self, back: bool) -> None:
        names = tuple(self.doc.UndoNames)
        redo = tuple(self.doc.RedoNames)
        marks = self.steps.for_undo(names) if back else self.steps.for_redo(names, redo[0] if redo else "")
        if back and marks is not None and marks.values is not None and not marks.values_after:
            marks.values_after.update(snapshot(self.doc, marks.values))
        expected = len(names) + (-1 if back else 1)
        log = ValueLog(self.doc)
        with listening(log):
            self.doc.undo() if back else self.doc.redo()
        if len(self.doc.UndoNames) != expected:
            raise HostError("FreeCAD did not move its undo stack (a transaction may be open in the GUI).")
        self.steps.moved(marks, back, tuple(self.doc.UndoNames))
        if marks is None:
            refresh_derived()
            return
        names_then = marks.touched_before if back else marks.touched_after
        failed_then = marks.invalid_before if back else marks.invalid_after
        if marks.values is None or log.overflowed:
            settle(self.doc, names_then)
            return
        # what the restore moved and the step did not change was the same before and after it
        moved = {k: v for k, v in log.values.items() if k not in marks.values}
        restore_state(
            self.doc, {**moved, **(marks.values if back else marks.values_after)}, names_then, failed_then
        )
        self.steps.trim()

    def undo(self) -> None:
        self._move(True)

    def redo(self) -> None:
        self._move(False)
