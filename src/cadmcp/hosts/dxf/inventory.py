"""Every object of a DXF drawing by handle: kind, name and a digest of its exported tags.

Used by previews (`cadmcp.host.builtins.preview`): two inventories tell what a script
created, modified and deleted; their digest is the drawing's revision.
"""

from __future__ import annotations

import hashlib

from ezdxf.document import Drawing
from ezdxf.lldxf.tagwriter import TagCollector


def _name(entity: object) -> str:
    dxf = entity.dxf  # type: ignore[attr-defined]
    for attribute in ("name", "text", "tag"):
        value = dxf.get(attribute) if dxf.is_supported(attribute) else None
        if isinstance(value, str) and value:
            return value[:80]
    layer = dxf.get("layer") if dxf.is_supported("layer") else None
    return f"on layer {layer}" if isinstance(layer, str) and layer else ""


def inventory(doc: Drawing) -> dict[str, tuple[str, str, str]]:
    """handle -> (DXF type, name, digest of the entity's DXF tags) for every live entity."""
    out: dict[str, tuple[str, str, str]] = {}
    for handle, entity in list(doc.entitydb.items()):
        if not entity.is_alive:
            continue
        collector = TagCollector(dxfversion=doc.dxfversion)
        try:
            entity.export_dxf(collector)
            content = repr(collector.tags).encode()
        except Exception:  # an entity ezdxf cannot export still counts, by its attributes
            content = repr(sorted(entity.dxfattribs().items())).encode()
        digest = hashlib.blake2b(content, digest_size=10).hexdigest()
        out[handle] = (entity.dxftype(), _name(entity), digest)
    return out
