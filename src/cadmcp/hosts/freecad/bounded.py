"""The measurable part of a FreeCAD shape: datum planes and coordinate systems left out.

FreeCAD gives a datum plane or a local coordinate system (Assembly4's LCS) an unbounded face
whose box reaches ±1e100; an App::Part or a link holding one measures the same, and its volume
and area come out as 1e153. Boxes, volumes, areas and views use the bounded faces and solids
only, as FreeCAD's window frames a view around the parts, not the datums.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

UNBOUNDED = 1e99
"""A coordinate at least this far out is FreeCAD's infinity (it writes 1e100)."""


def is_bounded(box: Any) -> bool:
    """A valid box with every coordinate finite and short of FreeCAD's infinity."""
    if box is None or not box.isValid():
        return False
    return all(abs(v) < UNBOUNDED for v in (box.XMin, box.YMin, box.ZMin, box.XMax, box.YMax, box.ZMax))


MAX_REMEMBERED = 64
_made: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
"""Bounded compounds by their shape (hash, box and counts, as a freed shape's hash can come back):
the same shape gives the same compound (and hash), so views keep its tessellation."""


def bounded_shape(shape: Any) -> Any:
    """``shape`` when it is bounded; otherwise a compound of its bounded solids and of the bounded
    faces outside them (None when it has neither: a datum alone)."""
    if shape is None or shape.isNull():
        return None
    if is_bounded(shape.BoundBox):
        return shape
    box = shape.BoundBox
    key = (shape.hashCode(), box.XMin, box.YMin, box.ZMin, box.XMax, box.YMax, box.ZMax, len(shape.Faces))
    if key in _made:
        _made.move_to_end(key)
        return _made[key]
    import Part

    solids = [s for s in shape.Solids if is_bounded(s.BoundBox)]
    inside = {f.hashCode() for s in solids for f in s.Faces}
    faces = [f for f in shape.Faces if f.hashCode() not in inside and is_bounded(f.BoundBox)]
    kept = solids + faces
    _made[key] = made = Part.makeCompound(kept) if kept else None
    while len(_made) > MAX_REMEMBERED:
        _made.popitem(last=False)
    return made


def has_bounded_faces(shape: Any) -> bool:
    """Whether ``shape`` has a face that is not a datum's unbounded one."""
    if shape is None or shape.isNull() or not shape.Faces:
        return False
    return is_bounded(shape.BoundBox) or any(is_bounded(f.BoundBox) for f in shape.Faces)
