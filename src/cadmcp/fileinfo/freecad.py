"""FreeCAD document metadata from the .FCStd zip's ``Document.xml``, with no FreeCAD running:
the FreeCAD version that saved it, the document's own properties (label, author, dates) and its
objects by type. Shapes (``*.brp``) are counted, never read."""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from cadmcp.fileinfo.errors import FileInfoError, shown_name
from cadmcp.fileinfo.paths import Detail

MAX_DOCUMENT_XML = 256 << 20
"""The largest Document.xml read (uncompressed); a larger one is refused as damaged."""
MAX_LISTED = 5000
"""Objects listed one by one in ``full`` (the rest are counted)."""
MAX_TYPES = 500
"""Object types counted one by one in ``full`` (the rest are counted together)."""
_SUMMARY_TYPES = 10
_PROPERTIES = {
    "Label": "label",
    "CreatedBy": "createdBy",
    "CreationDate": "creationDate",
    "LastModifiedBy": "lastModifiedBy",
    "LastModifiedDate": "lastModifiedDate",
    "Company": "company",
    "Comment": "comment",
}
_CLIP = 300


def read(path: Path, detail: Detail) -> dict[str, Any]:
    """The FreeCAD answer for ``path``; ``full`` lists every object (name, type, label)."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} is not a FreeCAD document: an .FCStd file is a zip archive, and this one "
            "is not one (or it is cut short). Re-copy it, or open it in FreeCAD to see what it holds.",
        ) from None
    with archive:
        names = archive.namelist()
        if "Document.xml" not in names:
            raise FileInfoError(
                "corrupt_file",
                f"{shown_name(path)} is a zip archive without Document.xml, so not a FreeCAD document.",
            )
        if archive.getinfo("Document.xml").file_size > MAX_DOCUMENT_XML:
            raise FileInfoError(
                "corrupt_file",
                f"{shown_name(path)}'s Document.xml unpacks to over {MAX_DOCUMENT_XML >> 20} MiB; it is "
                "damaged or not a FreeCAD document. Open it in FreeCAD.",
            )
        with archive.open("Document.xml") as stream:
            out, types, objects = _document(path, stream)
    out["objectCount"] = sum(types.values())
    most = _SUMMARY_TYPES if detail == "summary" else MAX_TYPES
    out["objectTypes"] = dict(types.most_common(most))
    if len(types) > most:
        out["otherTypes"] = len(types) - most
    out["shapeFiles"] = sum(1 for n in names if n.lower().endswith((".brp", ".brep")))
    out["hasGuiDocument"] = "GuiDocument.xml" in names
    out["hasThumbnail"] = any(n.lower().startswith("thumbnails/") for n in names)
    if detail == "full":
        out["objects"] = [
            {"name": n, "type": t, **({"label": lb} if lb else {})} for n, t, lb in objects.values()
        ]
        if out["objectCount"] > len(objects):
            out["objectsNotListed"] = out["objectCount"] - len(objects)
    out["note"] = "A FreeCAD document opens with launch_host(filePath=...), which shows what it holds."
    return out


def _document(path: Path, stream: Any) -> tuple[dict[str, Any], Counter[str], dict[str, list[str]]]:
    """In one pass: the document's attributes and properties, its objects counted by type, and the
    first `MAX_LISTED` objects (name, type, label) by name."""
    out: dict[str, Any] = {}
    types: Counter[str] = Counter()
    objects: dict[str, list[str]] = {}
    depth = 0
    in_objects = in_data = False
    current_object: str | None = None
    current_property: str | None = None
    try:
        for event, element in ElementTree.iterparse(stream, events=("start", "end")):
            tag = element.tag
            if event == "start":
                depth += 1
                if tag == "Document" and depth == 1:
                    out.update(_versions(element.attrib))
                elif tag == "Objects" and depth == 2:
                    in_objects = True
                elif tag == "ObjectData" and depth == 2:
                    in_data = True
                elif tag == "Object" and in_objects and depth == 3:
                    name, kind = (
                        element.attrib.get("name", "")[:_CLIP],
                        element.attrib.get("type", "")[:_CLIP],
                    )
                    types[kind] += 1
                    if len(objects) < MAX_LISTED:  # a huge document is counted, not kept
                        objects[name] = [name, kind, ""]
                elif tag == "Object" and in_data and depth == 3:
                    current_object = element.attrib.get("name", "")[:_CLIP]
                elif tag == "Property":
                    current_property = element.attrib.get("name")
                elif tag == "String" and current_property is not None:
                    value = element.attrib.get("value", "")
                    if current_object is None and depth == 4 and current_property in _PROPERTIES:
                        if value:
                            out[_PROPERTIES[current_property]] = value[:_CLIP]
                    elif current_object in objects and current_property == "Label":
                        objects[current_object][2] = value[:_CLIP]
                continue
            depth -= 1
            if tag == "Objects":
                in_objects = False
            elif tag == "ObjectData":
                in_data = False
            elif tag == "Object" and in_data:
                current_object = None
            elif tag == "Property":
                current_property = None
            element.clear()
    except ElementTree.ParseError as exc:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)}'s Document.xml is not well-formed XML (line {exc.position[0]}); the file "
            "is damaged. Open it in FreeCAD, which may recover it, or use a backup (.FCStd1).",
        ) from None
    if "programVersion" not in out:
        raise FileInfoError(
            "corrupt_file", f"{shown_name(path)}'s Document.xml has no FreeCAD Document element."
        )
    return out, types, objects


def _versions(attrib: dict[str, str]) -> dict[str, Any]:
    """FreeCAD's version that saved the document, and the document format's versions."""
    out: dict[str, Any] = {"programVersion": attrib.get("ProgramVersion", "")[:40]}
    for key, name in (("SchemaVersion", "schemaVersion"), ("FileVersion", "fileVersion")):
        if attrib.get(key, "").isdigit():
            out[name] = int(attrib[key])
    return out
