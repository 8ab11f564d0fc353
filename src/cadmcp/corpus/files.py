"""The files of a corpus: which application opens each one, found under the paths a user gives."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

APPS = {".dxf": "dxf", ".dwg": "dxf", ".ifc": "ifc", ".fcstd": "freecad"}
"""Which host opens a file, by extension (a DWG drawing is a DXF-host document)."""
MAX_FILES = 5000


class CorpusError(Exception):
    """A corpus path that cannot be used; the message says what to pass instead."""


@dataclass(frozen=True)
class CorpusFile:
    """One file to run: its path, the application ('dxf', 'ifc', 'freecad') and its size in bytes."""

    path: Path
    app: str
    size: int


def app_of(path: Path) -> str | None:
    """The application for a file name, by its extension (None when no host opens it)."""
    return APPS.get(path.suffix.lower())


def find(paths: Iterable[str | os.PathLike[str]], apps: Iterable[str] | None = None) -> list[CorpusFile]:
    """Every file under ``paths`` (files or folders, searched recursively) that a host opens, in
    the order the paths were given (each path's files sorted); at most MAX_FILES."""
    wanted = set(apps) if apps else set(APPS.values())
    unknown = wanted - set(APPS.values())
    if unknown:
        raise CorpusError(f"Unknown application {sorted(unknown)}; choose from {sorted(set(APPS.values()))}.")
    found: dict[Path, CorpusFile] = {}
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise CorpusError(
                f"{path} does not exist; pass files or folders of .dxf, .dwg, .ifc or .FCStd files."
            )
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for candidate in candidates:
            app = app_of(candidate)
            if app is None or app not in wanted:
                continue
            resolved = candidate.resolve()
            found[resolved] = CorpusFile(resolved, app, resolved.stat().st_size)
            if len(found) > MAX_FILES:
                raise CorpusError(f"More than {MAX_FILES} files under {path}; pass a smaller folder.")
    if not found:
        raise CorpusError("No .dxf, .dwg, .ifc or .FCStd file found under the given paths.")
    return list(found.values())
