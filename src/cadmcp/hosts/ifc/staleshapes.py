"""Edits after which an element's shape no longer shows what the model says: IfcOpenShell
keeps a wall's body as it was when the thickness of its material layers, the layers of its set
or their offset from its axis change (an authoring tool regenerates it; a script does not), so
pictures, quantities taken from the shape and every other application reading the file would
still show the old wall."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # IfcOpenShell loads with the first model, not with the host
    import ifcopenshell

SHOWN = 5
"""Elements named in the note; the rest are counted."""
_ATTRIBUTES = {
    "IfcMaterialLayer": {1: "LayerThickness"},
    "IfcMaterialLayerSet": {0: "MaterialLayers"},
    "IfcMaterialLayerSetUsage": {
        0: "ForLayerSet",
        1: "LayerSetDirection",
        2: "DirectionSense",
        3: "OffsetFromReferenceLine",
    },
}
"""The attributes whose edit changes a layered element's shape, by entity and index."""


def stale_shapes_note(file: ifcopenshell.file, operations: list[dict[str, Any]]) -> str:
    """A warning naming the elements whose layers the operations changed while their body
    shape stayed as it was, with what can rebuild them in this model, or "" when there are none."""
    edited = _edited(file, operations)
    if not edited:
        return ""
    created = {(op.get("value") or {}).get("id") for op in operations if op.get("action") == "create"}
    stale: dict[int, Any] = {}
    for element in _elements_of(file, edited):
        body = _body(element)
        if body is not None and body.id() not in created:  # a body made in this run is new
            stale[element.id()] = element
    if not stale:
        return ""
    shown = [stale[key] for key in sorted(stale)[:SHOWN]]
    names = ", ".join(f"#{e.id()} {e.is_a()} {e.Name!r}" for e in shown)
    more = f" and {len(stale) - SHOWN} more" if len(stale) > SHOWN else ""
    return (
        f"a material layer edit (thickness, layers or offset) changed what {len(stale)} "
        f"element{'s' if len(stale) != 1 else ''} "
        f"should look like ({names}{more}), but their shapes were not regenerated: pictures and other "
        f"applications still show them as before. {_how_to_rebuild(file, list(stale.values()))}"
    )


def _edited(file: ifcopenshell.file, operations: list[dict[str, Any]]) -> set[Any]:
    """The layer sets and layer set usages the operations edited in a way that moves a shape."""
    found: set[Any] = set()
    for op in operations:
        index = op.get("index")
        if op.get("action") != "edit" or not isinstance(index, int) or index > 3:
            continue
        try:
            entity = file.by_id(op["id"])
        except (RuntimeError, KeyError):  # deleted later in the same run
            continue
        kind = next((k for k, at in _ATTRIBUTES.items() if index in at and entity.is_a(k)), None)
        if kind is None or entity.attribute_name(index) != _ATTRIBUTES[kind][index]:
            continue
        if kind == "IfcMaterialLayer":
            found.update(entity.ToMaterialLayerSet or ())
        else:
            found.add(entity)
    return found


def _elements_of(file: ifcopenshell.file, edited: set[Any]) -> list[Any]:
    import ifcopenshell.util.element

    elements: list[Any] = []
    for material in edited:
        if material.is_a("IfcMaterialLayerSetUsage"):  # only the elements given this usage
            for rel in file.get_inverse(material):
                if rel.is_a("IfcRelAssociatesMaterial"):
                    elements.extend(rel.RelatedObjects)
        else:
            elements.extend(ifcopenshell.util.element.get_elements_by_material(file, material))
    return elements


def _how_to_rebuild(file: ifcopenshell.file, elements: list[Any]) -> str:
    """What api.geometry.regenerate_wall_representation would do in this model: it rebuilds walls
    only, needs a Model/Body/MODEL_VIEW context, and takes a wall's length from its axis in the
    Plan/Axis/GRAPH_VIEW context, else from its body's extrusion, else from its `length` argument."""
    import ifcopenshell.util.representation as rep

    undo = "navigate_history back undoes the edit."
    walls = [e for e in elements if e.is_a("IfcWall")]
    others = len(elements) - len(walls)
    by_hand = f"{others} are not walls: their bodies must be rebuilt by hand. " if others else ""
    if not walls:
        return f"Their bodies must be rebuilt by hand (a new extrusion of the new thickness); or {undo}"
    if rep.get_context(file, "Model", "Body", "MODEL_VIEW") is None:
        return (
            f"{by_hand}api.geometry.regenerate_wall_representation cannot rebuild the walls here (the "
            f"model has no Model/Body/MODEL_VIEW context); {undo}"
        )
    no_axis = sum(rep.get_representation(w, "Plan", "Axis", "GRAPH_VIEW") is None for w in walls)
    length = (
        f" {no_axis} of the walls have no Plan/Axis/GRAPH_VIEW axis: their length is taken from their "
        "body's extrusion, else from `length` (metres), as it is for walls from many other programs, so "
        "compare each wall's size before and after."
        if no_axis
        else ""
    )
    return (
        f"{by_hand}api.geometry.regenerate_wall_representation(model, wall, length=..., height=...) "
        f"rebuilds a wall from its layers (a clipped top is lost).{length} Or {undo}"
    )


def _body(element: Any) -> Any:
    """The element's Body shape representation, or None (a type, or no shape)."""
    shape = getattr(element, "Representation", None)
    if shape is None:
        return None
    return next((r for r in shape.Representations if r.RepresentationIdentifier == "Body"), None)
