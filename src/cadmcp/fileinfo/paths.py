"""Checking a caller's path and detail before any reader runs, and the fields every
answer shares."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from cadmcp.fileinfo.errors import FileInfoError, os_reason, shown, shown_name
from cadmcp.wire.echo import echo

Detail = Literal["summary", "full"]

FORMATS: dict[str, str] = {
    ".rvt": "revit",
    ".rfa": "revit",
    ".rte": "revit",
    ".rft": "revit",
    ".dwg": "dwg",
    ".dxf": "dxf",
    ".ifc": "ifc",
    ".fcstd": "freecad",
    ".fcstd1": "freecad",
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(FORMATS)
FORMAT_NAMES = {
    "dxf": "a DXF drawing",
    "dwg": "a DWG drawing",
    "ifc": "an IFC model",
    "revit": "a Revit file",
    "freecad": "a FreeCAD document",
}
_ASCII_DXF = re.compile(rb"(?:\xef\xbb\xbf)?(?:[ \t]*999\r?\n[^\n]*\n)*[ \t]*0\r?\n[ \t]*SECTION\r?\n")
"""An ASCII DXF's start: optional 999 comments, then group code 0 and SECTION."""


def sniffed_format(path: Path) -> str | None:
    """The format the file's first bytes say it is (IFC, DWG, Revit's OLE container, DXF, a
    FreeCAD document: a zip whose first member is Document.xml), or None when they say nothing
    this knows."""
    try:
        with path.open("rb") as stream:
            head = stream.read(256)
    except OSError:
        return None
    if head.lstrip().upper().startswith(b"ISO-10303-21"):
        return "ifc"
    if re.match(rb"AC(?:10[0-9]{2}|[12]\.[0-9]{2})", head):  # AC1032 ... AC1.40: a DWG release code
        return "dwg"
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "revit"
    if head.startswith(b"AutoCAD Binary DXF") or _ASCII_DXF.match(head):
        return "dxf"
    if head.startswith(b"PK\x03\x04") and head[30:42] == b"Document.xml":
        return "freecad"
    return None


def held_format(path: Path) -> str | None:
    """The format the file's content says it is where its CAD extension names another (an IFC
    model named .dxf), or None: they agree, the extension is no CAD format's, or the content's
    start says nothing this knows."""
    suffix = path.suffix.lower()
    named = FORMATS.get(suffix)
    found = sniffed_format(path) if named is not None else None
    return found if found is not None and found != named else None


def content_note(path: Path, fmt: str) -> tuple[str, str | None]:
    """The format to read `path` as, by its content where its name says another, and the note
    that says so (None when the name and the content agree)."""
    found = held_format(path)
    if found is None:
        return fmt, None
    return found, (
        f"{path.name} is named {path.suffix} but holds {FORMAT_NAMES[found]}: it was read as that. Rename "
        f"it to the right extension so that CAD programs open it."
    )


def check_detail(detail: object) -> Detail:
    """The detail level, or ``invalid_detail`` naming the two accepted values."""
    if detail == "summary":
        return "summary"
    if detail == "full":
        return "full"
    raise FileInfoError(
        "invalid_detail",
        f'detail must be "summary" or "full", got {detail!r}. Use "summary" for a short overview '
        'and "full" for every layer, block, class count and stream.',
    )


MAX_PATH_CHARS = 4096
"""The longest path accepted (PATH_MAX on Linux)."""


def check_path(path: object) -> tuple[Path, str]:
    """The absolute path and its format name, or the error that explains what is wrong.

    The path is made absolute but links are not resolved, so messages name what the caller
    passed, never where a link points.
    """
    if path is None or (isinstance(path, str) and not path.strip()):
        raise FileInfoError(
            "missing_path", "filePath is required: pass the absolute path of a .rvt, .dwg, .dxf or .ifc file."
        )
    if not isinstance(path, str | os.PathLike):
        raise FileInfoError(
            "missing_path",
            f"filePath must be a string path, got {type(path).__name__}; pass the file's path.",
        )
    text = os.fspath(path)
    if not isinstance(text, str) or len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise FileInfoError(
            "invalid_path",
            f"filePath {echo(text)} is not a usable path (at most {MAX_PATH_CHARS} characters, no NUL "
            "characters); pass the file's absolute path.",
        )
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):  # ~name/... for a user this machine does not know
        user = expanded[1:].split(os.sep, 1)[0]
        raise FileInfoError(
            "invalid_path",
            f"filePath {echo(text)} starts with ~{user[:30]}, but there is no user {echo(user, 30)} with a "
            "home folder here; pass the file's absolute path.",
        )
    candidate = Path(os.path.abspath(expanded))
    suffix = candidate.suffix.lower()
    fmt = FORMATS.get(suffix)
    try:
        exists = candidate.exists()
        is_dir = candidate.is_dir()
    except OSError as exc:
        raise FileInfoError(
            "unreadable", f"{shown(candidate)} cannot be inspected: {os_reason(exc)}."
        ) from None
    if not exists:
        raise FileInfoError(
            "not_found",
            f"{shown(candidate)} does not exist. Check the spelling and pass an absolute path "
            "(relative paths resolve against the daemon's working directory).",
        )
    if is_dir:
        raise FileInfoError(
            "not_a_file",
            f"{shown(candidate)} is a directory; pass the path of a file inside it ({supported_list()}).",
        )
    if fmt is None:
        raise FileInfoError(
            "unsupported_extension",
            f"{shown_name(candidate)} has {echo(suffix, 20) if suffix else 'no extension'}; "
            f"file info reads only {supported_list()} files.",
        )
    if not candidate.is_file():
        raise FileInfoError(
            "not_a_file", f"{shown(candidate)} is not a regular file; pass a CAD/BIM file's path."
        )
    if not os.access(candidate, os.R_OK):
        raise FileInfoError(
            "unreadable",
            f"{shown(candidate)} exists but cannot be read (permission denied); check its permissions.",
        )
    return candidate, fmt


def supported_list() -> str:
    """The supported extensions as readable text."""
    return ", ".join(SUPPORTED_EXTENSIONS)


def base_info(path: Path, fmt: str) -> dict[str, Any]:
    """The fields every answer starts with: path, format, size and modification time."""
    stat = path.stat()
    return {
        "path": str(path),
        "format": fmt,
        "fileSizeBytes": stat.st_size,
        "modified": datetime.fromtimestamp(stat.st_mtime, tz=UTC).isoformat(timespec="seconds"),
    }


def capped(items: list[Any], limit: int) -> dict[str, Any]:
    """A list cut to ``limit`` items with the count of the rest, for summaries."""
    return {"count": len(items), "items": items[:limit], "more": max(0, len(items) - limit)}
