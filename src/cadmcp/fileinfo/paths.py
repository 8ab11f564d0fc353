"""Checking a caller's path and detail before any reader runs, and the fields every
answer shares."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from cadmcp.fileinfo.errors import FileInfoError

Detail = Literal["summary", "full"]

FORMATS: dict[str, str] = {
    ".rvt": "revit",
    ".rfa": "revit",
    ".rte": "revit",
    ".rft": "revit",
    ".dwg": "dwg",
    ".dxf": "dxf",
    ".ifc": "ifc",
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(FORMATS)


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


def check_path(path: object) -> tuple[Path, str]:
    """The resolved path and its format name, or the error that explains what is wrong."""
    if path is None or (isinstance(path, str) and not path.strip()):
        raise FileInfoError(
            "missing_path", "filePath is required: pass the absolute path of a .rvt, .dwg, .dxf or .ifc file."
        )
    if not isinstance(path, str | os.PathLike):
        raise FileInfoError(
            "missing_path",
            f"filePath must be a string path, got {type(path).__name__}; pass the file's path.",
        )
    candidate = Path(os.fspath(path)).expanduser()
    suffix = candidate.suffix.lower()
    fmt = FORMATS.get(suffix)
    try:
        exists = candidate.exists()
        is_dir = candidate.is_dir()
    except OSError as exc:
        raise FileInfoError(
            "unreadable", f"{candidate} cannot be inspected: {exc.strerror or exc}."
        ) from None
    if not exists:
        raise FileInfoError(
            "not_found",
            f"{candidate} does not exist. Check the spelling and pass an absolute path "
            "(relative paths resolve against the daemon's working directory).",
        )
    if is_dir:
        raise FileInfoError(
            "not_a_file",
            f"{candidate} is a directory; pass the path of a file inside it ({supported_list()}).",
        )
    if fmt is None:
        shown = suffix or "no extension"
        raise FileInfoError(
            "unsupported_extension",
            f"{candidate.name} has {shown}; file info reads only {supported_list()} files.",
        )
    if not candidate.is_file():
        raise FileInfoError("not_a_file", f"{candidate} is not a regular file; pass a CAD/BIM file's path.")
    if not os.access(candidate, os.R_OK):
        raise FileInfoError(
            "unreadable", f"{candidate} exists but cannot be read (permission denied); check its permissions."
        )
    return candidate.resolve(), fmt


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
