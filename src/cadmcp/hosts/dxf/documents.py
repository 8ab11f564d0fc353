"""Open DXF documents: loading with audit, the active document, saving, per-document history."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cadmcp.host.history import History

if TYPE_CHECKING:
    from ezdxf.audit import Auditor
    from ezdxf.document import Drawing

__all__ = ["DocumentSet", "DxfDocument", "DxfHostError", "load_drawing"]

_DWG_MAGIC = b"AC10"
_BINARY_DXF_MAGIC = b"AutoCAD Binary DXF"


class DxfHostError(Exception):
    """A problem the agent can act on; the message says what to do next."""


@dataclass
class DxfDocument:
    """One open drawing with its own history and execution namespace."""

    doc: Drawing
    path: Path | None
    title: str
    auditor: Auditor | None = None
    history: History = field(default_factory=History)
    modified: bool = False
    namespace: dict[str, Any] = field(default_factory=dict)

    def display_path(self) -> str | None:
        return str(self.path) if self.path else None


def check_drawing_path(file_path: str) -> Path:
    """Cheap checks before reading (name, existence, DWG or non-DXF content); raises DxfHostError."""
    if not file_path or not file_path.strip():
        raise DxfHostError("filePath is empty. Pass the path of a .dxf file.")
    path = Path(file_path).expanduser()
    if path.suffix.lower() == ".dwg":
        raise DxfHostError(
            f"{path.name} is a DWG file. DWG can't be opened here; convert it to DXF (e.g. with the ODA "
            "File Converter) or use read_file_info for its metadata."
        )
    if not path.exists():
        raise DxfHostError(f"File not found: {path}. Check the path (absolute paths are safest).")
    if path.is_dir():
        raise DxfHostError(f"{path} is a directory. Pass the path of a .dxf file.")
    try:
        if path.stat().st_size == 0:
            raise DxfHostError(f"{path.name} is empty (0 bytes). Pass a complete .dxf file.")
        with path.open("rb") as stream:
            head = stream.read(32)
    except OSError as exc:
        raise DxfHostError(
            f"Cannot read {path}: {exc.strerror or exc}. Check the file permissions."
        ) from None
    if head.startswith(_DWG_MAGIC):
        raise DxfHostError(
            f"{path.name} holds DWG data. DWG can't be opened here; convert it to DXF (e.g. with the ODA "
            "File Converter) or use read_file_info for its metadata."
        )
    if path.suffix.lower() != ".dxf" and not head.startswith(_BINARY_DXF_MAGIC) and not _looks_like_dxf(head):
        raise DxfHostError(f"{path.name} is not a DXF file. This host opens .dxf drawings (ASCII or binary).")
    return path


def load_drawing(file_path: str) -> tuple[Drawing, Auditor, Path]:
    """Read and audit a DXF file; raise :class:`DxfHostError` with a clear message on any problem."""
    path = check_drawing_path(file_path)
    import ezdxf
    from ezdxf import recover

    try:
        doc, auditor = recover.readfile(path)
    except ezdxf.DXFStructureError as exc:
        raise DxfHostError(
            f"{path.name} is not a readable DXF file ({exc}). Check that it is a complete DXF export."
        ) from None
    except (OSError, UnicodeError, ValueError) as exc:
        raise DxfHostError(f"Cannot read {path.name}: {exc}.") from None
    if auditor.has_errors:
        details = "; ".join(str(error.message) for error in auditor.errors[:5])
        raise DxfHostError(
            f"{path.name} failed the DXF audit with {len(auditor.errors)} unrecoverable error(s): {details}. "
            "Repair it in a CAD application (AUDIT/RECOVER) and save it as DXF again."
        )
    return doc, auditor, path


def _looks_like_dxf(head: bytes) -> bool:
    text = head.lstrip().decode("latin-1")
    return text.startswith(("0\r\n", "0\n", "999")) or text.startswith("0")


class DocumentSet:
    """The open documents of this host; exactly one is active while any is open.

    Toolsets reach it as ``cadmcp.host.current().application`` (the server's ``application``):
    ``app.active.doc`` is the live ezdxf drawing; wrap edits in ``app.transaction(name)`` so
    they become undoable steps.
    """

    def __init__(self) -> None:
        self._documents: list[DxfDocument] = []
        self._active: DxfDocument | None = None
        self._untitled = 0
        self._pending: list[str] = []
        self._blank_when_empty = False
        self._deferred_error: str | None = None

    def open_later(self, file_path: str) -> str:
        """Check a file now and read it on first use, so the host is ready sooner; returns its name."""
        path = check_drawing_path(file_path)
        self._pending.append(str(path))
        return path.name

    def blank_on_first_use(self) -> None:
        """Start a new empty drawing when first used if nothing else was opened."""
        self._blank_when_empty = True

    def _settle(self) -> None:
        """Read the files queued by `open_later` (the first becomes active), or start a blank drawing."""
        if self._pending:
            self._blank_when_empty = False  # files were asked for: a failure must not hide behind a blank
            pending, self._pending = self._pending, []
            first: DxfDocument | None = None
            problems: list[str] = []
            for file_path in pending:
                try:
                    entry = self._open(file_path)
                except DxfHostError as exc:
                    problems.append(str(exc))
                else:
                    first = first or entry
            if first is not None:
                self._active = first
            if problems:
                self._deferred_error = " ".join(problems)
        if self._blank_when_empty and not self._documents:
            self._blank_when_empty = False
            self.new()

    @property
    def active(self) -> DxfDocument:
        self._settle()
        if self._deferred_error is not None:
            message, self._deferred_error = self._deferred_error, None
            if self._active is None:
                raise DxfHostError(f"{message} No document is open: call open_document with a .dxf file.")
        if self._active is None:
            raise DxfHostError("No document is open. Call open_document with the path of a .dxf file.")
        return self._active

    def __iter__(self):  # type: ignore[no-untyped-def]
        self._settle()
        return iter(list(self._documents))

    def new(self) -> DxfDocument:
        """Create an empty drawing (R2018, standard layers and styles) and make it active."""
        import ezdxf

        self._untitled += 1
        doc = ezdxf.new("R2018", setup=True)
        entry = DxfDocument(doc, None, f"Untitled-{self._untitled}.dxf")
        self._add(entry)
        return entry

    def open(self, file_path: str) -> DxfDocument:
        """Open a DXF file (or activate it if already open)."""
        self._settle()
        return self._open(file_path)

    def _open(self, file_path: str) -> DxfDocument:
        path = Path(file_path).expanduser()
        resolved = path.resolve() if path.exists() else path
        for entry in self._documents:
            if entry.path is not None and entry.path == resolved:
                self._active = entry
                return entry
        doc, auditor, path = load_drawing(file_path)
        entry = DxfDocument(doc, path.resolve(), self._unique_title(path.name), auditor=auditor)
        self._add(entry)
        return entry

    def transaction(self, name: str) -> AbstractContextManager[DxfDocument]:
        """Context manager: edits to the active document inside it become one undo step ``name``."""
        from cadmcp.hosts.dxf.execution import transaction

        return transaction(self.active, name)

    def find(self, document: str) -> DxfDocument:
        """A document by title or path."""
        self._settle()
        wanted = document.strip()
        for entry in self._documents:
            if entry.title == wanted or (entry.path is not None and str(entry.path) == wanted):
                return entry
        candidate = Path(wanted).expanduser()
        if candidate.exists():
            for entry in self._documents:
                if entry.path is not None and entry.path == candidate.resolve():
                    return entry
        names = ", ".join(entry.title for entry in self._documents) or "none"
        raise DxfHostError(f"No open document is called {document!r}. Open documents: {names}.")

    def activate(self, document: str) -> DxfDocument:
        entry = self.find(document)
        self._active = entry
        return entry

    def save(self, file_path: str | None = None) -> DxfDocument:
        """Save the active document, or save it as ``file_path``."""
        entry = self.active
        if file_path:
            target = Path(file_path).expanduser()
            if target.suffix.lower() != ".dxf":
                raise DxfHostError(f"Save as {target.name}: the file name must end in .dxf.")
            if target.is_dir():
                raise DxfHostError(f"{target} is a directory. Give a file path ending in .dxf.")
            if not target.parent.exists():
                raise DxfHostError(
                    f"Folder {target.parent} does not exist. Create it or choose another path."
                )
        elif entry.path is None:
            raise DxfHostError(
                f"{entry.title} is a new document without a file. Call save_document with filePath "
                "(a path ending in .dxf) to save it."
            )
        else:
            target = entry.path
        try:
            entry.doc.saveas(target)
        except OSError as exc:
            raise DxfHostError(f"Cannot write {target}: {exc.strerror or exc}.") from None
        entry.path = target.resolve()
        if file_path:
            entry.title = self._unique_title(target.name, exclude=entry)
        entry.modified = False
        return entry

    def _add(self, entry: DxfDocument) -> None:
        self._documents.append(entry)
        self._active = entry

    def _unique_title(self, name: str, exclude: DxfDocument | None = None) -> str:
        titles = {entry.title for entry in self._documents if entry is not exclude}
        if name not in titles:
            return name
        n = 2
        while f"{name} ({n})" in titles:
            n += 1
        return f"{name} ({n})"
