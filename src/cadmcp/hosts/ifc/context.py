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
    ``elementCounts`` (not annotations, grids or openings) contained in it, and its spaces (which
    are parts of it, by aggregation), so that the storeys add up to the model's total."""
    schema = declared_schema_name(f)
    rows = []
    for storey in f.by_type("IfcBuildingStorey"):
        held = [e for rel in storey.ContainsElements for e in rel.RelatedElements]
        held += [e for rel in getattr(storey, "IsDecomposedBy", ()) for e in rel.RelatedObjects]
        contained = sum(1 for e in {e.id(): e for e in held}.values() if _is_counted(schema, e.is_a()))
        rows.append(
            {
                "name": storey.Name,
                "elevation": storey.Elevation,
                "id": storey.id(),
                "globalId": storey.GlobalId,
                "elements": contained,
            }
        )
    return sorted(rows, key=lambda r: (r["elevation"] is None, r["elevation"] or 0.0, r["name"] or ""))


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
        "elementCounts": counts,
        "totalElements": sum(counts.values()),
        "history": {
            "undoSteps": doc.history.back_remaining,
            "redoSteps": doc.history.forward_available,
            "lastSteps": doc.history.undo_names()[:5],
        },
        "revision": doc.revision,
    }
