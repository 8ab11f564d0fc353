"""Element lookup and the JSON behind ``ifc://element/{elementId}``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import ifcopenshell

from cadmcp.host.builtins.adapter import NotFound
from cadmcp.wire.echo import echo

_GUID = re.compile(r"^[0-9A-Za-z_$]{22}$")
MAX_LIST = 50


class ElementNotFound(NotFound):
    """No element has the given step id or GlobalId; the message says how to find one."""


def find_element(f: ifcopenshell.file, element_id: str) -> ifcopenshell.entity_instance:
    """An element by step id (``123`` or ``#123``) or 22-character GlobalId."""
    key = unquote(str(element_id)).strip()
    hint = (
        "Use a step id like '123' or a 22-character GlobalId; read ifc://schedules or run "
        "execute_python_code with model.by_type('IfcWall') to list elements."
    )
    if re.fullmatch(r"#?\d{1,18}", key):
        try:
            return f.by_id(int(key.lstrip("#")))
        except (RuntimeError, OverflowError):
            raise ElementNotFound(f"No entity with step id #{key.lstrip('#')} in the model. {hint}") from None
    if _GUID.match(key):
        try:
            return f.by_guid(key)
        except RuntimeError:
            raise ElementNotFound(f"No element with GlobalId {echo(key)} in the model. {hint}") from None
    raise ElementNotFound(f"{echo(key)} is neither a step id nor a GlobalId. {hint}")


def storey_of(element: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance | None:
    """The spatial container of an element (spaces: the storey they are part of)."""
    import ifcopenshell.util.element

    container = ifcopenshell.util.element.get_container(element)
    # IFC4's IfcSpatialElement; IFC2X3 has only IfcSpatialStructureElement (its spaces are under it)
    if container is None and (
        element.is_a("IfcSpatialElement") or element.is_a("IfcSpatialStructureElement")
    ):
        container = ifcopenshell.util.element.get_aggregate(element)
    return container


def ref(entity: ifcopenshell.entity_instance | None) -> dict[str, Any] | None:
    """A compact reference to another entity."""
    if entity is None:
        return None
    out: dict[str, Any] = {"id": entity.id(), "class": entity.is_a()}
    if hasattr(entity, "GlobalId"):
        out["globalId"] = entity.GlobalId
    name = getattr(entity, "Name", None)
    if name is not None:
        out["name"] = name
    return out


def plain(value: Any) -> Any:
    """An attribute value as JSON: entities become ``#id=IfcClass`` strings, long lists are cut."""
    if isinstance(value, ifcopenshell.entity_instance):
        return f"#{value.id()}={value.is_a()}" if value.id() else plain(value.wrappedValue)
    if isinstance(value, tuple | list):
        items = [plain(v) for v in value[:MAX_LIST]]
        if len(value) > MAX_LIST:
            items.append(f"… {len(value) - MAX_LIST} more")
        return items
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return str(value)


def element_info(
    element: ifcopenshell.entity_instance,
    bounding_box: Callable[[ifcopenshell.entity_instance], dict[str, list[float]] | None] | None = None,
) -> dict[str, Any]:
    """Class, identity, storey, type, property and quantity sets, attributes and bounding box."""
    import ifcopenshell.util.element

    info: dict[str, Any] = {"id": element.id(), "class": element.is_a()}
    for key in ("GlobalId", "Name", "Description", "ObjectType", "PredefinedType", "Tag"):
        if hasattr(element, key):
            info[key] = plain(getattr(element, key))
    if element.is_a("IfcProduct") or element.is_a("IfcTypeObject"):
        info["storey"] = ref(storey_of(element)) if element.is_a("IfcProduct") else None
        info["type"] = ref(ifcopenshell.util.element.get_type(element))
    if element.is_a("IfcObjectDefinition"):
        info["psets"] = ifcopenshell.util.element.get_psets(element, psets_only=True)
        info["qtos"] = ifcopenshell.util.element.get_psets(element, qtos_only=True)
    info["attributes"] = {
        k: plain(v) for k, v in element.get_info(recursive=False).items() if k not in ("id", "type")
    }
    if bounding_box is not None and element.is_a("IfcProduct") and element.Representation is not None:
        info["boundingBox"] = bounding_box(element)
    return info
