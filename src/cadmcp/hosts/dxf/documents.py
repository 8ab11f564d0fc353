"""Open DXF documents: loading with audit, the active document, saving, per-document history."""

from __future__ import annotations

import contextlib
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cadmcp.host.builtins.adapter import HostError, RequestedDocument, requested_outcome
from cadmcp.host.builtins.paths import check_document_path, reject_non_text
from cadmcp.host.history import History
from cadmcp.hosts.dxf.viewcache import ViewCache
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from ezdxf.audit import Auditor
    from ezdxf.document import Drawing

    from cadmcp.hosts.dxf.dwg import DwgSource

__all__ = [
    "DocumentSet",
    "DxfDocument",
    "DxfHostError",
    "as_writable_version",
    "load_drawing",
    "write_unchanged",
]

_BINARY_DXF_MAGIC = b"AutoCAD Binary DXF"


class DxfHostError(HostError):
    """A problem the agent can act on; the message says what to do next."""


@dataclass
class DxfDocument:
    """One open drawing with its own undo history."""

    doc: Drawing
    path: Path | None
    title: str
    auditor: Auditor | None = None
    history: History = field(default_factory=History)
    saved_at: int = 0
    """The history's position (`History.position`) the file on disk holds: as opened, or last saved."""
    source: DwgSource | None = None
    """Set for a drawing read from a DWG file: its release, the reader and what was not carried over."""
    views: ViewCache = field(default_factory=ViewCache)
    """What views drew of it so far (call ``views.changed()`` on every change)."""
    read_notes: list[str] = field(default_factory=list)
    """What the agent must know of how the file was read (a release read and saved as another)."""

    @property
    def modified(self) -> bool:
        """Whether the drawing differs from its file: its history is not where it was saved (a change
        undone back to the save is no change)."""
        return self.history.position() != self.saved_at

    def display_path(self) -> str | None:
        return str(self.path) if self.path else None


MEMORY_FACTOR = 25.0
"""ezdxf holds a drawing in about 25 bytes of memory per byte of DXF (300 MB took 7 GB)."""


def check_drawing_path(file_path: str) -> Path:
    """Cheap, bounded checks before reading: the path, the size, DWG or non-DXF content.

    Reads at most three 64 KB samples; raises :class:`DxfHostError` saying what is wrong.
    """
    from cadmcp.hosts.dxf.dwg import DWG_MEMORY_FACTOR, looks_like_dwg

    if isinstance(file_path, str) and file_path.strip().lower().endswith(".dwg"):
        path = check_document_path(
            file_path, kind="a .dwg file", memory_factor=DWG_MEMORY_FACTOR, error=DxfHostError
        )
        with path.open("rb") as stream:
            head = stream.read(16)
        _refuse_unknown_release(path, head)
        if not looks_like_dwg(head):
            raise DxfHostError(
                f"{echo(path.name)} is not a DWG file: its header names no DWG version (a DWG starts with "
                "AC10.., e.g. AC1032 for R2018). Check that it is a complete AutoCAD drawing.",
                "invalid",
            )
        return path
    path = check_document_path(file_path, kind="a .dxf file", memory_factor=MEMORY_FACTOR, error=DxfHostError)
    with path.open("rb") as stream:
        head = stream.read(256)
    _refuse_unknown_release(path, head)
    if looks_like_dwg(head):
        return check_document_path(
            str(path), kind="a .dwg file", memory_factor=DWG_MEMORY_FACTOR, error=DxfHostError
        )
    if head.startswith(_BINARY_DXF_MAGIC):
        return path
    if not _looks_like_dxf(head):
        if path.suffix.lower() != ".dxf":
            raise DxfHostError(
                f"{echo(path.name)} is not a DXF file. This host opens .dxf drawings (ASCII or binary).",
                "invalid",
            )
        raise DxfHostError(
            f"{echo(path.name)} is not a readable DXF file: it does not start like one (group code 0 and "
            "SECTION, or the binary DXF sentinel). Check that it is a complete DXF export.",
            "invalid",
        )
    reject_non_text(path, "a readable DXF file", DxfHostError, lines_break=True)
    return path


def _refuse_unknown_release(path: Path, head: bytes) -> None:
    """A DWG of a release the reader does not know (AC1036...) is named as one, with what to do."""
    from cadmcp.fileinfo.dwg import unknown_release, unknown_release_message

    code = unknown_release(head)
    if code is not None:
        raise DxfHostError(unknown_release_message(echo(path.name), code), "invalid")


def load_drawing(file_path: str) -> tuple[Drawing, Auditor, Path]:
    """Read and audit a DXF file; raise :class:`DxfHostError` with a clear message on any problem.

    Messages never quote the file's content beyond a short clipped excerpt.
    """
    path = check_drawing_path(file_path)
    import ezdxf
    from ezdxf import recover

    try:
        if _is_binary_dxf(path):  # ezdxf's recover reads ASCII DXF only
            doc, auditor = _read_renumbering_handle_conflicts(path)
        else:
            doc, auditor = recover.readfile(path)
            if _dropped_for_handle_conflicts(auditor):
                with contextlib.suppress(Exception):  # unreadable this way: keep the recovered drawing
                    renumbered = _read_renumbering_handle_conflicts(path)
                    if not renumbered[1].has_errors:
                        doc, auditor = renumbered
    except ezdxf.DXFStructureError as exc:
        raise DxfHostError(
            f"{echo(path.name)} is not a readable DXF file ({echo(str(exc), 120)}). Check that it is a "
            "complete DXF export.",
            "invalid",
        ) from None
    except (OSError, UnicodeError, ValueError) as exc:
        raise DxfHostError(f"Cannot read {echo(path.name)}: {echo(str(exc), 120)}.", "invalid") from None
    except Exception as exc:  # a damaged binary DXF: struct.error and the like
        raise DxfHostError(
            f"{echo(path.name)} is not a readable DXF file (the reader stopped with {type(exc).__name__}). "
            "Check that it is a complete DXF export.",
            "invalid",
        ) from None
    as_writable_version(doc)
    if auditor.has_errors:
        details = "; ".join(echo(str(error.message), 100) for error in auditor.errors[:5])
        raise DxfHostError(
            f"{echo(path.name)} failed the DXF audit with {len(auditor.errors)} unrecoverable error(s): "
            f"{details}. Repair it in a CAD application (AUDIT/RECOVER) and save it as DXF again.",
            "invalid",
        )
    return doc, auditor, path


def is_dwg(path: Path) -> bool:
    """Whether the file holds DWG data (whatever its name ends in)."""
    from cadmcp.hosts.dxf.dwg import looks_like_dwg

    with path.open("rb") as stream:
        return looks_like_dwg(stream.read(16))


def load_converted(dxf: Path) -> tuple[Drawing, Auditor]:
    """Read the DXF the DWG converter wrote as every DXF is read, only quicker.

    The converter writes regular DXF: a plain read and audit take 30-45% less time than recovering
    it. What recovering does that a plain read does not, on such DXF, is decoding ``\\U+XXXX``
    escapes, which LibreDWG writes for characters outside the drawing's code page; read plainly, the
    live drawing kept them and differed from the same drawing saved and reopened. They are decoded
    here before the plain read. Anything unusual (MIF escapes, escaped control characters, a drawing
    the plain read or its audit cannot take) goes the way of every DXF file.
    """
    import io

    import ezdxf
    from ezdxf.lldxf.encoding import decode_dxf_unicode, has_dxf_unicode

    with dxf.open("rb") as stream:
        data = stream.read()
    if b"\\M+" not in data:
        with contextlib.suppress(Exception):
            text = data.decode(ezdxf.dxf_file_info(str(dxf)).encoding, errors="surrogateescape")
            if has_dxf_unicode(text):
                if _ESCAPED_CONTROL.search(text):  # decoded in the whole text, it would split a line
                    raise ValueError("escaped control character")
                text = decode_dxf_unicode(text)
            doc = ezdxf.read(io.StringIO(text))
            doc.filename = str(dxf)
            auditor = doc.audit()
            if not auditor.has_errors and not _dropped_for_handle_conflicts(auditor):
                as_writable_version(doc)
                return doc, auditor
    doc, auditor, _ = load_drawing(str(dxf))
    return doc, auditor


_ESCAPED_CONTROL = re.compile(r"\\U\+00[01][0-9A-Fa-f]")


def load_dwg(path: Path) -> tuple[Drawing, Auditor, DwgSource]:
    """Read a DWG through the converter into an ezdxf drawing; :class:`DxfHostError` says what to do."""
    from cadmcp.hosts.dxf.dwg import DwgError, read_dwg

    try:
        return read_dwg(path, load_converted)
    except DwgError as exc:
        raise DxfHostError(str(exc), "unavailable" if exc.kind == "missing" else "invalid") from None


def dxf_beside_dwg(entry: DxfDocument) -> Path:
    """Where a DWG-opened document is saved without a file name: the .dxf beside the .dwg.

    No DWG writer keeps what the reader read (LibreDWG's WebAssembly build has none), so the
    .dwg is never overwritten. An existing .dxf there is not replaced unless named.
    """
    assert entry.source is not None
    source = entry.source.path
    target = source.with_suffix(".dxf")
    if target == source:  # a DWG named .dxf: its own name is the DWG's
        target = source.with_name(f"{source.stem}.converted.dxf")
    if target.exists():
        raise DxfHostError(
            f"{entry.title} came from a DWG file, which is not overwritten (no DWG writer keeps everything), "
            f"and {target.name} already exists beside it. Call save_document with filePath: that .dxf to "
            "replace it, or another path ending in .dxf.",
            "invalid",
        )
    return target


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def _dropped_for_handle_conflicts(auditor: Auditor) -> bool:
    """Whether the audit removed entities because another entity had their handle."""
    from ezdxf.audit import AuditError

    return any(
        fix.code == AuditError.REMOVED_INVALID_DXF_OBJECT and "conflicting handle" in fix.message
        for fix in auditor.fixes
    )


def _read_renumbering_handle_conflicts(path: Path) -> tuple[Drawing, Auditor]:
    """Read and audit the drawing, first giving a new handle to every entity whose handle another took.

    Some exporters give a POLYLINE the handle of its first VERTEX; ezdxf's audit then removes
    the POLYLINE (and saving would write the drawing without it), where CAD applications
    renumber it. Reads binary DXF too. Raises what ezdxf raises for an unreadable file.
    """
    import ezdxf
    from ezdxf.audit import AuditError

    doc = ezdxf.readfile(path)
    db = doc.entitydb
    renumbered: list[tuple[str, str, str]] = []
    for layout in (*doc.layouts, *doc.blocks):
        for entity in list(layout):
            old = entity.dxf.handle
            if old is not None and db.get(old) is entity:
                continue
            new = db.next_handle()
            entity.dxf.handle = new
            db[new] = entity
            for sub in (*getattr(entity, "vertices", ()), *getattr(entity, "attribs", ())):
                if sub.dxf.get("owner") == old:
                    sub.dxf.owner = new
            renumbered.append((entity.dxftype(), str(old), new))
    auditor = doc.audit()
    for kind, old, new in renumbered:
        auditor.fixed_error(
            AuditError.INVALID_ENTITY_HANDLE,
            f"Renumbered {kind}(#{old}) to #{new}: another object had its handle.",
        )
    return doc, auditor


def _is_binary_dxf(path: Path) -> bool:
    with path.open("rb") as stream:
        return stream.read(len(_BINARY_DXF_MAGIC)) == _BINARY_DXF_MAGIC


def _looks_like_dxf(head: bytes) -> bool:
    """An ASCII DXF starts with group code 0 and SECTION, possibly after 999 comments."""
    text = head.lstrip(b"\xef\xbb\xbf").decode("latin-1")
    lines = [line.strip() for line in text.splitlines()]
    i = 0
    while i + 1 < len(lines) and lines[i] == "999":
        i += 2
    if i + 1 >= len(lines):
        return False
    return lines[i] == "0" and lines[i + 1].upper() == "SECTION"


_ACADVER = re.compile(rb"\$ACADVER\s*\r?\n\s*1\s*\r?\n\s*(\S+)")


def release_notes(path: Path, read_as: str) -> list[str]:
    """A note when the file's header names a release other than the one the drawing is read (and
    will be saved) as: a DXF of R2.6 (AC1003) or R10 (AC1006) becomes R12 (AC1009)."""
    try:
        with path.open("rb") as stream:
            found = _ACADVER.search(stream.read(4096))
    except OSError:
        return []
    declared = found.group(1).decode("latin-1").strip().upper() if found else ""
    if not declared or declared == read_as.upper():
        return []
    from ezdxf.lldxf.const import acad_release

    return [
        f"The file's header says {echo(declared, 12)}; ezdxf reads it as {read_as} "
        f"({acad_release.get(read_as, 'unknown')}), and saving writes it as that (older releases are "
        "not written)."
    ]


def as_writable_version(doc: Drawing) -> None:
    """Give a drawing of a release ezdxf does not know ($ACADVER AC2.10, AC2.21, AC2.22: R2.x, before
    R12) the DXF version R12 (AC1009), which it is in every other respect.

    ezdxf upgrades such versions on read only when they sort before AC1009 as text, so AC2.10 stays:
    saved as is, the file gets R2000-style subclass markers under a header that ezdxf (and any reader
    going by $ACADVER) reads as R12, and the VPORT record reads back without its name.
    """
    from ezdxf.lldxf.const import acad_release

    if doc.dxfversion not in acad_release:
        doc.dxfversion = "AC1009"


def write_unchanged(entry: DxfDocument, target: Path) -> None:
    """Write the drawing to ``target`` and leave the live drawing as it was.

    ezdxf's save prepares the document first: it adds the EZDXF and HATCHBACKGROUNDCOLOR
    APPIDs, an EZDXF_META dictionary, required CLASS entries, and rewrites header variables
    (extents, limits, dates, handle seed). That preparation runs under change tracking and is
    undone after writing, so a save never shows up as new entities or a moved handle seed.
    Inside an agent's or a toolset's own tracked run, the preparation becomes part of that run.
    """
    from cadmcp.hosts.dxf import tracking
    from cadmcp.hosts.dxf.escapes import autocad_escapes
    from cadmcp.hosts.dxf.execution import run_tracked

    autocad_escapes()  # "ä" in a Chinese drawing: \U+00e4, not \xe4
    doc = entry.doc
    if tracking.is_active():
        doc.saveas(target)
        return

    # Applies pending transformations of ACIS bodies: what they show stays the same. Untracked, as
    # it sends a message to every entity (tracking would copy each one).
    doc.commit_pending_changes()
    _, preparation = run_tracked(entry, doc.update_all)
    try:
        doc.saveas(target)  # prepares again: finds everything in place, changes only header values
    finally:
        preparation.undo()  # restores whole containers (header, tables), so the second pass too


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
        self.requested: list[RequestedDocument] = []
        """What became of each drawing queued by `open_later`, once read."""

    def open_later(self, file_path: str) -> str:
        """Check a file now and read it on first use, so the host is ready sooner; returns its name."""
        path = check_drawing_path(file_path)
        self._pending.append(str(path))
        if is_dwg(path):
            from cadmcp.hosts.dxf.dwg import prestart

            prestart()  # the converter loads while the host gets ready
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
                    entry, _ = self._open(file_path)
                except DxfHostError as exc:
                    problems.append(str(exc))
                    self.requested.append(requested_outcome(file_path, error=exc))
                else:
                    first = first or entry
                    warned = entry.source.notes(all_said=False) if entry.source else []
                    warned += entry.read_notes
                    self.requested.append(requested_outcome(file_path, entry.title, warnings=warned or None))
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
        if self._active is None:
            if self._deferred_error is not None:  # said on every use until a drawing is open
                raise DxfHostError(
                    f"{self._deferred_error} No document is open: call open_document with a .dxf file."
                )
            raise DxfHostError("No document is open. Call open_document with the path of a .dxf file.")
        return self._active

    def pending(self) -> bool:
        """True while drawings queued by `open_later` have not been read yet."""
        return bool(self._pending)

    def current(self) -> DxfDocument | None:
        """The active document, or None (reads queued drawings; never raises their errors)."""
        self._settle()
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
        return self.open_or_activate(file_path)[0]

    def open_or_activate(self, file_path: str) -> tuple[DxfDocument, bool]:
        """Open a DXF file, or activate it if it is open; returns it and whether it was read now."""
        self._settle()
        return self._open(file_path)

    def _open(self, file_path: str) -> tuple[DxfDocument, bool]:
        path = check_drawing_path(file_path)
        for entry in self._documents:
            if entry.path is not None and entry.path == path:
                self._active = entry
                return entry, False
        if is_dwg(path):
            doc, auditor, source = load_dwg(path)
            entry = DxfDocument(
                doc, path.resolve(), self._unique_title(path.name), auditor=auditor, source=source
            )
        else:
            doc, auditor, path = load_drawing(str(path))
            entry = DxfDocument(doc, path.resolve(), self._unique_title(path.name), auditor=auditor)
            entry.read_notes = release_notes(path, doc.dxfversion)
        self._add(entry)
        return entry, True

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
        try:
            candidate = Path(wanted).expanduser().resolve()
        except (OSError, RuntimeError, ValueError):
            candidate = None
        for entry in self._documents:
            if candidate is not None and entry.path is not None and entry.path == candidate:
                return entry
        names = ", ".join(entry.title for entry in self._documents) or "none"
        raise DxfHostError(
            f"No open document is called {echo(document)}. Open documents: {names}.", "not_found"
        )

    def activate(self, document: str) -> DxfDocument:
        entry = self.find(document)
        self._active = entry
        return entry

    def close(self, entry: DxfDocument) -> None:
        """Forget an open drawing; when it was active, the one opened last of the others is."""
        self._documents.remove(entry)
        if self._active is entry:
            self._active = self._documents[-1] if self._documents else None

    def save(self, file_path: str | None = None) -> DxfDocument:
        """Save the active document, or save it as ``file_path``.

        A document read from a DWG is never written over its .dwg: saved without ``file_path`` it is
        saved as the .dxf beside it (see :func:`dxf_beside_dwg`).
        """
        entry = self.active
        if not file_path and entry.source is not None and entry.path == entry.source.path:
            file_path = str(dxf_beside_dwg(entry))
        if file_path:
            target = Path(file_path).expanduser()
            if target.suffix.lower() != ".dxf":
                raise DxfHostError(
                    f"Save as {target.name}: the file name must end in .dxf (there is no DWG writer: "
                    "a drawing is saved as DXF, which AutoCAD opens)."
                )
            if entry.source is not None and _same_file(target, entry.source.path):
                raise DxfHostError(
                    f"{target.name} is the DWG file {entry.title} was read from, which is never written over "
                    "(no DWG writer keeps everything the reader read). Give another path ending in .dxf.",
                    "invalid",
                )
            if target.is_dir():
                raise DxfHostError(f"{target} is a directory. Give a file path ending in .dxf.")
            if not target.parent.exists():
                raise DxfHostError(
                    f"Folder {target.parent} does not exist. Create it or choose another path."
                )
        elif entry.path is None:
            raise DxfHostError(
                f"{entry.title} is a new document without a file. Call save_document with filePath (a path "
                "ending in .dxf) to save it."
            )
        else:
            target = entry.path
        try:
            write_unchanged(entry, target)
        except OSError as exc:
            raise DxfHostError(f"Cannot write {target}: {exc.strerror or exc}.") from None
        entry.path = target.resolve()
        if file_path:
            entry.title = self._unique_title(target.name, exclude=entry)
        entry.saved_at = entry.history.position()
        return entry

    def _add(self, entry: DxfDocument) -> None:
        self._documents.append(entry)
        self._active = entry
        self._deferred_error = None

    def _unique_title(self, name: str, exclude: DxfDocument | None = None) -> str:
        titles = {entry.title for entry in self._documents if entry is not exclude}
        if name not in titles:
            return name
        n = 2
        while f"{name} ({n})" in titles:
            n += 1
        return f"{name} ({n})"
