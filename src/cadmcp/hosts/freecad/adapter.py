"""The FreeCAD application adapter: FreeCAD documents behind the built-in surface.

Runs inside FreeCAD's interpreter, on its application thread (the Qt GUI thread with the GUI,
the main thread without). One script is one FreeCAD transaction: opened before the code runs,
the document recomputed after it, committed as one step of FreeCAD's own undo stack (the
one Edit > Undo shows), aborted when the code fails or times out. A preview of a document with
redo steps runs in a hidden copy of it (:meth:`FreeCADAdapter.preview_place`): FreeCAD drops the
redo steps at the first change of any transaction, even one that is then aborted.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import FreeCAD as App

from cadmcp.host.builtins import (
    Closed,
    DocumentInfo,
    Domain,
    HostError,
    HostProfile,
    Opened,
    RecordedStep,
    RequestedDocument,
    Saved,
    ScreenshotOption,
    Shot,
    requested_outcome,
    unsaved_changes,
)
from cadmcp.host.history import UNDO_DEPTH_ENV, Touched, undo_depth
from cadmcp.host.pyexec import shielded
from cadmcp.hosts.freecad import IMPORT_SUFFIXES, viewdata
from cadmcp.hosts.freecad.fcstd import (
    Declared,
    NotLoaded,
    newer_than,
    not_loaded,
    read_declared,
    unresolved_links,
    version_of,
)
from cadmcp.hosts.freecad.undo import (
    STEP_NUMBERS,
    DocumentSteps,
    FreeCADUndoStack,
    StepMarks,
    ValueLog,
    invalid,
    refresh_derived,
    restore_marks,
    restore_state,
    settle,
    touched,
)
from cadmcp.wire.echo import echo

__all__ = ["DOMAIN", "FreeCADAdapter", "FreeCADError", "freecad_version", "profile"]

HEADLESS_UNDO_DEPTH = 20
"""Steps an App.Document keeps without FreeCAD's window (its fixed default; Python cannot change it)."""
OWN_SOLVER_FLAGS = (0, 19)
"""Files saved by FreeCAD up to this version say their sketches are not fully constrained (the
flag was not kept); FreeCAD 0.20 and later files keep it."""
MAX_ELSEWHERE = 50
MAX_NAMED_LINKS = 5
"""Object names kept per other document a run changed."""
VIEW_ALIASES = {"axonometric": "isometric", "plan": "top"}
"""View names other hosts use, as this host names them."""
DOCUMENT_PREFERENCES = "User parameter:BaseApp/Preferences/Document"
MEMORY_FACTOR = 40.0
"""An .FCStd is a zip; shapes unpacked and recomputed take tens of bytes per byte of file."""

DOMAIN = Domain(
    names=("FreeCAD", "FCStd", "FreeCAD document", "PartDesign", "Sketcher", "OpenCASCADE"),
    terms=(
        "part", "parts", "solid", "solids", "body", "bodies", "sketch", "sketches", "pad", "pocket", "hole",
        "fillet", "chamfer", "revolution", "revolve", "extrude", "extrusion", "loft", "sweep", "boolean",
        "cut",
        "fuse", "union", "feature", "features", "constraint", "constraints", "fully constrained", "placement",
        "shape", "face", "faces", "edge", "edges", "vertex", "volume", "area", "mass", "spreadsheet",
        "parameter", "parametric", "expression", "recompute", "STEP", "IGES", "STL", "mesh", "BREP",
        "assembly", "Part workbench", "Draft", "Arch", "3D model",
        "Skizze", "Körper", "Bauteil", "Tasche", "Verrundung", "esquisse", "pièce", "corps", "congé",
        "boceto", "pieza", "cuerpo", "redondeo", "schets", "onderdeel", "afronding", "afschuining",
        "chanfrein", "arête", "Fase", "Kante", "chaflán", "arista",
    ),
)  # fmt: skip


class FreeCADError(HostError):
    """A problem the agent can act on; the message says what to do next."""


def freecad_version() -> str:
    """FreeCAD's version, e.g. ``0.20.2``."""
    major, minor, patch = [*App.Version(), "", "", ""][:3]
    return ".".join(p for p in (major, minor, patch) if p)


def profile(gui: bool) -> HostProfile:
    """The FreeCAD host's words for the built-in surface."""
    where = "the active 3D view of FreeCAD's window" if gui else "a tessellation of the shapes (no GUI)"
    return HostProfile(
        app="FreeCAD",
        scheme="freecad",
        library=f"FreeCAD {freecad_version()}",
        noun="document",
        file_kinds=(
            "a FreeCAD document (.FCStd), or a STEP, IGES, BREP, STL, OBJ, PLY, OFF or DXF file to import "
            "into a new document"
        ),
        save_suffixes=(".FCStd",),
        scope=(
            "`App` (FreeCAD), `Gui` (FreeCADGui, with the GUI only), `doc` (the active App.Document), "
            "`Part`, `Sketcher`, `PartDesign`, `Draft`, `Arch`, `Mesh`, `Spreadsheet`, and `Vector`, "
            "`Placement`, `Rotation`; lengths are millimetres."
        ),
        step_rule=(
            "A run is one FreeCAD transaction: the document is recomputed after the code and the run "
            "becomes one step of FreeCAD's own undo stack named by `description` (Edit > Undo shows it); a "
            "run that changes nothing records nothing."
        ),
        context_fields=(
            "title, path, unsaved changes, unit schema, object counts by type, bodies with their features, "
            "sketches with constraint counts and whether they are fully constrained, every object (name, "
            "label, type), the bounding box and the undo history"
        ),
        warnings_fields=(
            "objects whose recompute failed (sketches with conflicting or redundant constraints among them) "
            "or that need one, and invalid shapes"
        ),
        schedules_fields="one per spreadsheet (id = its name) and `objects` (every object with its shape's "
        "volume, area and bounding box)",
        element_ids="object name (e.g. Pad) or label",
        element_fields=(
            "type, label, placement, every property, shape (volume, area, bounding box, validity, counts of "
            "solids, faces, edges), what it uses and what uses it"
        ),
        screenshot_view=f"Drawn from {where}: an isometric view fitted to the document by default.",
        screenshot_options=(
            ScreenshotOption(
                "view",
                Literal[
                    "isometric",
                    "front",
                    "rear",
                    "top",
                    "bottom",
                    "left",
                    "right",
                    "current",
                    "axonometric",
                    "plan",
                ],
                "isometric",
                "View direction; 'current' keeps the GUI's camera as the user has it (headless: isometric). "
                "'axonometric' is 'isometric' and 'plan' is 'top', as other hosts name them.",
                VIEW_ALIASES,
            ),
            ScreenshotOption(
                "mark",
                list[str] | None,
                None,
                "Names of objects to mark (e.g. what the last change created or modified): drawn in orange "
                "(headless views; the window's picture is as the user sees it). A feature another was made "
                "from (a Pad under a Pocket) is marked on the shape that holds it. structuredContent.marked "
                "lists what is orange; markedNotShown says why a marked object is not drawn itself.",
            ),
        ),
        domain=DOMAIN,
        history_note=(
            "It is FreeCAD's own undo stack: steps the user made in the window are on it too, and "
            "list_documents shows what is unsaved. After a move the document is what it was at that step, "
            "shapes of groups and App::Part containers included; FreeCAD keeps a fixed number of steps "
            "per document (20 without its window; with it, its preference or CADMCP_UNDO_DEPTH) and the "
            "answer says how many remain and whether older ones fell off."
        ),
        memory_factor=MEMORY_FACTOR,
    )


class LazyModule(ModuleType):
    """A module imported on first attribute access (Draft and Arch take a second to import)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self.__name__)
        return self._module

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr not in ("__doc__", "__file__", "__path__"):
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __dir__(self) -> list[str]:
        return dir(self._load())


class _FreshDerivedShapes:
    """An application observer that drops FreeCAD's cache of derived shapes after every recompute.

    A group's, App::Part's or link's shape (``Part.getShape``) is a compound of its children's,
    cached; some of a child's changes never reach that cache (FreeCAD's ArchDetail example: after
    its first recompute the group's cached shape still has the solids of Arch windows and
    structures as saved, and a recompute keeps it), so a script, a picture or a dump read after any
    recompute saw a container as it had been. Dropping the cache costs its next read only.
    """

    def __init__(self) -> None:
        self.solved: dict[str, set[str]] = {}
        """Per document, the sketches recomputed since it was opened (their solver flags are current)."""

    @shielded
    def slotRecomputedDocument(self, doc: Any) -> None:
        refresh_derived()

    @shielded
    def slotRecomputedObject(self, obj: Any) -> None:
        if obj.TypeId.startswith("Sketcher::"):
            self.solved.setdefault(obj.Document.Name, set()).add(obj.Name)


_FRESH_DERIVED = _FreshDerivedShapes()
_fresh_derived_installed = False


def _keep_derived_shapes_fresh() -> None:
    """Install :class:`_FreshDerivedShapes` once per process."""
    global _fresh_derived_installed
    if not _fresh_derived_installed:
        App.addDocumentObserver(_FRESH_DERIVED)
        _fresh_derived_installed = True


def _expression_of(obj: Any, prop: str) -> str | None:
    """The expression that computes ``obj.prop`` (``Sketch.Constraints.width``), or None."""
    try:
        bindings = obj.ExpressionEngine
    except Exception:
        return None
    for path, expression in bindings or ():
        if str(path).lstrip(".") == prop:
            return str(expression)
    return None


class _Changes:
    """A document observer counting what a transaction created, deleted and changed."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.created = 0
        self.deleted = 0
        self.changed: set[str] = set()
        self.names: dict[str, list[str]] = {"created": [], "deleted": []}
        self.bound: dict[tuple[str, str], tuple[str, str]] = {}
        """(object, property) the script set that an expression computes -> (value set, expression)."""
        self.elsewhere: dict[str, set[str]] = {}
        """Other documents the run changed (a linked part edited through the assembly): their
        objects, which no undo step of this document holds."""
        self.placed: dict[str, Any] = {}
        """Attached objects whose Placement changed outside a recompute -> the last Placement set (the
        script's, or FreeCAD's own when the attachment's settings changed)."""

    def _other(self, obj: Any) -> bool:
        doc = obj.Document
        if doc is self.doc:
            return False
        names = self.elsewhere.setdefault(doc.Name, set())
        if len(names) < MAX_ELSEWHERE:
            names.add(obj.Name)
        return True

    @shielded
    def slotCreatedObject(self, obj: Any) -> None:
        if not self._other(obj):
            self.created += 1
            self.names["created"].append(obj.Name)

    @shielded
    def slotDeletedObject(self, obj: Any) -> None:
        if not self._other(obj):
            self.deleted += 1
            self.names["deleted"].append(obj.Name)

    @shielded
    def slotChangedObject(self, obj: Any, prop: str) -> None:
        if not self._other(obj):
            self.changed.add(obj.Name)
            if prop == "Placement" and not self.doc.Recomputing and _attached(obj):
                self.placed[obj.Name] = obj.Placement
            if not self.doc.Recomputing and len(self.bound) < MAX_ELSEWHERE:
                expression = _expression_of(obj, prop)
                if expression is not None:  # the script set a value an expression computes
                    self.bound[(obj.Name, prop)] = (str(obj.getPropertyByName(prop)), expression)

    def overridden(self) -> list[str]:
        """Values the script set that an expression put back in the recompute (a Pad's Length bound
        to a sketch constraint): the run changed nothing there, though it said it set them."""
        said = []
        for (name, prop), (value, expression) in self.bound.items():
            obj = self.doc.getObject(name)
            if obj is None or _expression_of(obj, prop) is None:
                continue  # deleted, or its expression cleared: the value stands
            now = str(obj.getPropertyByName(prop))
            if now != value:
                said.append(f"{name}.{prop} was set to {value}, but its expression ({echo(expression, 80)}) "
                            f"made it {now} again")  # fmt: skip
        return said

    def put_back(self) -> str:
        """The sentence for values the script set that the recompute put back (:meth:`overridden`), or ""."""
        overridden = self.overridden()
        if not overridden:
            return ""
        return (
            f"The recompute put back what the script set: {'; '.join(overridden)}. Change what the "
            "expression reads, or clear it first (obj.setExpression('Property', None))."
        )

    def placed_attached(self) -> str:
        """The sentence for attached objects whose Placement the script set to other than what their
        attachment computes (FreeCAD puts it back), or ""."""
        named = []
        for name, wanted in sorted(self.placed.items()):
            obj = self.doc.getObject(name)
            computed = _attached_placement(obj) if obj is not None and _attached(obj) else None
            if computed is not None and not _same_placement(wanted, computed):
                named.append(f"{name} (MapMode {obj.MapMode})")
        if not named:
            return ""
        return (
            f"The script set the Placement of attached object(s): {', '.join(named[:MAX_NAMED_LINKS])}. "
            "FreeCAD computes an attached object's Placement from what it is attached to and puts it "
            "back (at its recompute, or when the file is opened again): change its AttachmentOffset "
            "instead, or set its MapMode to 'Deactivated' to place it freely."
        )

    @property
    def any(self) -> bool:
        return bool(self.created or self.deleted or self.changed)

    def touched(self) -> Touched:
        """The objects' names: created, changed (by the code or its recompute) and deleted."""
        created = [n for n in dict.fromkeys(self.names["created"]) if n not in self.names["deleted"]]
        deleted = [n for n in dict.fromkeys(self.names["deleted"]) if n not in self.names["created"]]
        gone = {*self.names["created"], *self.names["deleted"]}
        modified = sorted(n for n in self.changed if n not in gone)
        return Touched(tuple(created), tuple(modified), tuple(deleted))


def _listed(objects: set[str]) -> str:
    """Some of a document's objects by name, for a sentence."""
    return ", ".join(sorted(objects)[:5]) + (" ..." if len(objects) > 5 else "")


def _attached(obj: Any) -> bool:
    """Whether FreeCAD computes the object's Placement from what it is attached to."""
    try:
        support = getattr(obj, "AttachmentSupport", None) or getattr(obj, "Support", None)
        return bool(support) and getattr(obj, "MapMode", "Deactivated") != "Deactivated"
    except Exception:
        return False


def _attached_placement(obj: Any) -> Any:
    """The Placement the object's attachment computes (None when it cannot say)."""
    try:
        return obj.Attacher.calculateAttachedPlacement(obj.Placement)
    except Exception:
        return None


def _same_placement(a: Any, b: Any) -> bool:
    return all(abs(x - y) < 1e-7 for x, y in zip(a.toMatrix().A, b.toMatrix().A, strict=True))


def _brought_note(doc: Any, open_before: set[str]) -> str:
    """The files FreeCAD opened along with `doc` (an assembly's linked parts, as documents of their
    own), or ""."""
    brought = [d for name, d in App.listDocuments().items() if name not in open_before and d is not doc]
    if not brought:
        return ""
    names = [Path(d.FileName).name if d.FileName else d.Label for d in brought[:MAX_NAMED_LINKS]]
    shown = ", ".join(echo(name) for name in names)
    more = f" and {len(brought) - MAX_NAMED_LINKS} more" if len(brought) > MAX_NAMED_LINKS else ""
    return (
        f"FreeCAD also opened {len(brought)} file(s) it links to: {shown}{more} (list_documents lists "
        "them; a change through a link changes them, each saved with its own save_document)."
    )


def _links_note(path: Path, *, saved: bool) -> str:
    """What the file at `path` links to that is not where its links say (relative to its folder: a
    save into another folder keeps each link's path), or ""."""
    lost = unresolved_links(path)
    if not lost:
        return ""
    shown = ", ".join(echo(name, 80) for name in lost[:MAX_NAMED_LINKS])
    more = f" and {len(lost) - MAX_NAMED_LINKS} more" if len(lost) > MAX_NAMED_LINKS else ""
    where = f"relative to {echo(str(path.parent), 160)}"
    if saved:
        return (
            f"It links to {len(lost)} file(s) that are not where its links say, {where}: {shown}{more}. "
            "Opened from there, those links are empty; copy the files beside it (keeping their folders), "
            "or save it in the folder of the file it came from."
        )
    return (
        f"{echo(path.name)} links to {len(lost)} file(s) that are not where its links say, {where}: "
        f"{shown}{more}. Those links are empty (what they bring in is missing from the model and its "
        "pictures); put the files there and open it again."
    )


def _class_missing(obj: Any) -> bool:
    """Whether a Python feature came without its class (its add-on's module could not be imported)."""
    try:
        return obj.Proxy is None
    except AttributeError:
        return False


def _recompute_warning(doc: Any, fix: str) -> str:
    """What the last recompute left in error, with what to do (``fix``: undo, or change the script),
    or "" when it left nothing in error."""
    problems = _recompute_problems(doc)
    if not problems:
        return ""
    return (
        f"The recompute left {len(problems)} object(s) in error: {'; '.join(problems[:5])}. Fix them or "
        f"{fix}; freecad://model/warnings lists them."
    )


def _close_application_transaction(abort: bool) -> None:
    """End FreeCAD's application-level transaction too.

    ``doc.openTransaction`` also opens one for the application; a document that did not change
    never closes it, and the next ``undo()`` would commit that empty leftover over the real step.
    """
    if App.getActiveTransaction():
        App.closeActiveTransaction(abort)


def _recompute_problems(doc: Any) -> list[str]:
    problems = []
    for obj in doc.Objects:
        if "Invalid" in obj.State or "Error" in obj.State:
            status = obj.getStatusString() if hasattr(obj, "getStatusString") else ""
            problems.append(f"{obj.Name} ({obj.TypeId}): {echo(status, 120)}")
    return problems


ENDED_BY_SCRIPT = (
    "The script ended FreeCAD's transaction itself (doc.commitTransaction(), abortTransaction(), "
    "undo(), or a command that does), so its change cannot be previewed or applied from a preview: the "
    "steps it committed were undone (they are on the redo stack now, in place of any redo steps from "
    "before), but what it changed outside a transaction after that stays. Remove those calls and run "
    "it again."
)


class FreeCADScriptRun:
    """One execute_python_code run: a fresh namespace and one FreeCAD transaction."""

    def __init__(self, adapter: FreeCADAdapter, doc: Any, name: str) -> None:
        self.adapter = adapter
        self.doc = doc
        self.name = name
        self.namespace = adapter.namespace(doc)
        self._changes = _Changes(doc)
        self._values = ValueLog(doc)
        """What the code, its recompute and an abort changed, as it was before."""
        self._touched: set[str] = set()
        self._invalid: set[str] = set()
        self._undo_before: list[str] = []
        self._was_modified = False
        self._transaction: Any = None

    def begin(self) -> None:
        active = App.getActiveTransaction()
        if active:
            raise FreeCADError(
                f"FreeCAD has an operation in progress ({echo(active[0])}, e.g. a sketch or task edited in "
                "the window). Finish or cancel it there, then run the script again.",
                "unavailable",
            )
        self.doc.UndoMode = 1
        for other in App.listDocuments().values():  # what the script changes there joins the run's
            if other is not self.doc and not other.UndoMode:  # transaction: a rollback takes it back too
                other.UndoMode = 1
        self._was_modified = self.adapter.modified(self.doc)
        self._touched = touched(self.doc)
        self._invalid = invalid(self.doc)
        self._undo_before = list(self.doc.UndoNames)
        App.addDocumentObserver(self._changes)
        self._values.keep_cells()
        App.addDocumentObserver(self._values)
        self.doc.openTransaction(self.name)
        self._transaction = App.getActiveTransaction()
        self.adapter.gui_busy(True, self.name)

    def _end(self) -> None:
        for observer in (self._changes, self._values):
            with contextlib.suppress(Exception):
                App.removeDocumentObserver(observer)
        self.adapter.gui_busy(False, self.name)

    def prepare(self) -> None:
        """Recompute what the code changed, as the commit would, with the transaction still open
        (a preview takes its inventory and after-picture of this, then rolls back).

        Raises when the code ended the transaction itself: a preview could not roll it back.
        """
        if App.getActiveTransaction() != self._transaction:
            raise FreeCADError(ENDED_BY_SCRIPT, "invalid")
        if self._changes.any:
            self.doc.recompute()

    def caution(self) -> str:
        """For a preview, after :meth:`prepare`: what the applied run's answer would warn of (the
        objects the recompute left in error, values it put back, attached objects placed by hand)
        and the other documents the script changes."""
        said = [_recompute_warning(self.doc, "change the script") if self._changes.any else ""]
        said += [self._changes.put_back(), self._changes.placed_attached()]  # as the applied run says
        docs = App.listDocuments()
        for name, objects in self._changes.elsewhere.items():
            if name in docs:
                other = f"{self.adapter.title(docs[name])} ({_listed(objects)})"
                said.append(
                    f"The script also changes {other}, another open document: this preview shows the "
                    "active document only."
                )
        return " ".join(w for w in said if w)

    def commit(self) -> RecordedStep | None:
        try:
            if self._changes.any:
                self.doc.recompute()
            self.doc.commitTransaction()
        finally:
            _close_application_transaction(abort=False)
            self._end()
        after = list(self.doc.UndoNames)
        elsewhere = self.adapter.changed_elsewhere(self._changes.elsewhere, self.name)
        put_back = self._changes.put_back()
        placed = self._changes.placed_attached()
        if after == self._undo_before:
            said = " ".join(w for w in (put_back, placed, elsewhere) if w)
            return RecordedStep(self.name, warning=said, recorded=False) if said else None
        self._values.drop_unchanged_cells()  # an abort keeps them: its restore leaves the aliases stale
        steps = self.adapter.steps(self.doc)
        dropped = steps.record(
            StepMarks(
                self.name,
                tuple(self._undo_before),
                tuple(after),
                frozenset(self._touched),
                frozenset(touched(self.doc)),
                None if self._values.overflowed else self._values.values,
                changes=self._changes.touched(),
                invalid_before=frozenset(self._invalid),
                invalid_after=frozenset(invalid(self.doc)),
            )
        )
        c = self._changes
        detail = f"{c.created} created, {c.deleted} deleted, {len(c.changed)} objects changed; recomputed"
        warning = " ".join(
            w for w in (_recompute_warning(self.doc, "undo the step"), put_back, placed, elsewhere) if w
        )
        return RecordedStep(
            self.name,
            detail,
            warning,
            undo_steps=len(after),
            redo_steps=len(self.doc.RedoNames),
            depth=steps.depth,
            dropped=dropped,
        )

    def rollback(self) -> bool:
        changed = self._changes.any
        try:
            self.doc.abortTransaction()
        finally:
            _close_application_transaction(abort=True)
            self._end()
        now = list(self.doc.UndoNames)
        extra = len(now) - len(self._undo_before)
        if extra > 0 and now[extra:] == self._undo_before:  # steps the code committed itself
            for _ in range(extra):
                self.doc.undo()
            changed = True
        if self._values.overflowed:  # after the transaction is closed: its recompute records nothing
            settle(self.doc, self._touched)
        else:
            restore_state(self.doc, self._values.values, self._touched, self._invalid)
        self.adapter.rolled_back(self.doc, self._was_modified)
        return changed


class FreeCADAdapter:
    """FreeCAD documents as a :class:`cadmcp.host.builtins.DocumentAdapter`.

    Also what toolsets get from ``cadmcp.host.current().application``:
    ``app.active_document()`` is the live ``App.Document`` and ``with app.transaction(name):``
    makes edits one undo step (recomputed, aborted if the block raises).
    """

    def __init__(self, exec_timeout: float | None = None, *, gui: Any = None) -> None:
        self.exec_timeout = exec_timeout
        self.gui = gui
        """The GUI bridge (:class:`cadmcp.hosts.freecad.session.GuiBridge`) or None without a GUI."""
        self.application = self
        self.profile = profile(gui is not None)
        self._pending: list[Path] = []
        self._problems: list[str] = []
        self._requested: list[RequestedDocument] = []
        self._sources: dict[str, Path] = {}
        self._old_flags: set[str] = set()
        """Documents saved by a FreeCAD older than 0.20: their sketches' FullyConstrained flags were
        not kept, and say false until each sketch is recomputed."""
        self._changed_outside: set[str] = set()
        """Documents a run changed outside its undo step, until they are saved."""
        self._not_loaded: dict[str, NotLoaded] = {}
        """Per document: objects of its file FreeCAD left out (the file is not written over)."""
        self._newer: dict[str, tuple[Path, str]] = {}
        """Per document: its file and the newer FreeCAD that saved it (the file is not written over)."""
        self._open_notes: dict[str, list[str]] = {}
        self._saved: dict[str, tuple[str, ...]] = {}
        self._unmodified_at: dict[str, tuple[str, ...]] = {}
        self._modules: dict[str, Any] | None = None
        self._order: list[str] = []
        self._steps: dict[str, DocumentSteps] = {}
        self.undo_depth = choose_undo_depth(gui is not None)
        """Steps FreeCAD keeps per document (see :func:`choose_undo_depth`)."""
        _keep_derived_shapes_fresh()
        STEP_NUMBERS.install()
        self._preview_copy: Any = None
        """The hidden copy a preview runs in, while it runs (see :meth:`preview_place`)."""
        self._preview_of: Any = None

    # documents -----------------------------------------------------------------------------------
    def open_later(self, paths: list[Path]) -> None:
        """Open ``paths`` (already checked) on first use or during the warm-up, the first active."""
        self._pending = list(paths)

    def pending(self) -> bool:
        return bool(self._pending)

    def requested(self) -> list[RequestedDocument]:
        return list(self._requested)

    def _settle(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        first = None
        for path in pending:
            try:
                doc, _ = self._open(path)
            except HostError as exc:
                self._problems.append(str(exc))
                self._requested.append(requested_outcome(path, error=exc))
            else:
                first = first or doc
                notes = self._open_notes.get(doc.Name) or None
                self._requested.append(requested_outcome(path, self.title(doc), warnings=notes))
        if first is not None:
            self._activate(first)

    def _check_start_up(self, docs: list[Any]) -> None:
        """A file given at start-up that could not be opened is said on every use until a document
        is open (no blank document takes its place)."""
        if not self._problems:
            return
        if docs:
            self._problems = []
            return
        problems = " ".join(self._problems)
        raise FreeCADError(f"{problems} No document is open: call open_document.", "unavailable")

    def _documents(self) -> list[Any]:
        """The open documents in the order they were opened (FreeCAD lists them by name)."""
        self._settle()
        docs = App.listDocuments()
        self._order = [name for name in self._order if name in docs]
        for gone in [name for name in self._steps if name not in docs]:
            del self._steps[gone]
        for kept in (self._not_loaded, self._newer):
            for gone in [name for name in kept if name not in docs]:
                del kept[gone]
        self._changed_outside &= set(docs)
        for gone in [name for name in _FRESH_DERIVED.solved if name not in docs]:
            del _FRESH_DERIVED.solved[gone]
        self._order += sorted(name for name in docs if name not in self._order)
        return [docs[name] for name in self._order]

    def title(self, doc: Any) -> str:
        if doc is not None and doc is self._preview_copy:
            return self.title(self._preview_of)  # a preview's pictures name the document it previews
        name = self._plain_title(doc)
        clashes = [d for d in App.listDocuments().values() if d is not doc and self._plain_title(d) == name]
        return f"{name} ({doc.Name})" if clashes else name

    def _plain_title(self, doc: Any) -> str:
        source = self._sources.get(doc.Name)
        return Path(doc.FileName).name if doc.FileName else (source.name if source else doc.Label)

    def modified(self, doc: Any) -> bool:
        if doc.Name in self._changed_outside:
            return True
        if self.gui is not None:
            gui_doc = self.gui.document(doc)
            if gui_doc is not None:
                if not gui_doc.Modified:
                    return False
                # set only by a rolled-back run (FreeCAD marks every change, and Python cannot clear it)
                return self._unmodified_at.get(doc.Name) != tuple(doc.UndoNames)
        return tuple(doc.UndoNames) != self._saved.get(doc.Name, ())

    def changed_elsewhere(self, changed: dict[str, set[str]], step: str) -> str:
        """Mark documents a run changed besides its own as modified (FreeCAD's own flag stays unset
        without a transaction, so answers and recovery copies would pass them over); what to say.
        Where the change became an undo step ``step`` of that document's own, say how to undo it."""
        docs = App.listDocuments()
        own, loose = [], []
        for name, objects in changed.items():
            doc = docs.get(name)
            if doc is None:
                continue
            named = f"{self.title(doc)} ({_listed(objects)})"
            if list(doc.UndoNames[:1]) == [step]:
                own.append(named)
            else:  # a document the script opened itself records no undo
                self._changed_outside.add(name)
                loose.append(named)
        said = []
        if own:
            said.append(
                f"The script also changed {'; '.join(own)}: an undo step {step!r} of that document's own, "
                "not of this call's step, which holds the active document only (to undo it: "
                "activate_document, then navigate_history back). Save that document to keep the change."
            )
        if loose:
            said.append(
                f"The script also changed {'; '.join(loose)}: not part of the undo step, which holds the "
                "active document only, so navigate_history does not take it back. Save that document to "
                "keep the change (activate_document, save_document), or set the values back with a script."
            )
        return " ".join(said)

    def rolled_back(self, doc: Any, was_modified: bool) -> None:
        """A run on ``doc`` was rolled back: an unmodified document stays unmodified in our answers
        (FreeCAD's window marks it modified all the same) until its undo stack moves."""
        if self.gui is not None and not was_modified:
            self._unmodified_at[doc.Name] = tuple(doc.UndoNames)

    def documents(self) -> list[DocumentInfo]:
        docs = self._documents()
        active = App.ActiveDocument
        self._check_start_up(docs)
        return [
            DocumentInfo(
                title=self.title(d),
                path=d.FileName or None,
                active=d is active,
                modified=self.modified(d),
            )
            for d in docs
        ]

    def active_document(self) -> Any:
        """The active App.Document; a new empty one ("Unnamed") when none is open."""
        docs = self._documents()
        self._check_start_up(docs)
        doc = App.ActiveDocument
        if doc is None and docs:
            doc = docs[-1]
            self._activate(doc)
        if doc is None:
            doc = App.newDocument("Unnamed")
            self._mark_saved(doc)
            self._steps.pop(doc.Name, None)
            self._activate(doc)
        return doc

    def _mark_saved(self, doc: Any) -> None:
        self._saved[doc.Name] = tuple(doc.UndoNames)
        self._changed_outside.discard(doc.Name)

    def _activate(self, doc: Any) -> None:
        App.setActiveDocument(doc.Name)
        if self.gui is not None:
            self.gui.activate(doc)

    def _find_open(self, path: Path) -> Any:
        for doc in App.listDocuments().values():
            if doc.FileName and Path(doc.FileName).resolve() == path:
                return doc
            if self._sources.get(doc.Name) == path:
                return doc
        return None

    def _open(self, path: Path) -> tuple[Any, bool]:
        existing = self._find_open(path)
        if existing is not None:
            return existing, False
        suffix = path.suffix.lower()
        notes: list[str] = []
        if suffix == ".fcstd":
            declared = read_declared(path)
            open_before = set(App.listDocuments())
            try:
                doc = App.openDocument(str(path))
            except Exception as exc:
                raise FreeCADError(
                    f"FreeCAD could not open {echo(path.name)}: {echo(str(exc), 120)}.", "invalid"
                ) from None
            if declared.count and not doc.Objects:  # FreeCAD read nothing of it, without a word
                App.closeDocument(doc.Name)
                raise FreeCADError(
                    f"FreeCAD read none of the {declared.count} objects {echo(path.name)} declares: the "
                    "document is damaged or from a FreeCAD much newer than this one. Open a backup "
                    "(.FCBak) or save it again from the FreeCAD that made it.",
                    "invalid",
                )
            notes = self._check_loaded(doc, path, declared)
            notes += [n for n in (_links_note(path, saved=False), _brought_note(doc, open_before)) if n]
            if self.gui is None and not newer_than(declared.program, viewdata.VISIBILITY_IN_DOCUMENT):
                viewdata.show_as_saved(doc, path)
        elif suffix in IMPORT_SUFFIXES:
            doc = self._import(path)
        else:
            raise FreeCADError(
                f"{echo(path.name)} is not a file FreeCAD opens here. Pass an .FCStd document or a "
                f"{', '.join(s for s in IMPORT_SUFFIXES)} file to import.",
                "invalid",
            )
        doc.UndoMode = 1
        self._mark_saved(doc)
        self._steps.pop(doc.Name, None)
        self._open_notes[doc.Name] = notes
        _FRESH_DERIVED.solved.pop(doc.Name, None)
        return doc, True

    def _check_loaded(self, doc: Any, path: Path, declared: Declared) -> list[str]:
        """What the agent must know of how FreeCAD read the file: objects it left out (then the file
        is never written over), or a file from a newer FreeCAD."""
        running = freecad_version()
        self._not_loaded.pop(doc.Name, None)
        self._newer.pop(doc.Name, None)
        if not newer_than(declared.program, OWN_SOLVER_FLAGS) and declared.program:
            self._old_flags.add(doc.Name)  # saved before FreeCAD kept its sketches' solver flags
        else:
            self._old_flags.discard(doc.Name)
        without_class = {o.Name for o in doc.Objects if "Python" in o.TypeId and _class_missing(o)}
        lost = not_loaded(path, declared, {o.Name for o in doc.Objects}, without_class)
        if lost is not None:
            self._not_loaded[doc.Name] = lost
            return [lost.said(running)]
        major, minor = (int(p) for p in [*App.Version()[:2]])
        if newer_than(declared.program, (major, minor)):
            self._newer[doc.Name] = (path, version_of(declared.program))
            return [
                f"{echo(path.name)} was saved by FreeCAD {version_of(declared.program)}, newer than this "
                f"host's {running}: what that version added to its objects does not survive a save here, "
                "so the file is not written over (save_document with another filePath keeps the original)."
            ]
        return []

    def _import(self, path: Path) -> Any:
        suffix = path.suffix.lower()
        name = "".join(c if c.isalnum() else "_" for c in path.stem) or "Imported"
        doc = App.newDocument(name)
        doc.Label = path.stem
        try:
            if suffix in (".step", ".stp", ".iges", ".igs"):
                import Import

                Import.insert(str(path), doc.Name)
            elif suffix in (".brep", ".brp"):
                import Part

                Part.insert(str(path), doc.Name)
            elif suffix == ".dxf":
                import importDXF

                importDXF.insert(str(path), doc.Name)
            else:
                import Mesh

                Mesh.insert(str(path), doc.Name)
            doc.recompute()
        except Exception as exc:
            App.closeDocument(doc.Name)
            raise FreeCADError(
                f"FreeCAD could not import {echo(path.name)}: {echo(str(exc), 120)}. Check that the file is "
                "complete.",
                "invalid",
            ) from None
        if not doc.Objects:
            App.closeDocument(doc.Name)
            raise FreeCADError(
                f"FreeCAD imported nothing from {echo(path.name)}: it holds no shapes FreeCAD can read.",
                "invalid",
            )
        doc.clearUndos()
        self._sources[doc.Name] = path
        return doc

    def open(self, path: Path) -> Opened:
        self._settle()
        doc, is_new = self._open(path)
        self._activate(doc)
        shapes = sum(1 for o in doc.Objects if hasattr(o, "Shape"))
        summary = f"{len(doc.Objects)} objects, {shapes} with shapes"
        note = ""
        if path.suffix.lower() != ".fcstd" and is_new:
            note = "It was imported into a new document: save it with save_document(filePath='....FCStd')."
        warnings = tuple(self._open_notes.get(doc.Name, ())) if is_new else ()
        return Opened(self.title(doc), summary, already_open=not is_new, note=note, warnings=warnings)

    def activate(self, document: str) -> str:
        doc = self._find(document)
        self._activate(doc)
        return self.title(doc)

    def _find(self, document: str) -> Any:
        """An open document by title, name, label or path."""
        docs = self._documents()
        wanted = document.strip()
        try:
            as_path = Path(wanted).expanduser().resolve()
        except (OSError, RuntimeError, ValueError):
            as_path = None
        for doc in docs:
            if wanted in (self.title(doc), doc.Name, doc.Label, doc.FileName) or (
                as_path is not None and doc.FileName and Path(doc.FileName).resolve() == as_path
            ):
                return doc
        names = ", ".join(self.title(d) for d in docs) or "none"
        raise FreeCADError(
            f"No open document is called {echo(document)}. Open documents: {names}.", "not_found"
        )

    def close(self, document: str | None, discard: bool) -> Closed:
        doc = self._find(document) if document is not None else self.active_document()
        title, modified = self.title(doc), self.modified(doc)
        if modified and not discard:
            raise unsaved_changes(title, "document")
        path, name = doc.FileName or None, doc.Name
        was_active = App.ActiveDocument is doc
        App.closeDocument(name)  # its window too, without asking: the check above asked
        for kept in (self._sources, self._saved, self._unmodified_at, self._open_notes, self._newer):
            kept.pop(name, None)  # a later document may get the same name
        self._old_flags.discard(name)
        left = self._documents()
        if was_active and left:
            self._activate(left[-1])
        return Closed(title, path, discarded=modified)

    def save(self, target: Path | None) -> Saved:
        doc = self.active_document()
        if target is None and not doc.FileName:
            raise FreeCADError(
                f"{self.title(doc)} has never been saved as a FreeCAD document: call save_document with a "
                "filePath ending in .FCStd.",
                "invalid",
            )
        lost = self._not_loaded.get(doc.Name)
        if lost is not None and (target or Path(doc.FileName)).resolve() == lost.path.resolve():
            raise FreeCADError(
                f"Not saved: writing {self.title(doc)} over {echo(lost.path.name)} would drop the "
                f"{lost.count} object(s) this FreeCAD did not load whole from it (freecad://model/warnings "
                "names them). Call save_document with a filePath to another .FCStd file.",
                "invalid",
            )
        newer = self._newer.get(doc.Name)
        if newer is not None and (target or Path(doc.FileName)).resolve() == newer[0].resolve():
            raise FreeCADError(
                f"Not saved: {echo(newer[0].name)} was written by FreeCAD {newer[1]}, and this host's "
                f"FreeCAD {freecad_version()} would write it without what that version added (properties "
                "its objects gained, FreeCAD's element maps). Call save_document with a filePath to another "
                ".FCStd file.",
                "invalid",
            )
        # without its window FreeCAD writes no view data: keep the file's (read before it is written over)
        view = viewdata.read(Path(doc.FileName)) if self.gui is None and doc.FileName else None
        try:
            if target is None:
                doc.save()
            else:
                doc.saveAs(str(target))
        except Exception as exc:
            raise FreeCADError(f"FreeCAD could not save {self.title(doc)}: {echo(str(exc), 160)}.") from None
        self._sources.pop(doc.Name, None)
        self._mark_saved(doc)
        if self.gui is not None:
            self.gui.saved(doc)
        written = Path(doc.FileName)
        kept = viewdata.keep(doc, written, view) if self.gui is None else ""
        notes = [kept, _links_note(written, saved=True)]
        return Saved(self.title(doc), written, " ".join(n for n in notes if n))

    # code and history ----------------------------------------------------------------------------
    def namespace(self, doc: Any) -> dict[str, Any]:
        """A fresh namespace for one script on ``doc``."""
        if self._modules is None:
            import Part
            import Sketcher

            modules: dict[str, Any] = {
                "App": App,
                "FreeCAD": App,
                "Part": Part,
                "Sketcher": Sketcher,
                "Vector": App.Vector,
                "Placement": App.Placement,
                "Rotation": App.Rotation,
            }
            for lazy in ("PartDesign", "Draft", "Arch", "Mesh", "Spreadsheet"):
                modules[lazy] = LazyModule(lazy)
            if self.gui is not None:
                import FreeCADGui

                modules["Gui"] = modules["FreeCADGui"] = FreeCADGui
            self._modules = modules
        return {"__name__": "__agent__", **self._modules, "doc": doc}

    def script(self, step_name: str) -> FreeCADScriptRun:
        return FreeCADScriptRun(self, self.active_document(), step_name)

    @contextlib.contextmanager
    def preview_place(self) -> Iterator[list[str]]:
        """Where a preview runs: the active document itself when it has no redo steps; else a hidden
        copy of it, made the active document for the run (FreeCAD drops a document's redo steps at
        the first change of any transaction, aborted or not, so a preview in the document itself
        would take them). The copy is the document saved and read back; when it does not read back
        as the document (e.g. links to files beside it), the preview runs in place and says that
        the redo steps went."""
        doc = self.active_document()
        redo = list(doc.RedoNames)
        if not redo:
            yield []
            return
        folder = tempfile.mkdtemp(prefix="cadmcp-preview-")
        try:
            copy = self._copy(doc, Path(folder) / "preview.FCStd")
        except Exception as exc:
            shutil.rmtree(folder, ignore_errors=True)
            yield [
                f"The preview ran in {self.title(doc)} itself, since a copy to preview in could not be "
                f"made ({echo(str(exc), 100)}): FreeCAD dropped its {len(redo)} redo step(s)."
            ]
            return
        self._preview_copy, self._preview_of = copy, doc
        try:
            place = "Previewed in a copy of the document, so its redo steps stay"
            if self.gui is not None:
                place += "; the after-picture is drawn from the tessellated shapes (the copy has no 3D view)"
            yield [place + "."]
        finally:
            self._preview_copy = self._preview_of = None
            self._unmodified_at.pop(copy.Name, None)
            self._steps.pop(copy.Name, None)
            with contextlib.suppress(Exception):
                App.closeDocument(copy.Name)
            shutil.rmtree(folder, ignore_errors=True)
            self._activate(doc)

    def _copy(self, doc: Any, path: Path) -> Any:
        """``doc`` saved to ``path`` and opened hidden as the active document, its touched marks as
        the document's; raises (nothing left open) when it does not read back as the document."""
        from cadmcp.host.builtins.preview import revision
        from cadmcp.hosts.freecad.inventory import inventory

        doc.saveCopy(str(path))
        copy = App.openDocument(str(path), True)
        try:
            copy.UndoMode = 1
            restore_marks(copy, touched(doc))
            if revision(inventory(copy)) != revision(inventory(doc)):
                raise ValueError("the saved copy reads back differently, e.g. links to files beside it")
        except Exception:
            with contextlib.suppress(Exception):
                App.closeDocument(copy.Name)
            self._activate(doc)
            raise
        App.setActiveDocument(copy.Name)
        return copy

    def steps(self, doc: Any) -> DocumentSteps:
        """What is known about ``doc``'s undo steps beyond FreeCAD's names."""
        steps = self._steps.get(doc.Name)
        if steps is None:
            steps = self._steps[doc.Name] = DocumentSteps(self.undo_depth)
        return steps

    def inventory(self, baseline: Any = None) -> dict[str, Any]:
        """Every object of the active document, for previews (:mod:`cadmcp.host.builtins.preview`)."""
        from cadmcp.hosts.freecad.inventory import inventory

        return inventory(self.active_document())

    def history(self) -> FreeCADUndoStack:
        doc = self.active_document()
        return FreeCADUndoStack(doc, self.steps(doc))

    @contextlib.contextmanager
    def transaction(self, name: str) -> Iterator[Any]:
        """Edits in the block become one undo step ``name`` of the active document (recomputed).

        An exception inside the block aborts the transaction (every change undone) and propagates.
        """
        run = FreeCADScriptRun(self, self.active_document(), name)
        run.begin()
        try:
            yield run.doc
        except BaseException:
            run.rollback()
            raise
        run.commit()

    def gui_busy(self, busy: bool, what: str) -> None:
        if self.gui is not None:
            self.gui.busy(busy, what)

    # views and resources -------------------------------------------------------------------------
    def screenshot(self, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        doc = self.active_document()
        shot = self._shot(doc, width, height, options)
        if problems := _recompute_problems(doc):  # FreeCAD keeps their last good shapes: say so
            shot.notes.append(
                f"[IN ERROR] {len(problems)} object(s) failed their last recompute "
                f"({'; '.join(problems[:3])}): FreeCAD keeps their last good shape, so the picture may not "
                "show the latest change. freecad://model/warnings lists them."
            )
        if waiting := sorted(touched(doc) - invalid(doc)):  # FreeCAD draws what it last computed
            named = ", ".join(waiting[:5]) + (f" and {len(waiting) - 5} more" if len(waiting) > 5 else "")
            shot.notes.append(
                f"[NOT RECOMPUTED] {len(waiting)} object(s) wait for a recompute ({named}): they are "
                "drawn as last computed, not yet following what changed; a script running doc.recompute() "
                "brings them up to date."
            )
        lost = self._not_loaded.get(doc.Name)
        if lost is not None and lost.classless:
            names = sorted(lost.classless)
            named = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            shot.notes.append(
                f"[SAVED SHAPES] {len(names)} add-on object(s) whose add-on is not installed here ({named}) "
                "are drawn with the shapes saved in the file: they do not recompute here."
            )
        return shot

    def _shot(self, doc: Any, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        view = options.get("view", "isometric")
        view = VIEW_ALIASES.get(view, view)
        if self.gui is not None and doc is not self._preview_copy:  # a hidden copy has no 3D view
            try:
                return Shot(*self.gui.screenshot(doc, width, height, view))
            except Exception as exc:  # no usable 3D view: fall back to the tessellation, and say so
                shot = self._rendered(doc, width, height, view, options.get("mark"))
                shot.notes.insert(
                    0,
                    f"[NO 3D VIEW] The GUI could not draw ({echo(str(exc), 100)}); drawn from the "
                    "tessellated shapes instead.",
                )
                return shot
        return self._rendered(doc, width, height, view, options.get("mark"))

    def _rendered(self, doc: Any, width: int, height: int | None, view: str, mark: Any = None) -> Shot:
        """The tessellated shapes drawn; a blank image saying why when even that fails (never an error)."""
        try:
            from cadmcp.hosts.freecad.render import render_document

            marked = frozenset(str(m) for m in mark[:500]) if isinstance(mark, list) else frozenset()
            png, notes, coverage = render_document(
                doc, self.title(doc), width, height, "isometric" if view == "current" else view, marked
            )
            if coverage is not None and coverage.get("drawnCount") == 0:  # only the caption is drawn
                coverage = {**coverage, "blank": True}
                notes = notes or ["[BLANK VIEW] Nothing to draw: the document has no objects."]
            return Shot(png, notes, coverage)
        except Exception as exc:
            from cadmcp.host.builtins.raster import blank_png

            return Shot(
                blank_png(width, height or round(width * 0.75)),
                [
                    f"[NO IMAGE] The shapes could not be drawn here ({type(exc).__name__}: "
                    f"{echo(str(exc), 120)}); FreeCAD's Python needs numpy and Pillow (python3-numpy, "
                    "python3-pil) for headless views."
                ],
            )

    def cheatsheet(self) -> str:
        import importlib.resources

        return (
            importlib.resources.files("cadmcp.hosts.freecad")
            .joinpath("cheatsheet.md")
            .read_text(encoding="utf-8")
        )

    def versions(self) -> dict[str, Any]:
        import sys

        import Part

        version = App.Version()
        return {
            "freecad": freecad_version(),
            "freecad_build": " ".join(str(v) for v in version[3:4] + version[5:6] if v),
            "opencascade": getattr(Part, "OCC_VERSION", "unknown"),
            "gui": self.gui is not None,
            "freecad_python": sys.executable,
            "undo_depth": self.undo_depth,
            "undo_depth_env": UNDO_DEPTH_ENV,
        }

    def context(self) -> dict[str, Any]:
        from cadmcp.hosts.freecad.model import model_context

        doc = self.active_document()
        current = None if doc.Name not in self._old_flags else _FRESH_DERIVED.solved.get(doc.Name, set())
        return model_context(doc, self.title(doc), self.modified(doc), solved=current)

    def warnings(self) -> dict[str, Any]:
        from cadmcp.hosts.freecad.model import model_warnings

        doc = self.active_document()
        return model_warnings(doc, self.title(doc), self._not_loaded.get(doc.Name))

    def schedules(self) -> dict[str, Any]:
        from cadmcp.hosts.freecad.model import list_schedules

        doc = self.active_document()
        return {"document": self.title(doc), "schedules": list_schedules(doc)}

    def schedule_preview(self, schedule_id: str) -> str:
        from cadmcp.hosts.freecad.model import schedule_csv

        return schedule_csv(self.active_document(), schedule_id)

    def element(self, element_id: str) -> dict[str, Any]:
        from cadmcp.hosts.freecad.model import element_info

        return element_info(self.active_document(), element_id)

    def warm_up(self) -> Iterator[str]:
        """Open the documents given at start-up, then import what the first calls need."""
        self._settle()
        yield "documents"
        import Part  # noqa: F401
        import Sketcher  # noqa: F401

        self.namespace(App.ActiveDocument) if App.ActiveDocument is not None else None
        yield "modules"
        import numpy  # noqa: F401
        import PIL.Image  # noqa: F401

        from cadmcp.hosts.freecad import model, render  # noqa: F401

        yield "render"


def choose_undo_depth(gui: bool) -> int:
    """The undo steps FreeCAD keeps per document.

    With its window FreeCAD reads its preference "Maximum Undo/Redo steps" (``MaxUndoSize``,
    default 20) when it makes a document: CADMCP_UNDO_DEPTH, when set, is written there first.
    Without the window every document keeps FreeCAD's fixed 20, whatever is asked.
    """
    if not gui:
        return HEADLESS_UNDO_DEPTH
    group = App.ParamGet(DOCUMENT_PREFERENCES)
    if os.environ.get(UNDO_DEPTH_ENV, "").strip():
        group.SetInt("MaxUndoSize", undo_depth())
    return max(1, group.GetInt("MaxUndoSize", HEADLESS_UNDO_DEPTH))
