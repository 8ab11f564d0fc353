"""DXF probe: every entity of every block and layout by handle, with its full DXF tags."""

from __future__ import annotations

from typing import Any

DIGITS = 12


def canon(value: Any) -> Any:
    """A JSON-ready value; floats keep 12 significant digits so a text round trip compares equal."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, list | tuple) or (hasattr(value, "__iter__") and hasattr(value, "x")):
        return [canon(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)


def entity_tags(doc: Any, entity: Any) -> list[Any]:
    """The entity as it would be written to DXF (its sub-entities, e.g. VERTEX and ATTRIB, included)."""
    from ezdxf.lldxf.tagwriter import TagCollector

    collector = TagCollector(dxfversion=doc.dxfversion)
    entity.export_dxf(collector)
    return [[tag.code, canon(tag.value)] for tag in collector.tags]


def dump(doc: Any, normalized: bool = False) -> dict[str, Any]:
    """Entities of model space, paper space and block definitions, keyed by handle; layers by name.

    ``normalized`` dumps the drawing as it reads back after being written (ezdxf leaves out
    attributes at their default values when writing), which is what a save and reopen gives.
    """
    if normalized:
        doc = _written_and_read(doc)
    entities: dict[str, Any] = {}
    for block in doc.blocks:
        for entity in block:
            handle = entity.dxf.get("handle") or f"{block.name}#{len(entities)}"
            entities[handle] = {
                "block": block.name,
                "type": entity.dxftype(),
                "tags": entity_tags(doc, entity),
            }
    layers = {layer.dxf.name: entity_tags(doc, layer) for layer in doc.layers}
    return {
        "entities": entities,
        "layers": layers,
        "summary": {"entities": len(entities), "layers": len(layers)},
    }


def _written_and_read(doc: Any) -> Any:
    import io

    import ezdxf

    stream = io.StringIO()
    doc.write(stream)
    return ezdxf.read(io.StringIO(stream.getvalue()))


def change(doc: Any, msp: Any) -> str:
    """Add a LINE and move the first model-space entity that can be moved."""
    line = msp.add_line((0, 0), (100, 100), dxfattribs={"layer": "0"})
    moved = None
    for entity in list(msp):
        if entity is line:
            continue
        try:
            entity.translate(10, 10, 0)
        except Exception:
            continue
        moved = f"{entity.dxftype()} {entity.dxf.handle}"
        break
    return f"added LINE {line.dxf.handle}; moved {moved or 'nothing (no movable entity)'}"
