"""Metadata of CAD/BIM files read straight from disk, with no CAD application running.

``read_file_info(path, detail)`` answers a JSON-ready dict for Revit (.rvt/.rfa/.rte/.rft),
DWG, DXF and IFC files, or raises :class:`FileInfoError` with a code and a message that
says what to do next. Each format's library is imported only when a file of that format
is read, so importing this package is cheap.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from cadmcp.fileinfo.errors import FileInfoError, corrupt, os_reason, shown, shown_name
from cadmcp.fileinfo.paths import (
    FORMAT_NAMES,
    SUPPORTED_EXTENSIONS,
    base_info,
    check_detail,
    check_path,
    content_note,
)
from cadmcp.wire.echo import echo

__all__ = ["SUPPORTED_EXTENSIONS", "FileInfoError", "read_file_info"]


def read_file_info(
    path: str | os.PathLike[str] | None, detail: Literal["summary", "full"] = "summary"
) -> dict[str, Any]:
    """Read a CAD/BIM file's metadata.

    ``summary`` stays small (about 2 KB: long lists are cut with a count of the rest);
    ``full`` lists everything the reader found. Every answer has ``path``, ``format``,
    ``fileSizeBytes`` and ``modified``.
    """
    level = check_detail(detail)
    resolved, named = check_path(path)
    fmt, note = content_note(resolved, named)
    info = base_info(resolved, fmt)
    try:
        if fmt == "dxf":
            from cadmcp.fileinfo import dxf

            info.update(dxf.read(resolved, level))
        elif fmt == "dwg":
            from cadmcp.fileinfo import dwg

            info.update(dwg.read(resolved, level))
        elif fmt == "ifc":
            from cadmcp.fileinfo import ifc

            info.update(ifc.read(resolved, level))
        elif fmt == "freecad":
            from cadmcp.fileinfo import freecad

            info.update(freecad.read(resolved, level))
        else:
            from cadmcp.fileinfo import revit

            info.update(revit.read(resolved, level))
    except FileInfoError as exc:
        if note is None:
            raise
        said = f"{shown_name(resolved)} is named {echo(resolved.suffix, 20)} but holds {FORMAT_NAMES[fmt]}"
        raise FileInfoError(exc.code, f"{said}, read as that: {exc.message}") from None
    except PermissionError:
        raise FileInfoError(
            "unreadable", f"{shown(resolved)} cannot be read (permission denied); check its permissions."
        ) from None
    except OSError as exc:
        raise FileInfoError(
            "unreadable", f"{shown(resolved)} could not be read: {os_reason(exc)}. Check the disk or share."
        ) from None
    except Exception as exc:  # a library choked on the bytes: say so by type, never quote them
        raise corrupt(resolved, FORMAT_NAMES[fmt], exc) from None
    if note is not None:  # the misnaming first, then what the reader noted
        info["note"] = f"{note} {info['note']}" if info.get("note") else note
    return info
