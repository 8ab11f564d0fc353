"""IFC probe: every entity instance by id, with its type and all attribute values."""

from __future__ import annotations

from typing import Any

DIGITS = 12


def canon(value: Any) -> Any:
    """A JSON-ready value: references become '#id', typed values [type, value], floats 12 digits."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, list | tuple):
        return [canon(v) for v in value]
    if hasattr(value, "is_a") and hasattr(value, "id"):
        if value.id():
            return f"#{value.id()}"
        return [value.is_a(), canon(value.wrappedValue)]
    return repr(value)


def dump(model: Any) -> dict[str, Any]:
    """All instances keyed by step id: class and attribute values in schema order."""
    entities: dict[str, Any] = {}
    for instance in model:
        entities[str(instance.id())] = [instance.is_a(), [canon(v) for v in instance]]
    return {"entities": entities, "summary": {"entities": len(entities), "schema": model.schema}}


def change(model: Any) -> str:
    """Rename the first element with a local placement and move it 1 unit along x (else rename any
    root; in bare geometry, move a point). An element placed on a grid (IfcGridPlacement) is not
    moved: its place is a grid intersection, which has no matrix to edit."""
    import ifcopenshell.api.attribute
    import ifcopenshell.api.geometry
    import ifcopenshell.util.placement

    elements = sorted(
        (
            e
            for e in model.by_type("IfcElement")
            if e.ObjectPlacement is not None and e.ObjectPlacement.is_a("IfcLocalPlacement")
        ),
        key=lambda e: e.id(),
    )
    target = (
        elements[0] if elements else next(iter(sorted(model.by_type("IfcRoot"), key=lambda e: e.id())), None)
    )
    if target is None:  # bare geometry (web-ifc's test.ifc): move one point of it
        point = min(model.by_type("IfcCartesianPoint"), key=lambda p: p.id(), default=None)
        if point is None:
            raise RuntimeError("the model has no IfcRoot and no IfcCartesianPoint to change")
        point.Coordinates = (point.Coordinates[0] + 1.0, *point.Coordinates[1:])
        return f"moved IfcCartesianPoint #{point.id()} 1 unit along x (no IfcRoot in the model)"
    name = f"{target.Name or ''} (changed)"
    ifcopenshell.api.attribute.edit_attributes(model, product=target, attributes={"Name": name})
    if not elements:
        return f"renamed {target.is_a()} #{target.id()}"
    matrix = ifcopenshell.util.placement.get_local_placement(target.ObjectPlacement)
    matrix[0][3] += 1.0
    ifcopenshell.api.geometry.edit_object_placement(model, product=target, matrix=matrix, is_si=False)
    return f"renamed and moved {target.is_a()} #{target.id()}"
