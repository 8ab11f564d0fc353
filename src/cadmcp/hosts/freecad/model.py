"""Read-only views of a live FreeCAD document: context, warnings, one object, schedules."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from typing import Any

import FreeCAD as App

from cadmcp.host.builtins.adapter import PREVIEW_ROWS, NotFound
from cadmcp.hosts.freecad.bounded import bounded_shape
from cadmcp.hosts.freecad.fcstd import NotLoaded
from cadmcp.wire.echo import echo

__all__ = ["element_info", "list_schedules", "model_context", "model_warnings", "schedule_csv"]

MAX_OBJECTS = 200
MAX_WARNINGS = 50
MAX_COLUMNS = 52
MAX_PROPERTY_TEXT = 300
OLD_FLAGS_NOTE = (
    "fullyConstrained is null for sketches not recomputed since the file was opened: FreeCAD 0.19 and "
    "older kept no such flag (it reads false); sketch.touch() then doc.recompute() tells"
)
UNBOUNDED_NOTE = (
    "bounded solids and faces only: the unbounded planes of datums and coordinate systems (FreeCAD "
    "measures them to 1e100) are left out"
)
_CELL = re.compile(r"^([A-Z]{1,2})(\d+)$")


def _round(value: float) -> float:
    return round(float(value), 6)


def _vector(v: Any) -> list[float]:
    return [_round(v.x), _round(v.y), _round(v.z)]


def _box(box: Any) -> dict[str, list[float]] | None:
    if box is None or not box.isValid():
        return None
    return {"min": [_round(box.XMin), _round(box.YMin), _round(box.ZMin)],
            "max": [_round(box.XMax), _round(box.YMax), _round(box.ZMax)]}  # fmt: skip


def _shape(obj: Any) -> Any:
    shape = getattr(obj, "Shape", None)
    if shape is None or not hasattr(shape, "isNull") or shape.isNull():
        return None
    return shape


def _placement(p: Any) -> dict[str, Any]:
    axis = p.Rotation.Axis
    return {
        "position": _vector(p.Base),
        "rotation": {"axis": _vector(axis), "angleDeg": _round(p.Rotation.Angle * 180 / 3.141592653589793)},
    }


def _sketch(sketch: Any, solver_flags: bool = True) -> dict[str, Any]:
    """A sketch's size and state (``solver_flags``: its FullyConstrained flag can be trusted)."""
    info: dict[str, Any] = {
        "name": sketch.Name,
        "label": sketch.Label,
        "geometry": len(sketch.Geometry),
        "constraints": len(sketch.Constraints),
    }
    if hasattr(sketch, "FullyConstrained"):  # kept current by the recompute (solving here would edit it)
        # a file of FreeCAD 0.19 or older kept no flag (it reads false): not known until a recompute
        info["fullyConstrained"] = bool(sketch.FullyConstrained) if solver_flags else None
    support = getattr(sketch, "Support", None) or getattr(sketch, "AttachmentSupport", None)
    if support:
        info["support"] = [s[0].Name for s in support if s and hasattr(s[0], "Name")]
    return info


def _unknown(sketch: dict[str, Any]) -> bool:
    return "fullyConstrained" in sketch and sketch["fullyConstrained"] is None


def model_context(doc: Any, title: str, modified: bool, solved: set[str] | None = None) -> dict[str, Any]:
    """Title, path, units, objects by type, bodies, sketches, bounding box and history of ``doc``.
    ``solved``: for a file of FreeCAD 0.19 or older, the sketches recomputed since (the others'
    FullyConstrained flags were not kept, and are given as unknown)."""
    objects = list(doc.Objects)
    sketches = [
        _sketch(o, solved is None or o.Name in solved)
        for o in objects
        if o.isDerivedFrom("Sketcher::SketchObject")
    ]
    box = App.BoundBox()
    for obj in objects:
        shape = bounded_shape(_shape(obj))
        if shape is not None and all(u.TypeId.startswith("App::Link") for u in obj.InList):
            box.add(shape.BoundBox)  # what others use or contain is in their shapes; a link places a copy
    bodies = [
        {
            "name": body.Name,
            "label": body.Label,
            "tip": body.Tip.Name if getattr(body, "Tip", None) else None,
            "features": [f.Name for f in body.Group if not f.isDerivedFrom("Sketcher::SketchObject")],
            "volume": _round(body.Shape.Volume) if _shape(body) is not None else None,
        }
        for body in objects
        if body.TypeId == "PartDesign::Body"
    ]
    units = App.Units.listSchemas(App.Units.getSchema()) if hasattr(App.Units, "listSchemas") else None
    return {
        "title": title,
        "name": doc.Name,
        "label": doc.Label,
        "path": doc.FileName or None,
        "modified": modified,
        "units": {"schema": units, "length": "mm"},
        "objectCounts": dict(Counter(o.TypeId for o in objects).most_common()),
        "totalObjects": len(objects),
        "bodies": bodies,
        "sketches": sketches[:MAX_OBJECTS],
        **({"sketchesNote": OLD_FLAGS_NOTE} if any(_unknown(k) for k in sketches) else {}),
        "objects": [
            {
                "name": o.Name,
                "label": o.Label,
                "type": o.TypeId,
                "visible": bool(getattr(o, "Visibility", True)),
            }
            for o in objects[:MAX_OBJECTS]
        ],
        "objectsTruncated": len(objects) > MAX_OBJECTS,
        "boundingBox": _box(box),
        "history": {
            "undo": len(doc.UndoNames),
            "redo": len(doc.RedoNames),
            "last": list(doc.UndoNames)[:5],
        },
    }


def model_warnings(doc: Any, title: str, lost: NotLoaded | None = None) -> dict[str, Any]:
    """Objects of the file FreeCAD did not load (or loaded without their Python class), recompute
    errors (unsolvable sketches among them), objects waiting for a recompute, invalid shapes."""
    issues: list[dict[str, Any]] = []
    if lost is not None:
        issues += [
            {
                "kind": "not_loaded",
                "object": name,
                "type": kind,
                "message": f"{kind} is not a type this FreeCAD knows; the object is only in {lost.path.name}",
            }
            for name, kind in lost.missing.items()
        ]
        issues += [
            {
                "kind": "class_not_loaded",
                "object": name,
                "type": doc.getObject(name).TypeId if doc.getObject(name) else "",
                "message": f"its Python class {pyclass} could not be imported (an add-on not installed "
                "here): it keeps the shape it was saved with and does not recompute",
            }
            for name, pyclass in lost.classless.items()
        ]
    for obj in doc.Objects:
        state = list(obj.State)
        if "Invalid" in state or "Error" in state:
            issues.append(
                {
                    "kind": "recompute_error",
                    "object": obj.Name,
                    "type": obj.TypeId,
                    "message": echo(obj.getStatusString(), MAX_PROPERTY_TEXT),
                }
            )
        elif "Touched" in state:
            issues.append({"kind": "needs_recompute", "object": obj.Name, "type": obj.TypeId})
        shape = _shape(obj)
        if shape is not None:
            try:
                valid = shape.isValid()
            except Exception:
                valid = False
            if not valid:
                issues.append({"kind": "invalid_shape", "object": obj.Name, "type": obj.TypeId})
    groups = Counter(i["kind"] for i in issues)
    return {
        "document": title,
        "total": len(issues),
        "groups": dict(groups),
        "issues": issues[:MAX_WARNINGS],
        "truncated": len(issues) > MAX_WARNINGS,
        "checked": "objects of the file FreeCAD did not load (or without their add-on's Python class), "
        "object states after the last recompute "
        "(sketch solver failures included), shape validity "
        "(BRepCheck)",
    }


def find_object(doc: Any, element_id: str) -> Any:
    """An object by name, else by label; the error lists some names."""
    key = str(element_id).strip()
    obj = doc.getObject(key) if key and len(key) < 256 else None
    if obj is None:
        matches = doc.getObjectsByLabel(key) if key else []
        obj = matches[0] if matches else None
    if obj is None:
        some = ", ".join(o.Name for o in list(doc.Objects)[:15]) or "none"
        raise NotFound(
            f"No object is named or labelled {echo(key)} in {doc.Label}. Objects include: {some} (see "
            "freecad://model/context)."
        )
    return obj


def _jsonable(value: Any, depth: int = 0) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value if not isinstance(value, str) else value[:MAX_PROPERTY_TEXT]
    if isinstance(value, float):
        return _round(value)
    if isinstance(value, App.Vector):
        return _vector(value)
    if isinstance(value, App.Placement):
        return _placement(value)
    if hasattr(value, "Value") and hasattr(value, "Unit"):  # a Quantity
        return value.UserString
    if hasattr(value, "Name") and hasattr(value, "TypeId") and hasattr(value, "Document"):
        return {"object": value.Name}
    if hasattr(value, "ShapeType") and hasattr(value, "isNull"):  # a Part shape: its figures are in "shape"
        return None if value.isNull() else f"<{value.ShapeType}>"
    if isinstance(value, list | tuple) and depth < 2:
        items = [_jsonable(v, depth + 1) for v in value[:20]]
        return items + ([f"... {len(value) - 20} more"] if len(value) > 20 else [])
    text = repr(value)
    return text if len(text) <= MAX_PROPERTY_TEXT else text[: MAX_PROPERTY_TEXT - 1] + "…"


def element_info(doc: Any, element_id: str) -> dict[str, Any]:
    """One object as JSON: type, label, placement, properties, shape figures, links."""
    obj = find_object(doc, element_id)
    properties: dict[str, Any] = {}
    for name in obj.PropertiesList:
        if name in ("Shape", "Proxy", "ExpressionEngine") or _CELL.match(name):
            continue
        try:
            properties[name] = _jsonable(getattr(obj, name))
        except Exception:
            continue
    info: dict[str, Any] = {
        "name": obj.Name,
        "label": obj.Label,
        "type": obj.TypeId,
        "state": list(obj.State),
        "properties": properties,
        "uses": [o.Name for o in obj.OutList][:50],
        "usedBy": [o.Name for o in obj.InList][:50],
    }
    if hasattr(obj, "Placement"):
        info["placement"] = _placement(obj.Placement)
    shape = _shape(obj)
    if shape is not None:
        bounded = bounded_shape(shape)
        info["shape"] = {
            "type": shape.ShapeType,
            "valid": bool(shape.isValid()),
            "volume": _round(bounded.Volume) if bounded is not None else None,
            "area": _round(bounded.Area) if bounded is not None else None,
            "boundingBox": _box(bounded.BoundBox) if bounded is not None else None,
            "solids": len(shape.Solids),
            "faces": len(shape.Faces),
            "edges": len(shape.Edges),
            "vertexes": len(shape.Vertexes),
        }
        if bounded is not shape:
            info["shape"]["measured"] = UNBOUNDED_NOTE
    if obj.isDerivedFrom("Sketcher::SketchObject"):
        info["sketch"] = _sketch(obj)
    return info


def _sheets(doc: Any) -> list[Any]:
    return [o for o in doc.Objects if o.TypeId == "Spreadsheet::Sheet"]


def _cells(sheet: Any) -> dict[tuple[int, int], str]:
    """Non-empty cells by (row, column), 1-based, with their displayed values."""
    cells: dict[tuple[int, int], str] = {}
    for name in sheet.PropertiesList:
        match = _CELL.match(name)
        if not match:
            continue
        letters, row = match.groups()
        column = 0
        for ch in letters:
            column = column * 26 + (ord(ch) - 64)
        try:
            value = sheet.get(name)
        except Exception:
            value = sheet.getContents(name)
        cells[(int(row), column)] = str(_jsonable(value))
    return cells


def _objects_rows(doc: Any) -> list[list[str]]:
    rows = [["Name", "Label", "Type", "Volume", "Area", "XMin", "YMin", "ZMin", "XMax", "YMax", "ZMax"]]
    for obj in doc.Objects:
        shape = bounded_shape(_shape(obj))
        figures = ["", "", "", "", "", "", "", ""]
        if shape is not None:
            b = shape.BoundBox
            figures = [
                f"{v:.6g}" for v in (shape.Volume, shape.Area, b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)
            ]
        rows.append([obj.Name, obj.Label, obj.TypeId, *figures])
    return rows


def list_schedules(doc: Any) -> list[dict[str, Any]]:
    """The spreadsheets of ``doc`` and the built-in ``objects`` table, with row counts."""
    out = [
        {
            "id": "objects",
            "title": "Every object with its shape's volume, area and bounding box",
            "rows": len(doc.Objects),
            "uri": "freecad://schedule/objects/preview",
        }
    ]
    for sheet in _sheets(doc):
        cells = _cells(sheet)
        out.append(
            {
                "id": sheet.Name,
                "title": f"Spreadsheet {sheet.Label}",
                "rows": max((r for r, _ in cells), default=0),
                "uri": f"freecad://schedule/{sheet.Name}/preview",
            }
        )
    return out


def schedule_csv(doc: Any, schedule_id: str, limit: int = PREVIEW_ROWS) -> str:
    """CSV of a schedule: header row and the first ``limit`` rows (spreadsheets: from row 1)."""
    key = str(schedule_id).strip()
    if key == "objects":
        rows = _objects_rows(doc)
        header, body = rows[0], rows[1:]
    else:
        sheet = next((s for s in _sheets(doc) if key in (s.Name, s.Label)), None)
        if sheet is None:
            ids = ", ".join(["objects", *(s.Name for s in _sheets(doc))])
            raise NotFound(f"No schedule {echo(key)}. Available schedules: {ids} (see freecad://schedules).")
        cells = _cells(sheet)
        columns = min(max((c for _, c in cells), default=1), MAX_COLUMNS)
        last_row = max((r for r, _ in cells), default=0)
        grid = [[cells.get((r, c), "") for c in range(1, columns + 1)] for r in range(1, last_row + 1)]
        header, body = grid[0] if grid else [], grid[1:]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(body[:limit])
    if len(body) > limit:
        writer.writerow([f"# {len(body) - limit} more rows not shown"])
    return out.getvalue()
