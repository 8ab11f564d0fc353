"""Every object of a FreeCAD document by name: type, label and a digest of each property.

Used by previews (:mod:`cadmcp.host.builtins.preview`): two inventories tell what a script
created, modified (and which properties) and deleted; their digest is the document's revision.
A property's content is what FreeCAD saves of it (``dumpPropertyContent``, without the status
bits a recompute flips); a shape is its measures instead (volume, area, bounding box, placement,
topology counts), since the same recompute writes its BRep differently each time. FreeCAD
gives a name back once its object is gone, so running the same script again after a rollback
creates the same names and the same inventory.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from typing import Any

from cadmcp.host.builtins.preview import Entry

__all__ = ["inventory"]

SHAPES = frozenset({"Part::PropertyPartShape"})
"""Properties measured instead of dumped."""
SKIPPED = frozenset({"App::PropertyPythonObject"})
"""A Python proxy: its state is the object's other properties (and it may not pickle twice alike)."""
_STATUS = re.compile(rb' status="\d+"')
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
    raw = bytes(obj.dumpPropertyContent(name, Compression=0))
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        parts = [member.encode() + b"\0" + archive.read(member) for member in sorted(archive.namelist())]
    return _STATUS.sub(b"", b"\1".join(parts))


def _property(obj: Any, name: str, kind: str) -> str:
    try:
        content = _shape(getattr(obj, name)) if kind in SHAPES else _saved(obj, name)
    except Exception as exc:  # unreadable still counts, by what FreeCAD says
        content = f"<unreadable: {type(exc).__name__}: {exc}>".encode()
    return hashlib.blake2b(content, digest_size=_DIGEST).hexdigest()


def inventory(doc: Any) -> dict[str, Entry]:
    """Object name -> (type id, label, digest of its properties; each property's digest)."""
    out: dict[str, Entry] = {}
    for obj in doc.Objects:
        parts: dict[str, str] = {}
        for name in obj.PropertiesList:
            kind = obj.getTypeIdOfProperty(name)
            if kind not in SKIPPED:
                parts[name] = _property(obj, name, kind)
        whole = hashlib.blake2b(digest_size=10)
        for name in sorted(parts):
            whole.update(f"{name}\x1f{parts[name]}\x1e".encode())
        label = obj.Label if isinstance(obj.Label, str) else ""
        out[obj.Name] = Entry(obj.TypeId, label[:80], whole.hexdigest(), parts)
    return out
