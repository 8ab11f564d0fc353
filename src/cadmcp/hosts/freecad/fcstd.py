"""What an .FCStd file declares, read before FreeCAD opens it, and what FreeCAD left out.

FreeCAD opens a document holding object types it does not know (a file from a newer FreeCAD: an
`App::Point` of 1.x in 0.20) by printing "Cannot create object" and leaving those objects out.
Saving it over the file would drop them for good, so the host compares what the file declares
with what FreeCAD made of it, says so at open, and refuses to write over that file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from cadmcp.host.builtins import HostError
from cadmcp.wire.echo import echo

MAX_DECLARED = 100_000
"""Object names kept from one Document.xml (the count is read whatever it is)."""
MAX_NAMED = 5


@dataclass(frozen=True)
class Declared:
    """The objects an .FCStd file's Document.xml lists, and the FreeCAD that saved it."""

    count: int = 0
    types: dict[str, str] = field(default_factory=dict)
    """Object name -> type (``Origin001`` -> ``App::Point``)."""
    program: str = ""
    """``ProgramVersion`` as written (``1.2R45125 (Git)``), empty if absent."""


@dataclass(frozen=True)
class NotLoaded:
    """Objects of a file FreeCAD did not make, and the file they are still in."""

    path: Path
    missing: dict[str, str]
    program: str

    def said(self, running: str) -> str:
        """The sentence for the agent: what is missing, why, and what saving does."""
        named = ", ".join(f"{name} ({kind})" for name, kind in list(self.missing.items())[:MAX_NAMED])
        more = f" and {len(self.missing) - MAX_NAMED} more" if len(self.missing) > MAX_NAMED else ""
        saved_by = f", saved by FreeCAD {version_of(self.program)}," if self.program else ""
        return (
            f"FreeCAD {running} did not load {len(self.missing)} object(s) of {echo(self.path.name)}"
            f"{saved_by} whose types it does not know: {echo(named, 300)}{more}. They are not in the model, "
            "and what depends on them may be in error. Saving over the file would drop them, so "
            "save_document writes this document to another file only (filePath=...); open the original "
            "in the FreeCAD that made it to keep them."
        )


def version_of(program: str) -> str:
    """``1.2R45125 (Git)`` -> ``1.2``; ``0.20R`` -> ``0.20``."""
    found = re.match(r"\s*(\d+(?:\.\d+)*)", program)
    return found.group(1) if found else program.strip()


def newer_than(program: str, running: tuple[int, int]) -> bool:
    """Whether a file's ``ProgramVersion`` names a FreeCAD newer (major.minor) than ``running``."""
    parts = version_of(program).split(".")
    try:
        saved = (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0)
    except ValueError:
        return False
    return saved > running


def read_declared(path: Path) -> Declared:
    """A FreeCAD document is a zip holding Document.xml: check that cheaply before FreeCAD reads it,
    and read which objects it declares (FreeCAD opens a damaged one as an empty document, and leaves
    out objects of types it does not know, without a word)."""
    try:
        with zipfile.ZipFile(path) as archive:
            if "Document.xml" not in set(archive.namelist()):
                raise HostError(
                    f"{echo(path.name)} is a zip archive without Document.xml: not a FreeCAD document.",
                    "invalid",
                )
            with archive.open("Document.xml") as xml:
                return _declared(xml)
    except (zipfile.BadZipFile, OSError, ValueError, ET.ParseError) as exc:
        if isinstance(exc, ET.ParseError):
            line = exc.position[0] if exc.position else "?"
            raise HostError(
                f"{echo(path.name)} is damaged: its Document.xml is not well-formed XML (line {line}), so "
                "FreeCAD would open it as an empty document. Open a backup (.FCBak) or a saved copy "
                "instead.",
                "invalid",
            ) from None
        raise HostError(
            f"{echo(path.name)} is not a FreeCAD document (an .FCStd file is a zip archive; this one is "
            "not). It may be damaged.",
            "invalid",
        ) from None


def _declared(xml: object) -> Declared:
    program, count, depth = "", 0, 0
    types: dict[str, str] = {}
    inside = False
    for event, element in ET.iterparse(xml, events=("start", "end")):  # type: ignore[arg-type]
        if event == "start":
            depth += 1
            if depth == 1:
                program = element.get("ProgramVersion") or ""
            elif depth == 2 and element.tag == "Objects":
                inside, count = True, int(element.get("Count") or 0)
            elif inside and depth == 3 and element.tag == "Object" and len(types) < MAX_DECLARED:
                name, kind = element.get("name"), element.get("type")
                if name and kind:
                    types[name] = kind
            continue
        depth -= 1
        if inside and depth == 1:  # the end of <Objects>: the object data after it is not needed
            break
        element.clear()
    return Declared(count, types, program)


def not_loaded(path: Path, declared: Declared, loaded: set[str]) -> NotLoaded | None:
    """The declared objects FreeCAD did not make (by name), or None when it made them all."""
    missing = {name: kind for name, kind in declared.types.items() if name not in loaded}
    return NotLoaded(path, missing, declared.program) if missing else None
