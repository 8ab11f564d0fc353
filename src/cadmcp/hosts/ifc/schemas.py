"""IFC schemas: which ones IfcOpenShell reads, and the release variants read with the nearest one.

IfcOpenShell 0.9 has one schema per IFC release (``IFC2X3``, ``IFC4``, ``IFC4X3_ADD2``), while
files name the exact variant their writer followed: ``IFC4X3_RC2`` (a release candidate),
``IFC4X3_ADD1``, ``IFC2X3_TC1``... A variant of a release IfcOpenShell has is read with that
release's schema (the header's FILE_SCHEMA rewritten on a temporary copy), and everything that
schema does not know is counted from the parser's log and said in the document's warnings:
instances of entity types it lacks are skipped, instances with another number of attributes are
read padded or cut. Other schemas (``IFC4X1``, ``IFC2X2``...) are refused, naming what is read.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadmcp.fileinfo.ifcschema import reader_schema, supported_schemas

__all__ = ["FILE_SCHEMA", "Mapped", "file_schema", "read_as", "reader_schema", "supported_schemas"]

HEAD_BYTES = 1 << 20
"""The header is looked for in the first MiB (headers are a few hundred bytes)."""
FILE_SCHEMA = re.compile(rb"FILE_SCHEMA\s*\(\s*\(\s*'([^']*)'")
_HEADER_END = re.compile(rb"ENDSEC\s*;")
_UNKNOWN = re.compile(r"Entity with name '([^']+)' not found in schema")
_ARITY = re.compile(r"Expected (\d+) attribute values, found (\d+) for instance #(\d+)")
MAX_LISTED = 8


def declared_schema_name(file: Any) -> str:
    """The name of IfcOpenShell's schema an open file is read with: ``file.schema`` is the release's
    short name ("IFC4X3"), which names no schema (its identifier is "IFC4X3_ADD2")."""
    identifier = str(file.schema_identifier)
    return reader_schema(identifier) or identifier


def file_schema(path: Path) -> str | None:
    """The FILE_SCHEMA a file's header names, or None when its header has none."""
    with path.open("rb") as stream:
        head = stream.read(HEAD_BYTES)
    end = _HEADER_END.search(head, head.find(b"HEADER"))
    match = FILE_SCHEMA.search(head, 0, end.start() if end else len(head))
    return match.group(1).decode("latin-1").strip() if match else None


@dataclass
class Mapped:
    """What reading a file with another schema than the one it names left out or changed."""

    declared: str
    read_as: str
    skipped: Counter[str] = field(default_factory=Counter)
    """Instances of entity types ``read_as`` lacks, by type (not loaded)."""
    reshaped: Counter[str] = field(default_factory=Counter)
    """Instances read with another number of attributes than the file has, by type."""

    def warnings(self) -> list[str]:
        """What the agent must know, in a sentence or two."""
        said = (
            f"The file names the schema {self.declared}, which IfcOpenShell has no schema for; it was "
            f"read as {self.read_as}, the release it belongs to."
        )
        if self.skipped:
            said += (
                f" {sum(self.skipped.values())} instance(s) of types {self.read_as} lacks were not "
                f"loaded ({_listing(self.skipped)})."
            )
        if self.reshaped:
            said += (
                f" {sum(self.reshaped.values())} instance(s) have another number of attributes in "
                f"{self.read_as} and were read padded or cut ({_listing(self.reshaped)})."
            )
        if self.skipped or self.reshaped:
            said += (
                f" Saving writes it as {self.read_as}, without what was not loaded or was cut, so it is not "
                "saved over the file (save_document(filePath=...) saves it elsewhere)."
            )
        else:
            said += f" Every instance matched {self.read_as}. Saving writes it as {self.read_as}."
        return [said]

    def lacking(self) -> str:
        """What the model lacks of the file, in words ('' when every instance was read whole)."""
        parts = []
        if self.skipped:
            parts.append(f"{sum(self.skipped.values())} instance(s) not loaded ({_listing(self.skipped)})")
        if self.reshaped:
            parts.append(
                f"{sum(self.reshaped.values())} instance(s) read padded or cut ({_listing(self.reshaped)})"
            )
        return " and ".join(parts)


def _listing(counts: Counter[str]) -> str:
    shown = ", ".join(f"{name} x{n}" for name, n in counts.most_common(MAX_LISTED))
    return shown + (f" and {len(counts) - MAX_LISTED} more types" if len(counts) > MAX_LISTED else "")


def read_as(path: Path, declared: str, schema: str) -> tuple[object, Mapped]:
    """Open ``path`` with ``schema`` instead of the ``declared`` one; the model and what it lost.

    The header is rewritten on a temporary copy (the file itself is never touched).
    """
    import ifcopenshell

    with path.open("rb") as source, tempfile.NamedTemporaryFile(suffix=".ifc", delete=False) as copy:
        head = source.read(HEAD_BYTES)
        end = _HEADER_END.search(head, head.find(b"HEADER"))
        limit = end.start() if end else len(head)
        match = FILE_SCHEMA.search(head, 0, limit)
        if match is None:
            raise ValueError("no FILE_SCHEMA in the header")
        copy.write(head[: match.start(1)] + schema.encode("ascii") + head[match.end(1) :])
        shutil.copyfileobj(source, copy, 1 << 20)
    try:
        ifcopenshell.get_log()  # earlier messages are not this file's
        model = ifcopenshell.open(copy.name)
        log = ifcopenshell.get_log()
    finally:
        Path(copy.name).unlink(missing_ok=True)
    mapped = Mapped(declared, schema)
    for name in _UNKNOWN.findall(log):
        mapped.skipped[name] += 1
    for _, _, step_id in _ARITY.findall(log):
        try:
            mapped.reshaped[model.by_id(int(step_id)).is_a()] += 1
        except RuntimeError:
            mapped.reshaped["?"] += 1
    return model, mapped
