"""FreeCAD probe: after a recompute, every object's properties and its shape's measures."""

from __future__ import annotations

import math
import re
from typing import Any

DIGITS = 10
DECIMALS = 6
UNBOUNDED = 1e99
"""A box side this far out is OpenCASCADE's infinity (1e100)."""
SIGN_CLEAR = 1e-9
"""A quaternion component this far from 0 decides the sign of the rotation's canonical form."""
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
NEGATIVE_ZERO = re.compile(r"(?<![\d.])-0(?![\d.])")
GEOMETRY = (
    "StartPoint",
    "EndPoint",
    "Center",
    "Radius",
    "MajorRadius",
    "MinorRadius",
    "Location",
    "Direction",
)
"""The numbers that place a Part geometry (its repr keeps 6 digits and prints -0)."""
SKIPPED = {
    "App::PropertyPythonObject",  # a Python proxy: its state is the other properties
    "App::PropertyFileIncluded",  # a path into the document's temporary folder
    "Part::PropertyPartShape",  # measured below
    "Mesh::PropertyMeshKernel",
    "Fem::PropertyFemMesh",
    "Points::PropertyPointKernel",
}
SKIPPED_PROPERTIES = {
    "FullyConstrained",  # set only when the solver runs: a loaded sketch keeps what was saved
}
MOVED = " moved 10 mm along x"
TEMPORARY = "<the document's temporary folder>"
LENGTHS = ("Length", "Height", "Width", "Radius", "Thickness", "Depth", "Size")
DATUMS = ("Distance", "DistanceX", "DistanceY", "Radius", "Diameter")


def number(value: float) -> float:
    """Ten significant digits, and nothing below a nanometre (recomputes differ at 1e-15)."""
    return float(f"{round(value, DECIMALS):.{DIGITS}g}") + 0.0


def corner(value: float, scale: float) -> float:
    """A bounding box coordinate to ten significant digits of the box's ``scale`` (its largest
    coordinate), never finer than :func:`number`: a box reaching 1e17 (an imported line run off to
    a far point) moves its other corners by a fraction of a millimetre when its shape is read back."""
    if scale <= 0:
        return number(value)
    quantum = 10.0 ** (math.floor(math.log10(scale)) - DIGITS + 1)
    return number(round(value / quantum) * quantum) if quantum > 10.0**-DECIMALS else number(value)


def rotation(q: Any) -> list[float]:
    """A rotation's quaternion with its first clear component positive: q and -q are one rotation,
    and FreeCAD's matrix-to-quaternion conversion gives either on a last-bit difference."""
    lead = next((c for c in q if abs(c) > SIGN_CLEAR), 1.0)
    return [number(c if lead > 0 else -c) for c in q]


def canon(value: Any) -> Any:
    """A JSON-ready value for a property: objects by name, placements and vectors as numbers."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return number(value)
    if isinstance(value, list | tuple):
        return [canon(v) for v in value]
    if isinstance(value, dict):
        return {str(k): canon(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    kind = type(value).__name__
    if kind == "Quantity":
        return [number(value.Value), str(value.Unit)]
    if kind == "Vector":
        return [number(value.x), number(value.y), number(value.z)]
    if kind == "Rotation":
        return rotation(value.Q)
    if kind == "Placement":
        return [canon(value.Base), canon(value.Rotation)]
    if kind == "Matrix":
        return [number(a) for a in value.A]
    if kind == "Constraint":
        return [value.Type, value.Name, number(value.Value), value.First, value.Second, value.Driving]
    if hasattr(value, "TypeId") and hasattr(value, "Name") and hasattr(value, "Document"):
        return f"<{value.Name}>"
    geometry = [name for name in GEOMETRY if hasattr(value, name)]
    if geometry and hasattr(value, "isDerivedFrom"):  # a Part geometry (sketch lines, arcs, circles)
        return [kind, *(canon(getattr(value, name)) for name in geometry)]
    return NEGATIVE_ZERO.sub("0", ADDRESS.sub("", repr(value)))


def shape_measures(shape: Any) -> Any:
    """Volume, area, bounding box, placement and topology counts of a shape (None when null)."""
    if shape is None or shape.isNull():
        return None
    box = _exact_box(shape)
    corners = (box.XMin, box.YMin, box.ZMin, box.XMax, box.YMax, box.ZMax)
    # an infinite face or line (a datum plane or axis) has no box, area or volume: a last-bit turn
    # of it moves a side of its box to infinity and its "volume" from 0 to -2e152
    unbounded = max(abs(v) for v in corners) >= UNBOUNDED
    scale = max(abs(v) for v in corners)
    measures: dict[str, Any] = {
        "bbox": "unbounded" if unbounded else [corner(v, scale) for v in corners],
        "placement": canon(shape.Placement),
        "topology": [len(shape.Solids), len(shape.Faces), len(shape.Edges), len(shape.Vertexes)],
    }
    for key in ("Volume", "Area", "Length"):
        try:
            measures[key.lower()] = "unbounded" if unbounded else number(_measure(shape, key))
        except Exception:
            measures[key.lower()] = None
    return measures


def _measure(shape: Any, key: str) -> float:
    """``shape``'s length, area, or the volume of its solids: OpenCASCADE gives a face or shell that
    encloses nothing a signed "volume" that moves with the last bits of its placement (0.006556
    then 0.006559 for a face a million millimetres out, saved and read back)."""
    if key == "Volume":
        return float(sum(solid.Volume for solid in shape.Solids))
    return float(getattr(shape, key))


def _exact_box(shape: Any) -> Any:
    """The box of the geometry alone: BoundBox tightens once a view has triangulated the shape."""
    try:
        return shape.copy(True, False).BoundBox
    except TypeError:  # a FreeCAD without copy(copyGeom, copyMesh)
        return shape.copy().BoundBox


def object_state(obj: Any, temporary: str = "") -> dict[str, Any]:
    """``obj``'s properties and shape measures; a path into ``temporary`` (the document's folder
    for included files, new each time it opens) is written relative to it."""
    props: dict[str, Any] = {}
    for name in obj.PropertiesList:
        try:
            if name in SKIPPED_PROPERTIES or obj.getTypeIdOfProperty(name) in SKIPPED:
                continue
            props[name] = canon(getattr(obj, name))
            if temporary and isinstance(props[name], str) and temporary in props[name]:
                props[name] = props[name].replace(temporary, TEMPORARY)
        except Exception as exc:
            props[name] = f"<unreadable: {type(exc).__name__}>"
    entry: dict[str, Any] = {"type": obj.TypeId, "props": props}
    if obj.TypeId == "Spreadsheet::Sheet":
        cells = {}
        for address in _used_cells(obj):
            cells[address] = [obj.getContents(address), canon(_cell_value(obj, address))]
        entry["cells"] = cells
    shape = getattr(obj, "Shape", None)
    if shape is not None and type(shape).__name__ != "str":
        try:
            entry["shape"] = shape_measures(shape)
        except Exception as exc:
            entry["shape"] = f"<unmeasurable: {type(exc).__name__}>"
    return entry


def _used_cells(sheet: Any) -> list[str]:
    if hasattr(sheet, "getUsedCells"):
        return sorted(sheet.getUsedCells())
    # FreeCAD 0.20 has no getUsedCells: read the cell addresses from the saved content
    return sorted(set(re.findall(r'<Cell address="([A-Z]+[0-9]+)"', sheet.cells.Content)))


def _cell_value(sheet: Any, address: str) -> Any:
    try:
        return sheet.get(address)
    except Exception:
        return None


def _read_only(obj: Any, name: str) -> bool:
    try:
        return "ReadOnly" in obj.getPropertyStatus(name)
    except Exception:
        return False


def dump(doc: Any) -> dict[str, Any]:
    """Recompute, then every object's canonical state keyed by its internal name."""
    touched_before = sorted(o.Name for o in doc.Objects if "Touched" in o.State)
    doc.recompute()
    temporary = getattr(doc, "TransientDir", "")
    objects = {obj.Name: object_state(obj, temporary) for obj in doc.Objects}
    invalid = sorted(o.Name for o in doc.Objects if "Invalid" in o.State)
    return {
        "objects": objects,
        "summary": {"objects": len(objects), "touched_before_recompute": touched_before, "invalid": invalid},
    }


def _signature(doc: Any) -> list[Any]:
    """What a change must move: every shape's measures."""
    out = []
    for obj in doc.Objects:
        shape = getattr(obj, "Shape", None)
        if shape is not None and type(shape).__name__ != "str":
            try:
                out.append([obj.Name, shape_measures(shape)])
            except Exception:
                out.append([obj.Name, None])
    return out


def _bound(obj: Any) -> set[str]:
    """Paths of obj's properties that an expression drives (they cannot be set by hand)."""
    return {path.lstrip(".") for path, _ in getattr(obj, "ExpressionEngine", [])}


def _candidates(doc: Any) -> Any:
    """Ways to change a driving value, most typical first: (description, do, undo) triples."""
    for obj in doc.Objects:
        if obj.TypeId != "Spreadsheet::Sheet":
            continue
        for address in _used_cells(obj):
            content = obj.getContents(address)
            try:
                value = float(content.lstrip("="))
            except ValueError:
                continue
            if value > 0 and obj.getAlias(address):
                yield (
                    f"{obj.Name}.{address} ({obj.getAlias(address)}) {value:g} -> x1.1",
                    lambda o=obj, a=address, v=value: o.set(a, f"{v * 1.1:.6g}"),
                    lambda o=obj, a=address, c=content: o.set(a, c),
                )
    for obj in doc.Objects:
        if obj.TypeId != "Sketcher::SketchObject" or obj.solve() != 0:
            continue  # a sketch with redundant or conflicting constraints takes no new value
        bound = _bound(obj)
        for index, constraint in enumerate(obj.Constraints):
            named = constraint.Name and f"Constraints.{constraint.Name}" in bound
            if constraint.Type in DATUMS and constraint.Driving and constraint.Value > 0:
                if named or f"Constraints[{index}]" in bound:
                    continue
                yield (
                    f"{obj.Name}: constraint {index} ({constraint.Type}) {constraint.Value:g} -> x1.1",
                    lambda o=obj, i=index, v=constraint.Value: o.setDatum(i, v * 1.1),
                    lambda o=obj, i=index, v=constraint.Value: o.setDatum(i, v),
                )
    for obj in doc.Objects:
        bound = _bound(obj)
        for name in LENGTHS:
            if name not in obj.PropertiesList or name in bound or _read_only(obj, name):
                continue
            value = getattr(obj, name)
            magnitude = getattr(value, "Value", value)
            if isinstance(magnitude, float | int) and not isinstance(magnitude, bool) and magnitude > 0:
                yield (
                    f"{obj.Name}.{name} {magnitude:g} -> x1.1",
                    lambda o=obj, n=name, m=magnitude: setattr(o, n, m * 1.1),
                    lambda o=obj, n=name, m=magnitude: setattr(o, n, m),
                )
    for obj in doc.Objects:
        if "Placement" in obj.PropertiesList and hasattr(obj, "Shape") and "Placement" not in _bound(obj):
            yield (
                f"{obj.Name}.Placement{MOVED}",
                lambda o=obj: _move(o, 10),
                lambda o=obj: _move(o, -10),
            )


def _move(obj: Any, dx: float) -> None:
    placement = obj.Placement
    base = placement.Base
    base.x += dx
    placement.Base = base
    obj.Placement = placement


def change(doc: Any, tries: int = 40, budget: float = 25.0) -> str:
    """Change one driving value (a spreadsheet cell with an alias, a sketch dimension, a length
    property) and recompute; a value whose change moves no shape is put back and the next one
    tried. Past half of ``budget`` seconds (or ``tries`` values) a placement is moved instead."""
    import time

    doc.recompute()
    start = _signature(doc)
    began = time.monotonic()
    candidates = list(_candidates(doc))
    driving = [c for c in candidates if not c[0].endswith(MOVED)][:tries]
    tried = 0
    for description, do, undo in driving + [c for c in candidates if c[0].endswith(MOVED)][:3]:
        if time.monotonic() - began > budget or (
            not description.endswith(MOVED) and time.monotonic() - began > budget / 2
        ):
            continue
        tried += 1
        try:
            do()
        except Exception:  # an unsolvable value: try the next one
            continue
        doc.recompute()
        if _signature(doc) != start:
            return description
        undo()
        doc.recompute()
    raise RuntimeError(
        f"no spreadsheet cell, sketch dimension, length property or placement changed a shape ({tried} tried "
        f"of {len(candidates)} in {time.monotonic() - began:.0f} s)"
    )
