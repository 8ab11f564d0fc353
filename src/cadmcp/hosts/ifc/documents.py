"""Open IFC documents: loading, saving, the active one, and undo steps built on IfcOpenShell transactions.

One script run is one IfcOpenShell transaction and one named step in the shared
:class:`cadmcp.host.history.History`. Both stacks have the same depth, so they drop their
oldest steps together and stay in lockstep.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cadmcp.fileinfo.ifcleftout import left_out_entities, left_out_text
from cadmcp.host.builtins.adapter import HostError, RequestedDocument, requested_outcome
from cadmcp.host.builtins.paths import check_document_path, reject_non_text
from cadmcp.host.history import History, Touched, undo_depth
from cadmcp.hosts.ifc.schemas import declared_schema_name
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    import ifcopenshell

MEMORY_FACTOR = 12.0
"""IfcOpenShell holds a model in roughly 12 bytes of memory per byte of IFC-SPF text."""
HISTORY_DEPTH = 64
"""Undo depth per document unless CADMCP_UNDO_DEPTH says otherwise (IfcOpenShell's own default)."""

IFC_SUFFIXES = (".ifc",)
_OTHER_FORMATS = {
    ".rvt": "a Revit project",
    ".rfa": "a Revit family",
    ".rte": "a Revit template",
    ".dwg": "an AutoCAD drawing",
    ".dxf": "a DXF drawing",
    ".ifczip": "a zipped IFC file",
    ".ifcxml": "an ifcXML file",
}
_state_ids = itertools.count(1)


class DocumentError(HostError):
    """A document could not be opened, found or saved; the message says what to do next."""


def touched_ids(transaction: Any) -> set[int]:
    """Step ids of every entity a transaction created, edited, deleted or re-linked."""
    ids: set[int] = set()
    for op in transaction.operations:
        if "id" in op:
            ids.add(op["id"])
        value = op.get("value")
        if isinstance(value, dict) and "id" in value:
            ids.add(value["id"])
        ids.update(op.get("inverses") or ())
    return ids


def changes_of(file: ifcopenshell.file, transaction: Any) -> Touched:
    """The step ids of the products (what views draw) a committed transaction created, edited and
    deleted; edits of their parts (a placement's point, a representation) are not traced up to them."""
    from ifcopenshell import ifcopenshell_wrapper

    schema = ifcopenshell_wrapper.schema_by_name(declared_schema_name(file))
    products: dict[str, bool] = {}

    def is_product(kind: Any) -> bool:
        if not isinstance(kind, str):
            return False
        if kind not in products:
            try:
                declaration = schema.declaration_by_name(kind)
            except (RuntimeError, ValueError):
                declaration = None
            while declaration is not None and declaration.name() != "IfcProduct":
                declaration = declaration.supertype()
            products[kind] = declaration is not None
        return products[kind]

    created: dict[str, None] = {}
    deleted: dict[str, None] = {}
    edited: dict[str, None] = {}
    for op in transaction.operations:
        value = op.get("value") if isinstance(op.get("value"), dict) else {}
        if op.get("action") == "create" and is_product(value.get("type")):
            created[str(value.get("id"))] = None
        elif op.get("action") == "delete" and is_product(value.get("type")):
            deleted[str(value.get("id"))] = None
        elif op.get("action") == "edit" and "id" in op:
            edited[str(op["id"])] = None
    modified = []
    for key in edited:
        if key in created or key in deleted or not key.isdigit():
            continue
        try:
            entity = file.by_id(int(key))
        except RuntimeError:  # gone since
            continue
        if entity.is_a("IfcProduct"):
            modified.append(key)
    return Touched(tuple(created), tuple(modified), tuple(k for k in deleted if k not in created))


class IfcStep:
    """One undoable script run: an IfcOpenShell transaction with a name."""

    def __init__(self, name: str, document: IfcDocument, transaction: Any) -> None:
        self.name = name
        self._document = document
        self._transaction = transaction
        self.state_before = document.state
        self.state_after = next(_state_ids)
        self.touched = touched_ids(transaction)
        self.changes = changes_of(document.file, transaction)
        """What it did to the model's products (ids as views and elements name them)."""

    def undo(self) -> None:
        f = self._document.file
        if not f.history or f.history[-1] is not self._transaction:
            raise DocumentError(
                "the model's transaction history no longer matches (was undo called in a script?)"
            )
        f.undo()
        self._document.state = self.state_before
        self._document.changed(self.touched)

    def redo(self) -> None:
        f = self._document.file
        if not f.future or f.future[-1] is not self._transaction:
            raise DocumentError("the model's redo history no longer matches (was redo called in a script?)")
        f.redo()
        self._document.state = self.state_after
        self._document.changed(self.touched)


class IfcDocument:
    """One open model with its path, undo history and a revision counter bumped on every change."""

    def __init__(self, file: ifcopenshell.file, path: Path | None, title: str) -> None:
        self.file = file
        self.history = History(max_depth=undo_depth(HISTORY_DEPTH))
        self.file.history_size = self.history.max_depth
        self.path = path
        self.title = title
        self.dropped_step = ""
        """The step that fell off the history when the last one was recorded, or ''."""
        self.revision = 0
        self.state = 0
        """Identifies the model's content: the newest applied step (0 = as opened)."""
        self._saved_state = 0
        self.listeners: list[Callable[[IfcDocument, set[int]], None]] = []
        self.read_warnings: list[str] = []
        """How the file was read, when not as it says (e.g. its schema read as another)."""
        self.lacking = ""
        """What of the file the open model lacks (entities IfcOpenShell left out), or ''."""
        self.disk_stamp: list[int] | None = None
        """Size and modification time of the file when it was read (None: not read from a file)."""

    @property
    def modified(self) -> bool:
        """True when the model differs from what was last opened or saved."""
        return self.state != self._saved_state

    def changed(self, touched: set[int]) -> None:
        """Note a change to the model (a commit, undo or redo touching ``touched`` entity ids)."""
        self.revision += 1
        for listener in self.listeners:
            listener(self, touched)

    # Transaction hooks for cadmcp.host.pyexec.run_code ------------------------------------
    def begin(self) -> IfcDocument:
        """Start the transaction a script runs in."""
        self.file.begin_transaction()
        return self

    def commit(self, name: str) -> str | None:
        """Close the script's transaction; record it as an undo step if it changed the model."""
        transaction = self.file.transaction
        if transaction is None or not transaction.operations:
            self.file.transaction = None  # read-only: keep the redo stack
            return None
        self.file.end_transaction()
        step = IfcStep(name, self, transaction)
        self.dropped_step = self.history.record(step)
        self.state = step.state_after
        self.changed(step.touched)
        return f"Recorded undo step {name!r} ({len(transaction.operations)} changes)."

    def rollback(self) -> str:
        """Revert everything the failed script did."""
        transaction = self.file.transaction
        touched = touched_ids(transaction) if transaction is not None else set()
        self.file.discard_transaction()
        if touched:
            self.changed(touched)
        return "[ROLLBACK] The model was left exactly as it was before the script ran."

    def save(self, path: Path | None = None) -> Path:
        """Write the model to ``path`` (save as) or to its own path."""
        target = path or self.path
        if target is None:
            raise DocumentError(
                f"{self.title!r} is a new document and has no file yet: call save_document with a filePath "
                "ending in .ifc."
            )
        target = target.expanduser().resolve()
        if target.suffix.lower() not in IFC_SUFFIXES:
            raise DocumentError(
                f"Cannot save as {echo(target.name)}: the file name must end in .ifc.", "invalid"
            )
        if not target.parent.is_dir():
            raise DocumentError(
                f"Cannot save to {echo(str(target), 160)}: the folder does not exist. Create it or choose "
                "another path.",
                "invalid",
            )
        if self.modified:
            _stamp_header(self.file)
        try:
            self.file.write(str(target))
        except OSError as exc:
            raise DocumentError(f"Could not write {echo(str(target), 160)}: {exc.strerror or exc}.") from exc
        self.path = target
        self.title = target.name
        self._saved_state = self.state
        return target


def _stamp_header(model: ifcopenshell.file) -> None:
    """Say in the header that the file was written now, by IfcOpenShell (FILE_NAME's time stamp and
    preprocessor): a model changed here no longer claims its exporter's date. Who made the data
    (author, organisation, originating system) stays as the file said."""
    import datetime

    import ifcopenshell

    with contextlib.suppress(Exception):  # a header IfcOpenShell cannot edit is written as it was
        name = model.header.file_name
        name.time_stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        name.preprocessor_version = f"IfcOpenShell {ifcopenshell.version}"


def check_ifc_path(path: Path | str) -> Path:
    """Cheap, bounded checks (no parsing) that ``path`` is a readable IFC-SPF file; returns it resolved."""
    raw = str(path)
    name = Path(raw.strip()).name
    suffix = Path(raw.strip()).suffix.lower()
    if suffix in _OTHER_FORMATS and suffix not in IFC_SUFFIXES:
        raise DocumentError(
            f"{echo(name)} is {_OTHER_FORMATS[suffix]}, not an IFC model. The IFC host opens .ifc files; "
            "export the model to IFC first, or use read_file_info for its metadata.",
            "invalid",
        )
    resolved = check_document_path(
        raw, kind="an IFC file (.ifc)", memory_factor=MEMORY_FACTOR, error=DocumentError
    )
    if suffix not in IFC_SUFFIXES:
        raise DocumentError(
            f"{echo(resolved.name)} is not an .ifc file. The IFC host opens IFC-SPF files ending in .ifc.",
            "invalid",
        )
    with resolved.open("rb") as stream:
        head = stream.read(64)
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"ISO-10303-21"):
        raise DocumentError(
            f"{echo(resolved.name)} is not an IFC-SPF file (it does not start with 'ISO-10303-21;'). It may "
            "be damaged or another format renamed to .ifc.",
            "invalid",
        )
    reject_non_text(resolved, "an IFC-SPF file", DocumentError)
    return resolved


def load_model(path: Path) -> tuple[ifcopenshell.file, list[str], str]:
    """Open an IFC file from disk, with what the agent must know about how it was read and what
    of it the model lacks ('' when nothing: else it is not saved over), or raise
    :class:`DocumentError` saying why it cannot be opened.

    A release variant IfcOpenShell has no schema for (``IFC4X3_RC2``, ``IFC2X3_TC1``...) is read
    with its release's schema, and the warnings say so (see :mod:`cadmcp.hosts.ifc.schemas`);
    text that is not STEP-encoded is read as its writer meant it (:mod:`cadmcp.hosts.ifc.encoding`).
    The parser's message is clipped: it may quote the file's content.
    """
    from cadmcp.hosts.ifc import encoding

    path = check_ifc_path(path)
    raw = encoding.scan(path)
    with encoding.readable(path, raw) as source:
        model, warnings, lacking = _parsed(source, path)
    return model, [raw.warning(path.name), *warnings] if raw else warnings, lacking


def _parsed(source: Path, path: Path) -> tuple[ifcopenshell.file, list[str], str]:
    """`load_model` of `source`, a readable copy of `path` or `path` itself."""
    import ifcopenshell

    from cadmcp.hosts.ifc import schemas

    try:
        return ifcopenshell.open(str(source)), [], ""
    except ifcopenshell.SchemaError:
        declared = schemas.file_schema(source) or "?"
        release = schemas.reader_schema(declared)
        if release is None or release == declared:
            raise _unsupported_schema(path, declared) from None
        try:
            model, mapped = schemas.read_as(source, declared, release)
        except Exception as exc:
            raise DocumentError(
                f"IfcOpenShell could not parse {echo(path.name)} as {release} (it names "
                f"{echo(declared, 40)}): {echo(str(exc), 120)}.",
                "invalid",
            ) from exc
        return model, mapped.warnings(), mapped.lacking()
    except Exception as exc:
        if _cut_short(path):
            raise DocumentError(
                f"IfcOpenShell could not parse {echo(path.name)}, which ends without END-ISO-10303-21: the "
                "file looks cut short (not written or copied whole). Export or copy it again; "
                "read_file_info reads its header meanwhile.",
                "invalid",
            ) from exc
        raise DocumentError(
            f"IfcOpenShell could not parse {echo(path.name)}: {echo(str(exc), 120)}. The file may be "
            "damaged; read_file_info says what its header and counts show.",
            "invalid",
        ) from exc


def _left_out_warning(name: str, lacking: str) -> str:
    return (
        f"IfcOpenShell left out {lacking} of {echo(name)}, and every reference to them: the open model "
        "lacks them, saving it writes none of them, and it will not be saved over the file "
        "(save_document(filePath=...) saves it elsewhere). The application that wrote the file used "
        "classes its schema does not have; export it again from there for a complete model."
    )


def _cut_short(path: Path) -> bool:
    """Whether an IFC-SPF file lacks its closing END-ISO-10303-21 (it was cut short)."""
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, path.stat().st_size - 4096))
            return b"END-ISO-10303-21" not in stream.read().upper()
    except OSError:
        return False


def _unsupported_schema(path: Path, declared: str) -> DocumentError:
    from cadmcp.hosts.ifc.schemas import supported_schemas

    supported = supported_schemas()
    fix = (
        f"Export the model again as {' or '.join(supported)} from the application that made it (or "
        "convert it), then open that file; read_file_info shows its header meanwhile."
    )
    return DocumentError(
        f"{echo(path.name)} uses the IFC schema {echo(declared, 40)}, which this IfcOpenShell does not "
        f"read (it reads {', '.join(supported)} and their release variants such as IFC4X3_RC1-RC4, "
        f"IFC4X3_ADD1 and IFC2X3_TC1). The file is not damaged. {fix}",
        "invalid",
        supported=supported,
        fix=fix,
    )


class Workspace:
    """The documents open in this host and which one is active.

    Documents given at start-up can be *deferred*: they load (IfcOpenShell import and parse) on
    first use, so the host is ready to serve its catalog before the model is parsed.
    """

    def __init__(self) -> None:
        self._documents: list[IfcDocument] = []
        self._active: IfcDocument | None = None
        self._pending: list[Path | None] = []
        self._deferred_error: DocumentError | None = None
        self.listeners: list[Callable[[IfcDocument, set[int]], None]] = []
        self.requested: list[RequestedDocument] = []
        """What became of each document given at start-up, once read."""

    def defer(self, paths: list[Path]) -> None:
        """Load ``paths`` (already checked) on first use, the first one active; none: a new project."""
        self._pending = list(paths) if paths else [None]

    def preload(self) -> bool:
        """Load the deferred documents now (warm-up); False if one failed: the next real use reports it."""
        try:
            self._load_pending()
        except DocumentError as exc:
            self._deferred_error = exc
        return self._deferred_error is None

    def _settle(self) -> None:
        if self._pending:
            self.preload()
        if self._deferred_error is not None and not self._documents:  # said until a model is open
            hint = "No model is open: call open_document with an .ifc file."
            raise DocumentError(f"{self._deferred_error} {hint}")

    def _load_pending(self) -> None:
        pending, self._pending = self._pending, []
        errors: list[str] = []
        loaded: list[IfcDocument] = []
        for path in pending:
            try:
                doc = self.new() if path is None else self.open(str(path))[0]
            except DocumentError as exc:
                errors.append(str(exc))
                self.requested.append(requested_outcome(str(path), error=exc))
            else:
                loaded.append(doc)
                if path is not None:
                    outcome = requested_outcome(str(path), doc.title, warnings=doc.read_warnings)
                    if doc.lacking:
                        outcome["lacking"] = doc.lacking
                    self.requested.append(outcome)
        if loaded:
            self._active = loaded[0]
        if errors:
            raise DocumentError("Could not open a document given at start-up: " + " ".join(errors))

    @property
    def documents(self) -> list[IfcDocument]:
        """Open documents in the order they were opened."""
        self._settle()
        return self._documents

    @property
    def active(self) -> IfcDocument | None:
        """The document tools and resources work on."""
        self._settle()
        return self._active

    @active.setter
    def active(self, doc: IfcDocument | None) -> None:
        self._active = doc

    def _unique_title(self, title: str) -> str:
        taken = {d.title for d in self._documents}
        if title not in taken:
            return title
        stem, suffix = Path(title).stem, Path(title).suffix
        return next(
            f"{stem} ({n}){suffix}" for n in itertools.count(2) if f"{stem} ({n}){suffix}" not in taken
        )

    def add(self, file: ifcopenshell.file, path: Path | None, title: str) -> IfcDocument:
        """Register a loaded model and make it active."""
        doc = IfcDocument(file, path, self._unique_title(title))
        doc.listeners.extend(self.listeners)
        self._documents.append(doc)
        self._active = doc
        self._deferred_error = None
        return doc

    def open(self, file_path: str) -> tuple[IfcDocument, bool]:
        """Open (or re-activate, if open) the model at ``file_path``; returns it and whether it is new."""
        if not file_path or not file_path.strip():
            raise DocumentError("filePath is empty: give the path of an .ifc file.")
        resolved = check_ifc_path(file_path.strip())
        if self._pending:
            self.preload()  # opening is the way out of a start-up failure: it must not raise it
        for doc in self._documents:
            if doc.path == resolved:
                self._active = doc
                return doc, False
        try:
            disk_stamp: list[int] | None = stamp(resolved)
        except OSError:
            disk_stamp = None
        model, warnings, lacking = load_model(resolved)
        doc = self.add(model, resolved, resolved.name)
        doc.read_warnings = warnings
        doc.lacking = lacking  # what a release variant's mapping (`schemas.read_as`) left out
        if not lacking and (left_out := left_out_entities(resolved, model)):
            doc.lacking = left_out_text(left_out, model.schema_identifier)
            doc.read_warnings = [*warnings, _left_out_warning(resolved.name, doc.lacking)]
        doc.disk_stamp = disk_stamp
        return doc, True

    def close(self, doc: IfcDocument) -> None:
        """Forget an open model; when it was active, the one opened last of the others is."""
        self._documents.remove(doc)
        if self._active is doc:
            self._active = self._documents[-1] if self._documents else None

    def new(self, name: str = "Untitled") -> IfcDocument:
        """A new, unsaved IFC4 project with one storey, ready for modelling."""
        from cadmcp.hosts.ifc.modelgen import new_project

        return self.add(new_project(name).file, None, f"{name}.ifc")

    def require_active(self) -> IfcDocument:
        """The active document, or a clear error when none is open."""
        if self.active is None:
            raise DocumentError(
                "No document is open: call open_document with the path of an .ifc file.", "unavailable"
            )
        return self.active

    @property
    def pending(self) -> bool:
        """True while documents deferred at start-up have not been loaded yet."""
        return bool(self._pending)

    def find(self, key: str) -> IfcDocument:
        """A document by title or path; the error lists what is open."""
        key = key.strip()
        for doc in self.documents:
            if key == doc.title or (doc.path is not None and key == str(doc.path)):
                return doc
        try:
            resolved = Path(key).expanduser().resolve()
        except (OSError, ValueError):
            resolved = None
        for doc in self.documents:
            if resolved is not None and doc.path == resolved:
                return doc
        listing = ", ".join(repr(d.title) for d in self.documents) or "none"
        raise DocumentError(
            f"No open document is called {echo(key)}. Open documents: {listing}.", "not_found"
        )


def stamp(path: Path) -> list[int]:
    """What identifies a file's content on disk here: size and modification time."""
    status = path.stat()
    return [status.st_size, status.st_mtime_ns]
