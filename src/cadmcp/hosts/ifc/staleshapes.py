"""Edits after which an element's shape no longer shows what the model says: IfcOpenShell
keeps a wall's body as it was when the thickness of its material layers changes (an authoring
tool regenerates it; a script does not), so pictures, quantities taken from the shape and
every other application reading the file would still show the old wall."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # IfcOpenShell loads with the first model, not with the host
    import ifcopenshell

SHOWN = 5
"""Elements named in the note; the rest are counted."""
_INDEXES = {"IfcMaterialLayer": ("LayerThickness", 1), "IfcMaterialLayerSet": ("MaterialLayers", 0)}
"""The attributes whose edit changes a layered element's shape, by entity, with their index."""


def stale_shapes_note(file: ifcopenshell.file, operations: list[dict[str, Any]]) -> str:
    """A warning naming the elements whose layer set's thickness the operations changed while
    their body shape stayed as it was, or "" when there are none."""
    layer_sets = _edited_layer_sets(file, operations)
    if not layer_sets:
        return ""
    import ifcopenshell.util.element

    created = {(op.get("value") or {}).get("id") for op in operations if op.get("action") == "create"}
    stale: dict[int, ifcopenshell.entity_instance] = {}
    for layer_set in layer_sets:
        for element in ifcopenshell.util.element.get_elements_by_material(file, layer_set):
            body = _body(element)
            if body is not None and body.id() not in created:  # a body made in this run is new
                stale[element.id()] = element
    if not stale:
        return ""
    shown = [stale[key] for key in sorted(stale)[:SHOWN]]
    names = ", ".join(f"#{e.id()} {e.is_a()} {e.Name!r}" for e in shown)
    more = f" and {len(stale) - SHOWN} more" if len(stale) > SHOWN else ""
    return (
        f"a material layer's thickness changed, but the shapes of {len(stale)} elements using it "
        f"({names}{more}) were not regenerated: pictures and other applications still show the old "
        "thickness. For a wall with an axis, api.geometry.regenerate_wall_representation(model, wall, "
        "length=..., height=...) rebuilds its body from the layers (a clipped top is lost); or "
        "navigate_history back to undo the edit."
    )


def _edited_layer_sets(file: ifcopenshell.file, operations: list[dict[str, Any]]) -> set[Any]:
    found: set[Any] = set()
    indexes = {index for _, index in _INDEXES.values()}
    for op in operations:
        if op.get("action") != "edit" or op.get("index") not in indexes:
            continue
        try:
            entity = file.by_id(op["id"])
        except (RuntimeError, KeyError):  # deleted later in the same run
            continue
        index = op["index"]
        kind = next((k for k, (_, at) in _INDEXES.items() if at == index and entity.is_a(k)), None)
        if kind is None or entity.attribute_name(index) != _INDEXES[kind][0]:
            continue
        if kind == "IfcMaterialLayer":
            found.update(entity.ToMaterialLayerSet or ())
        else:
            found.add(entity)
    return found


def _body(element: Any) -> Any:
    """The element's Body shape representation, or None (a type, or no shape)."""
    shape = getattr(element, "Representation", None)
    if shape is None:
        return None
    return next((r for r in shape.Representations if r.RepresentationIdentifier == "Body"), None)
