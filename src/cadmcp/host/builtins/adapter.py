"""What an application implements to get the built-in surface: the adapter protocol.

The built-in tools and resources (``cadmcp.host.builtins.surface``) are written once, over
this protocol. An application adapter supplies a :class:`HostProfile` (names and the few
sentences that differ per application) and the operations below; it never registers a tool.
Every method runs on the application thread, one call at a time.

Errors an agent can act on are raised as :class:`HostError` (or a subclass) with a message
that says what to do next; the surface turns them into the protocol's error envelopes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from typing_extensions import TypedDict

from cadmcp.host.history import Touched

__all__ = [
    "DocumentAdapter",
    "DocumentInfo",
    "Domain",
    "HostError",
    "HostProfile",
    "Opened",
    "RecordedStep",
    "RequestedDocument",
    "Saved",
    "ScreenshotOption",
    "ScriptRun",
    "Shot",
    "UndoStack",
]

PREVIEW_ROWS = 30
"""Rows a schedule preview shows (`<app>://schedule/{id}/preview`); each adapter cuts there."""

ErrorKind = Literal["invalid", "not_found", "unavailable", "failed"]


class HostError(Exception):
    """A problem the agent can act on; the message says what to do next.

    ``kind`` picks the envelope: ``not_found`` (an unknown element or schedule id: the resource
    answers "not found"), ``invalid`` (a bad argument), ``unavailable`` (no document open, a
    document failed to load), ``failed`` (the application could not do it).
    """

    kind: ErrorKind = "failed"
    supported: tuple[str, ...] = ()
    """What the application does accept, when the problem is an unsupported kind of input."""
    fix: str = ""
    """What the caller can do about it, in one sentence (also said in the message)."""

    def __init__(
        self,
        message: str,
        kind: ErrorKind | None = None,
        *,
        supported: tuple[str, ...] = (),
        fix: str = "",
    ) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        self.supported = supported
        self.fix = fix


class NotFound(HostError):
    """An element, schedule or document the caller named does not exist."""

    kind: ErrorKind = "not_found"


@dataclass(frozen=True)
class Domain:
    """Words of the application's domain, for search (`io.cadmcp/domain`, docs: search-meta)."""

    names: tuple[str, ...]
    """What people call the application or its file types ("FreeCAD", "FCStd")."""
    terms: tuple[str, ...]
    """Words and phrases of its domain ("sketch", "pad", "body")."""

    def as_meta(self) -> dict[str, list[str]]:
        return {"names": list(self.names[:200]), "terms": list(self.terms[:200])}


@dataclass(frozen=True)
class ScreenshotOption:
    """An application-specific argument of ``view_screenshot`` (beside width and height).

    ``annotation`` is the Python type of the value (``str | None``, ``list[float] | None``,
    ``Literal["a", "b"]``...); ``description`` is mandatory: every parameter is explained.
    """

    name: str
    annotation: Any
    default: Any
    description: str
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Values of ``annotation`` that name another (``{"isometric": "axonometric"}``): taken, and
    marked in the schema (`cadmcp.wire.meta.ALIASES`) so that a person's choice lists leave them out."""


COMPLETE_OPTION = ScreenshotOption(
    "complete",
    bool,
    False,
    "False (default): answer within a few seconds, drawing what is prepared and naming in the notes what "
    "is not yet (a large document just opened); true: wait until everything is drawn, however long it "
    "takes, for an exact and complete picture.",
)
"""The ``complete`` option of hosts whose views are drawn in bounded time (IFC, DXF)."""


@dataclass(frozen=True)
class HostProfile:
    """The names and sentences that differ per application; everything else is the surface's."""

    app: str
    """Host application name as in the endpoint name (``DXF``, ``IFC``, ``FreeCAD``)."""
    scheme: str
    """URI scheme of the resources (``dxf`` gives ``dxf://model/context``)."""
    library: str
    """What the host drives, for titles: ``ezdxf 1.4.5``, ``FreeCAD 0.20.2``."""
    noun: str
    """What one document is called: ``drawing``, ``model``, ``document``."""
    file_kinds: str
    """The files open_document takes, as a phrase: ``a .dxf file (ASCII or binary)``."""
    save_suffixes: tuple[str, ...]
    """File name endings save_document accepts (``(".dxf",)``)."""
    scope: str
    """What execute_python_code puts in scope, as one sentence listing the names."""
    step_rule: str
    """How one script becomes one undo step in this application (one sentence)."""
    context_fields: str
    """What model/context holds (a phrase)."""
    warnings_fields: str
    """What model/warnings holds (a phrase)."""
    schedules_fields: str
    """Which schedules exist (a phrase)."""
    element_ids: str
    """How elements are addressed in element/{elementId} (a phrase with an example)."""
    element_fields: str
    """What element/{elementId} holds (a phrase)."""
    screenshot_view: str
    """What view_screenshot shows by default (a sentence)."""
    screenshot_options: tuple[ScreenshotOption, ...] = ()
    domain: Domain = field(default_factory=lambda: Domain((), ()))
    open_note: str = ""
    """A sentence appended to open_document's description (formats, audits...)."""
    history_note: str = ""
    """A sentence added to navigate_history's description (whose undo stack it is)."""
    memory_factor: float = 20.0
    """Bytes of memory the application needs per byte of file: bigger files are refused unread."""


class DocumentInfo(TypedDict):
    """One open document as list_documents and the host state show it."""

    title: str
    path: str | None
    active: bool
    modified: bool


class RequestedDocument(TypedDict, total=False):
    """What became of one document given at start-up (host state ``requested``, launch_host's answer)."""

    path: str
    opened: bool
    title: str
    """The open document's title (when ``opened``)."""
    problem: str
    """Why it did not open, with what to do next (when not ``opened``)."""
    supported: list[str]
    """What the application opens instead (when that is why)."""
    fix: str
    warnings: list[str]
    """What the agent must know about a document that did open (e.g. a schema read as another)."""
    lacking: str
    """What of the file the open document lacks (`Opened.lacking`)."""


def requested_outcome(
    path: Path | str,
    title: str | None = None,
    error: Exception | None = None,
    warnings: list[str] | None = None,
) -> RequestedDocument:
    """A :class:`RequestedDocument`: opened as ``title``, or not, for ``error``."""
    if error is None:
        outcome = RequestedDocument(path=str(path), opened=True, title=str(title))
        if warnings:
            outcome["warnings"] = list(warnings)
        return outcome
    outcome = RequestedDocument(path=str(path), opened=False, problem=str(error)[:600])
    if isinstance(error, HostError):
        if error.supported:
            outcome["supported"] = list(error.supported)
        if error.fix:
            outcome["fix"] = error.fix
    return outcome


@dataclass(frozen=True)
class Opened:
    """What the adapter did for open_document."""

    title: str
    summary: str
    """A short description for the message: ``AC1032, 41 modelspace entities``."""
    already_open: bool = False
    note: str = ""
    """An extra sentence (``Audit fixed 2 issues (see dxf://model/warnings).``)."""
    warnings: tuple[str, ...] = ()
    """What the agent must know about how it was read (said after the message)."""
    lacking: str = ""
    """What of the file the open document lacks (what the reader left out), or '': such a file is
    not saved over (`cadmcp.host.builtins.ondisk`)."""


@dataclass(frozen=True)
class Saved:
    """Where save_document wrote the active document."""

    title: str
    path: Path
    note: str = ""
    """An extra sentence: what was saved where and why (a DWG saved as DXF beside it)."""


@dataclass(frozen=True)
class Closed:
    """What close_document closed."""

    title: str
    path: str | None
    discarded: bool = False
    """Whether it had unsaved changes, dropped because the call said ``discard``."""


def unsaved_changes(title: str, noun: str) -> HostError:
    """The refusal to close a document with unsaved changes, saying how to keep or drop them."""
    return HostError(
        f"{title} has unsaved changes, so it was not closed. Call save_document to keep them (activate "
        f"it first if it is not the active {noun}), or close_document with discard=true to drop them.",
        "invalid",
    )


@dataclass(frozen=True)
class RecordedStep:
    """A script run recorded as one undo step."""

    name: str
    detail: str = ""
    """What changed, for the note: ``3 created, 1 deleted``."""
    warning: str = ""
    undo_steps: int | None = None
    """Steps that can be undone now (this one included), when known."""
    redo_steps: int = 0
    depth: int | None = None
    """Steps the history keeps, when known."""
    dropped: str = ""
    """Name of the oldest step, if it fell off the history to make room for this one."""
    recorded: bool = True
    """False when the run made no step but has a warning to give (it changed another document)."""


@dataclass
class Shot:
    """A rendered view: PNG bytes and notes the agent must see (e.g. shapes that failed)."""

    png: bytes
    notes: list[str] = field(default_factory=list)
    coverage: dict[str, Any] | None = None
    """What the view shows and leaves out, as the result's structured content (JSON-able), e.g.
    ``{"drawn": 31, "omitted": [{"object": "Line", "reason": "no faces"}]}``."""


@runtime_checkable
class UndoStack(Protocol):
    """One document's undo history as navigate_history sees it: named steps, one move at a time."""

    def undo_names(self) -> list[str]:
        """Names of the steps that can be undone, most recent first."""
        ...

    def redo_names(self) -> list[str]:
        """Names of the steps that can be redone, next first."""
        ...

    def depth(self) -> int:
        """How many steps the history keeps (older ones fall off)."""
        ...

    def dropped(self) -> int:
        """How many steps fell off the history since the document was opened."""
        ...

    def undo(self) -> None:
        """Undo the most recent step; raise HostError if it cannot."""
        ...

    def redo(self) -> None:
        """Redo the next undone step; raise HostError if it cannot."""
        ...


@runtime_checkable
class TouchingStack(Protocol):
    """An :class:`UndoStack` that can say which objects its most recent step changed."""

    def touched(self) -> Touched | None:
        """What the most recent undo step created, modified and deleted (None: it cannot say)."""
        ...


@runtime_checkable
class NumberedStack(Protocol):
    """An :class:`UndoStack` that numbers its steps in the order they were recorded."""

    def undo_ids(self) -> list[int | None]:
        """The undoable steps' numbers, most recent first (None: one it cannot number): a step undone
        and another of the same name made is told apart from it."""
        ...


class ScriptRun(Protocol):
    """One execute_python_code run against the active document: namespace and transaction.

    The surface calls ``begin()`` just before the code runs, then ``commit()`` after a
    successful run (None when the document did not change: no step, the redo stack is kept)
    or ``rollback()`` after an error or a timeout (True when there was something to undo).
    """

    namespace: dict[str, Any]

    def begin(self) -> None: ...

    def commit(self) -> RecordedStep | None: ...

    def rollback(self) -> bool: ...


class DocumentAdapter(Protocol):
    """An application behind the built-in surface. See docs/hosts/adapters.md."""

    profile: HostProfile
    application: Any
    """What toolset code gets from ``cadmcp.host.current().application``."""
    exec_timeout: float | None
    """Seconds before a runaway script is stopped; None: CADMCP_EXEC_TIMEOUT (default 60)."""

    # documents -------------------------------------------------------------------------------
    def pending(self) -> bool:
        """True while documents given at start-up are still to be read (host state: loading)."""
        ...

    def requested(self) -> list[RequestedDocument]:
        """What became of each document given at start-up, in order (empty while ``pending()``).

        Build each with :func:`requested_outcome`; a failure keeps its HostError's ``supported``
        and ``fix``. The launch answer is made of these: a document that did not open is never
        reported as ready.
        """
        ...

    def documents(self) -> list[DocumentInfo]:
        """The open documents in the order they were opened."""
        ...

    def open(self, path: Path) -> Opened:
        """Open ``path`` (checked to exist and be a readable file) or activate it if open."""
        ...

    def activate(self, document: str) -> str:
        """Make the document with this title or path active; return its title."""
        ...

    def save(self, target: Path | None) -> Saved:
        """Save the active document to its file, or save it as ``target`` (then it is that file)."""
        ...

    def close(self, document: str | None, discard: bool) -> Closed:
        """Close the document with this title or path (the active one when None), its undo history
        with it. One with unsaved changes only when ``discard``, else raise :func:`unsaved_changes`.
        When it was active, the one opened last of those left becomes active (none when none is)."""
        ...

    # code and history ------------------------------------------------------------------------
    def script(self, step_name: str) -> ScriptRun:
        """A fresh namespace and transaction hooks for one run on the active document."""
        ...

    def history(self) -> UndoStack:
        """The active document's undo stack."""
        ...

    # views and resources ---------------------------------------------------------------------
    def screenshot(self, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        """Render the active document; ``options`` holds the profile's screenshot options."""
        ...

    def cheatsheet(self) -> str: ...

    def versions(self) -> dict[str, Any]:
        """Versions of the application and the libraries the adapter runs on."""
        ...

    def context(self) -> dict[str, Any]: ...

    def warnings(self) -> dict[str, Any]: ...

    def schedules(self) -> dict[str, Any]: ...

    def schedule_preview(self, schedule_id: str) -> str:
        """CSV text (header and the first rows) of one schedule."""
        ...

    def element(self, element_id: str) -> dict[str, Any]: ...

    def warm_up(self) -> Iterator[str] | None:
        """Steps that make the first calls fast (each one short), or None."""
        ...
