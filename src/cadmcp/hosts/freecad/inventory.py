"""Every object of a FreeCAD document by name: type, label and a digest of each property.

Used by previews (:mod:`cadmcp.host.builtins.preview`): two inventories tell what a script
created, modified (and which properties) and deleted; their digest is the document's revision.
A property's content is what FreeCAD saves of it (its element of the object's ``Content`` XML,
without the status bits a recompute flips; ``dumpPropertyContent`` for one that saves a file,
e.g. a mesh); a shape is its measures instead (volume, area, bounding box, placement, topology
counts), since the same recompute writes its BRep differently each time. An object's digest is
taken over its whole XML; its properties are told apart only when it was modified (read from
that XML then). FreeCAD gives a name back once its object is gone, so running the same script
again after a rollback creates the same names and the same inventory.
"""

from __future__ import annotations

import hashlib
import io
import re
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any

from cadmcp.host.builtins.preview import Entry

__all__ = ["inventory"]

SHAPES = frozenset({"Part::PropertyPartShape"})
"""Properties measured instead of dumped."""
_STATUS = re.compile(rb' status="\d+"')
_STATUS_TEXT = re.compile(r' status="\d+"')
_PYTHON = re.compile(
    r'<Property name="[^"]*" type="App::PropertyPythonObject"[^>]*?(?:/>|>.*?</Property>)', re.S
)
"""A Python proxy: its state is the object's other properties (and it may not pickle twice alike)."""
_DIGEST = 8
_DECIMALS = 6


def _shape(shape: Any) -> bytes:
    if shape is None or shape.isNull():
        return b"null"
    box = shape.BoundBox
    numbers = [box.XMin, box.YMin, box.ZMin, box.XMax, box.YMax, box.ZMax]
    for key in ("Volume", "Area", "Length"):
        try:
            numbers.append(getattr(shape, key))
        except Exception:  # a shape kind without the measure (e.g. no volume of a wire)
            numbers.append(float("nan"))
    counts = (len(shape.Solids), len(shape.Faces), len(shape.Edges), len(shape.Vertexes))
    base, rotation = shape.Placement.Base, shape.Placement.Rotation.Q
    numbers.extend((base.x, base.y, base.z, *rotation))
    return repr(([round(n, _DECIMALS) + 0.0 for n in numbers], counts)).encode()


def _saved(obj: Any, name: str) -> bytes:
    """What FreeCAD saves of one property, its data files included (without their zip stamps)."""
    raw = bytes(obj.dumpPropertyContent(name, Compression=0))
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        parts = [member.encode() + b"\0" + archive.read(member) for member in sorted(archive.namelist())]
    return _STATUS.sub(b"", b"\1".join(parts))


def _digest(content: bytes) -> str:
    return hashlib.blake2b(content, digest_size=_DIGEST).hexdigest()


def _unreadable(exc: Exception) -> bytes:
    return f"<unreadable: {type(exc).__name__}: {exc}>".encode()


def _parse(obj: Any, xml: str) -> dict[str, str]:
    """Property name (an extension: its tag in brackets) -> digest, from the object's saved XML;
    with ``obj``, a property that saves a data file is read from FreeCAD with its file."""
    try:
        elements = list(ET.fromstring(f"<Content>{xml}</Content>"))
    except ET.ParseError:  # XML this module cannot read: the object as one part
        return {"(content)": _digest(xml.encode())}
    parts: dict[str, str] = {}
    for element in elements:
        if element.tag != "Properties":
            parts[f"({element.tag})"] = _digest(ET.tostring(element))
            continue
        for prop in element:
            name, kind = prop.get("name") or "", prop.get("type") or ""
            if kind in SHAPES:
                continue
            try:
                has_file = obj is not None and prop.find(".//*[@file]") is not None
                parts[name] = _digest(_saved(obj, name) if has_file else ET.tostring(prop))
            except Exception as exc:  # unreadable still counts, by what FreeCAD says
                parts[name] = _digest(_unreadable(exc))
    return parts


class _Parts(Mapping[str, str]):
    """An object's properties -> digests, read from its saved XML on first use (a preview reads
    only the modified objects'); one that saves data files is read at once, with them."""

    def __init__(self, obj: Any, xml: str, shapes: dict[str, str]) -> None:
        self._xml = xml
        self._shapes = shapes
        self._parts: dict[str, str] | None = None
        if ' file="' in xml:
            self._parts = {**_parse(obj, xml), **shapes}

    def _read(self) -> dict[str, str]:
        if self._parts is None:
            self._parts = {**_parse(None, self._xml), **self._shapes}
        return self._parts

    def digest(self) -> str:
        whole = hashlib.blake2b(digest_size=10)
        if ' file="' in self._xml:
            for name, part in sorted(self._read().items()):
                whole.update(f"{name}\x1f{part}\x1e".encode())
        else:
            whole.update(self._xml.encode())
            for name, part in sorted(self._shapes.items()):
                whole.update(f"\x1e{name}\x1f{part}".encode())
        return whole.hexdigest()

    def __getitem__(self, key: str) -> str:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _object(obj: Any) -> _Parts:
    try:
        xml = _PYTHON.sub("", _STATUS_TEXT.sub("", obj.Content))
    except Exception as exc:  # an object FreeCAD cannot write still counts, by what it says
        xml = _unreadable(exc).decode()
    shapes: dict[str, str] = {}
    for name in obj.PropertiesList:  # a save leaves some shapes out (a Body's): each is measured
        if obj.getTypeIdOfProperty(name) in SHAPES:
            try:
                shapes[name] = _digest(_shape(getattr(obj, name)))
            except Exception as exc:
                shapes[name] = _digest(_unreadable(exc))
    return _Parts(obj, xml, shapes)


def inventory(doc: Any) -> dict[str, Entry]:
    """Object name -> (type id, label, digest of its content; its properties' digests)."""
    out: dict[str, Entry] = {}
    for obj in doc.Objects:
        parts = _object(obj)
        label = obj.Label if isinstance(obj.Label, str) else ""
        out[obj.Name] = Entry(obj.TypeId, label[:80], parts.digest(), parts)
    return out
