"""Every entity of an IFC model by step id: class, name and a digest of its STEP line.

Used by previews (`cadmcp.host.builtins.preview`): two inventories tell what a script
created, modified and deleted; their digest is the model's revision. A rooted entity's
GlobalId is left out of its digest: creating an element draws a fresh random one each time,
so applying a previewed script gives the previewed model with new GlobalIds. So are the times
of an IfcOwnerHistory: `ifcopenshell.api` stamps each change it makes in a model that keeps
owner history (IFC2X3 ones, and models from authoring tools) with the time of the call. And a
SET attribute (a relationship's RelatedObjects, a shell's faces) is digested in id order: the
schema says its order means nothing, and `ifcopenshell.api` rebuilds some from Python sets, so
the same removal gave a type relationship's objects in another order on every other run.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

_GLOBAL_ID = re.compile(r"^(#\d+=\w+\()'[^']*'")


_REFERENCE = re.compile(r"#(\d+)")
_OWNER_TIMES = (4, 7)
"""IfcOwnerHistory's LastModifiedDate and CreationDate (seconds since 1970)."""


def inventory(model: Any, baseline: Any = None) -> dict[str, tuple[str, str, str]]:
    """'#id' -> (IFC class, Name of a product or type or '', digest of its STEP line).

    With the inventory from before a change (`baseline`), entities created since are named
    `#new1`, `#new2`... in creation order, in keys and in references, so the same script run
    twice gives the same inventory although IfcOpenShell never hands out an id twice.
    """
    out: dict[str, tuple[str, str, str]] = {}
    renumber: dict[int, str] = {}
    if baseline is not None:
        known = max((int(k[1:]) for k in baseline if k[1:].isdigit()), default=0)
        created = sorted(e.id() for e in model if e.id() > known)
        renumber = {n: f"new{i + 1}" for i, n in enumerate(created)}

    def reference(match: re.Match[str]) -> str:
        return f"#{renumber.get(int(match.group(1)), match.group(1))}"

    for entity in model:
        line = str(entity)
        name = ""
        if entity.is_a("IfcRoot"):
            if entity.is_a("IfcProduct") or entity.is_a("IfcTypeObject"):  # what a person names
                value = getattr(entity, "Name", None)
                name = value[:80] if isinstance(value, str) else ""
            line = _GLOBAL_ID.sub(r"\1'*'", line, count=1)
        elif entity.is_a("IfcOwnerHistory"):
            values = [None if i in _OWNER_TIMES else _plain(v) for i, v in enumerate(entity)]
            line = f"#{entity.id()}=IfcOwnerHistory{tuple(values)!r}"
        sets = _set_attributes(entity)
        if sets and any(isinstance(entity[i], tuple) and len(entity[i]) > 1 for i in sets):
            values = [_plain(v) for v in entity]
            for i in sets:
                if isinstance(values[i], tuple):
                    values[i] = tuple(sorted(values[i], key=_order))
            if entity.is_a("IfcRoot"):
                values[0] = "*"
            line = f"#{entity.id()}={entity.is_a()}{tuple(values)!r}"
        if renumber:
            line = _REFERENCE.sub(reference, line)
        out[f"#{renumber.get(entity.id(), entity.id())}"] = (
            entity.is_a(),
            name,
            hashlib.blake2b(line.encode(), digest_size=10).hexdigest(),
        )
    return out


def _plain(value: Any) -> Any:
    """An attribute value with entity references as '#id' (which `inventory` renumbers)."""
    if hasattr(value, "id") and callable(value.id):
        return f"#{value.id()}" if value.id() else str(value)  # a typed value (IfcLabel('x')) has no id
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _order(value: Any) -> tuple[int, str]:
    """References by id (new ones after old, in creation order, as renumbered), other values as text."""
    text = str(value)
    return (int(text[1:]), "") if text[:1] == "#" and text[1:].isdigit() else (-1, text)


_SET_ATTRIBUTES: dict[str, tuple[int, ...]] = {}


def _set_attributes(entity: Any) -> tuple[int, ...]:
    """Positions of the entity's SET-typed attributes, by its schema (looked up once per class)."""
    kind = entity.is_a(True)
    found = _SET_ATTRIBUTES.get(kind)
    if found is None:
        found = ()
        try:
            import ifcopenshell.ifcopenshell_wrapper as wrapper

            schema, name = kind.split(".", 1)
            declaration = wrapper.schema_by_name(schema).declaration_by_name(name).as_entity()
            if declaration is not None:
                found = tuple(
                    i
                    for i, attribute in enumerate(declaration.all_attributes())
                    if (aggregate := attribute.type_of_attribute().as_aggregation_type()) is not None
                    and aggregate.type_of_aggregation_string() == "set"
                )
        except Exception:  # a class the schema cannot say: digested as written
            found = ()
        _SET_ATTRIBUTES[kind] = found
    return found
