"""The live model summary behind ``ifc://model/context``: never cached, cheap to compute."""

from __future__ import annotations

from functools import cache
from typing import Any

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper

from cadmcp.hosts.ifc.documents import IfcDocument
from cadmcp.hosts.ifc.schemas import declared_schema_name


@cache
def _is_counted(schema: str, ifc_class: str) -> bool:
    """Physical elements (walls, doors, slabs…) and spaces; not openings or other features."""
    try:
        decl = wrapper.schema_by_name(schema).declaration_by_name(ifc_class)
    except Exception:
        return False
    names = []
    while decl is not None:
        names.append(decl.name())
        decl = decl.supertype() if hasattr(decl, "supertype") else None
    return ("IfcElement" in names and "IfcFeatureElement" not in names) or "IfcSpace" in names


def element_counts(f: ifcopenshell.file) -> dict[str, int]:
    """Instances per element class present in the model, largest first (no per-element work)."""
    schema = declared_schema_name(f)
    counts = {
        cls: len(f.by_type(cls, include_subtypes=False)) for cls in f.types() if _is_counted(schema, cls)
    }
    return dict(sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0])))


def project_unit(f: ifcopenshell.file, kind: str = "LENGTHUNIT") -> str | None:
    """The project's unit of a kind (``LENGTHUNIT``, ``AREAUNIT``...), e.g. ``METRE`` or
    ``MILLIMETRE``; None without a project (a file of bare geometry declares no units) or that unit."""
    import ifcopenshell.util.unit

    if not f.by_type("IfcProject"):
        return None
    try:
        unit = ifcopenshell.util.unit.get_project_unit(f, kind)
        return ifcopenshell.util.unit.get_full_unit_name(unit) if unit is not None else None
    except Exception:  # a unit assignment IfcOpenShell cannot read: not said
        return None


def storeys(f: ifcopenshell.file) -> list[dict[str, Any]]:
    """Building storeys by elevation with the number of elements each holds: the elements counted in
    ``elementCounts`` (not annotations, grids or openings) placed in it, in its spaces or as parts
    of those (a stair's flights, a curtain wall's panels), and its spaces, so that the storeys add
    up to the model's total."""
    schema = declared_schema_name(f)
    below = _below(f)
    rows = []
    for storey in f.by_type("IfcBuildingStorey"):
        held = _held(storey, below)
        rows.append(
            {
                "name": storey.Name,
                "elevation": _shown(storey.Elevation),
                "id": storey.id(),
                "globalId": storey.GlobalId,
                "elements": sum(1 for e in held.values() if _is_counted(schema, e.is_a())),
            }
        )
    return sorted(rows, key=lambda r: (r["elevation"] is None, r["elevation"] or 0.0, r["name"] or ""))


def _shown(value: float | None) -> float | None:
    """A length as written to be read: the float noise of the writer's arithmetic left out
    (3.100000000000378 is 3.1), to a millionth of the unit."""
    return None if value is None else round(float(value), 6) + 0.0  # + 0.0: no -0.0


def _below(f: ifcopenshell.file) -> dict[int, list[Any]]:
    """What each object contains or is made of, by its step id: read off the relationships once
    (asking each element for its inverse attributes costs seconds on a large model)."""
    below: dict[int, list[Any]] = {}
    for rel in f.by_type("IfcRelContainedInSpatialStructure"):
        if rel.RelatingStructure is not None:
            below.setdefault(rel.RelatingStructure.id(), []).extend(rel.RelatedElements or ())
    for rel in f.by_type("IfcRelAggregates"):
        if rel.RelatingObject is not None:
            below.setdefault(rel.RelatingObject.id(), []).extend(rel.RelatedObjects or ())
    return below


def _held(place: Any, below: dict[int, list[Any]]) -> dict[int, Any]:
    """Everything under a spatial element, by step id: what it contains and what it is made of,
    and theirs in turn, short of another storey (listed on its own)."""
    held: dict[int, Any] = {}
    todo = [place.id()]
    while todo:
        for e in below.get(todo.pop(), ()):
            step = e.id()
            if step not in held and not e.is_a("IfcBuildingStorey"):
                held[step] = e
                if step in below:
                    todo.append(step)
    return held


MAX_PARTS = 50
"""Parts of a facility listed in the context (the rest counted)."""


def facilities(f: ifcopenshell.file) -> list[dict[str, Any]]:
    """IFC4X3's facilities other than buildings (roads, bridges, railways...), each with the number
    of elements it holds and its parts (segments, intersections...) with theirs: what `storeys`
    is for a building. Empty for other schemas and for buildings."""
    schema = declared_schema_name(f)
    try:
        found = [x for x in f.by_type("IfcFacility") if not x.is_a("IfcBuilding")]
    except RuntimeError:  # a schema without facilities (IFC2X3, IFC4)
        return []
    below = _below(f)
    rows = []
    for facility in found:
        parts = sorted(
            (p for p in below.get(facility.id(), ()) if p.is_a("IfcFacilityPart")),
            key=lambda p: (p.Name or "", p.id()),
        )
        row = {
            **_place(facility, schema, below),
            "parts": [_place(p, schema, below) for p in parts[:MAX_PARTS]],
        }
        if len(parts) > MAX_PARTS:
            row["partsNotListed"] = len(parts) - MAX_PARTS
        rows.append(row)
    return rows


def _place(place: Any, schema: str, below: dict[int, list[Any]]) -> dict[str, Any]:
    kind = getattr(place, "PredefinedType", None)
    kind = getattr(kind, "wrappedValue", kind)
    return {
        "name": place.Name,
        "class": place.is_a(),
        **({"type": kind} if isinstance(kind, str) else {}),
        "id": place.id(),
        "globalId": place.GlobalId,
        "elements": sum(1 for e in _held(place, below).values() if _is_counted(schema, e.is_a())),
    }


def ground_floor(levels: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Of `storeys` rows (by elevation), the ground floor: the lowest at or above elevation 0 that
    holds elements (a foundation or basement level below 0 is not it), else the lowest that holds
    any, else the lowest."""
    holding = [r for r in levels if r["elements"]] or levels
    above = [r for r in holding if isinstance(r["elevation"], int | float) and r["elevation"] >= -1e-6]
    return (above or holding or [None])[0]


def model_context(doc: IfcDocument) -> dict[str, Any]:
    """Title, path, schema, project, units, storeys, element counts and history of ``doc``."""
    f = doc.file
    projects = f.by_type("IfcProject")
    counts = element_counts(f)
    return {
        "title": doc.title,
        "path": str(doc.path) if doc.path else None,
        "modified": doc.modified,
        "schema": f.schema_identifier,
        "project": projects[0].Name if projects else None,
        "units": {"length": project_unit(f)},
        "storeys": storeys(f),
        **({"facilities": found} if (found := facilities(f)) else {}),
        "elementCounts": counts,
        "totalElements": sum(counts.values()),
        "history": {
            "undoSteps": doc.history.back_remaining,
            "redoSteps": doc.history.forward_available,
            "lastSteps": doc.history.undo_names()[:5],
        },
        "revision": doc.revision,
    }
