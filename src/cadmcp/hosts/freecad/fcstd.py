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
    """What FreeCAD did not make of a file's objects, and the file that still holds it: objects of
    types it does not know (`missing`), and objects whose Python class (an add-on's) it could not
    import (`classless`: they stay, with the shape they were saved with, but do not recompute, and
    a save writes them without their class and its data)."""

    path: Path
    missing: dict[str, str]
    program: str
    classless: dict[str, str] = field(default_factory=dict)
    """Object name -> the Python class its file names (``CurvedSegment.CurvedSegmentWorker``)."""

    @property
    def count(self) -> int:
        return len(self.missing) + len(self.classless)

    def said(self, running: str) -> str:
        """The sentences for the agent: what is missing, why, and what saving does."""
        parts = []
        if self.missing:
            saved_by = f", saved by FreeCAD {version_of(self.program)}," if self.program else ""
            parts.append(
                f"FreeCAD {running} did not load {len(self.missing)} object(s) of {echo(self.path.name)}"
                f"{saved_by} whose types it does not know: {_named(self.missing)}. They are not in the "
                "model, and what depends on them may be in error."
            )
        if self.classless:
            modules = sorted({c.split(".")[0] for c in self.classless.values()})
            parts.append(
                f"{len(self.classless)} object(s) of {echo(self.path.name)} need Python code FreeCAD "
                f"{running} could not load (an add-on not installed here: {echo(', '.join(modules), 200)}): "
                f"{_named(self.classless)}. They keep the shape they were saved with and do not "
                "recompute: changes to what they are built from do not reach them."
            )
        loses = "drop them" if not self.classless else "write them without their class and its data"
        if self.missing and self.classless:
            loses = "drop them, or their class"
        return " ".join(parts) + (
            f" Saving over the file would {loses}, so save_document writes this document to another file "
            "only (filePath=...); open the original in a FreeCAD that has what it needs to keep them."
        )


def _named(objects: dict[str, str]) -> str:
    named = ", ".join(f"{name} ({kind})" for name, kind in list(objects.items())[:MAX_NAMED])
    more = f" and {len(objects) - MAX_NAMED} more" if len(objects) > MAX_NAMED else ""
    return f"{echo(named, 300)}{more}"


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


def not_loaded(
    path: Path, declared: Declared, loaded: set[str], without_class: set[str] = frozenset()
) -> NotLoaded | None:
    """The declared objects FreeCAD did not make (by name), and those of `without_class` (made, but
    their Python class is None) whose file names a class; None when it made them all whole."""
    missing = {name: kind for name, kind in declared.types.items() if name not in loaded}
    classless = python_classes(path, without_class) if without_class else {}
    return NotLoaded(path, missing, declared.program, classless) if missing or classless else None


def python_classes(path: Path, names: set[str]) -> dict[str, str]:
    """The Python class (``module.Class``) the file saved with each object of `names`, where it
    saved one (an object already saved without its class names none)."""
    found: dict[str, str] = {}
    current = None
    try:
        with zipfile.ZipFile(path) as archive, archive.open("Document.xml") as xml:
            for event, element in ET.iterparse(xml, events=("start", "end")):
                if event == "end":
                    if element.tag == "Object":
                        element.clear()  # what was read of it is not needed again
                elif element.tag == "Object" and element.get("name") and element.get("type") is None:
                    current = element.get("name")  # ObjectData's (the Objects list names a type)
                elif element.tag == "Python" and current in names and element.get("module"):
                    found.setdefault(str(current), f"{element.get('module')}.{element.get('class')}")
    except (zipfile.BadZipFile, OSError, KeyError, ET.ParseError):
        return found
    return found


_XLINK_FILE = re.compile(rb'<XLink\s+file="([^"]+)"')


def unresolved_links(path: Path) -> list[str]:
    """The other files the .FCStd file at `path` links to (App::Link and other external links, by the
    path FreeCAD wrote, relative to the file's folder) that are not there: opened from here, those
    links would be empty ("Link not restored")."""
    try:
        with zipfile.ZipFile(path) as archive:
            text = archive.read("Document.xml")
    except (zipfile.BadZipFile, OSError, KeyError):
        return []
    named = dict.fromkeys(m.decode("utf-8", "replace") for m in _XLINK_FILE.findall(text))
    return [name for name in named if not (path.parent / name).exists()]
