"""Every object of a DXF drawing by handle: kind, name and a digest of its exported tags; and
every header variable by name (a script that sets ``$INSUNITS`` changes the drawing).

Used by previews (`cadmcp.host.builtins.preview`): two inventories tell what a script
created, modified and deleted; their digest is the drawing's revision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ezdxf.document import Drawing
from ezdxf.lldxf.tags import DXFTag
from ezdxf.lldxf.tagwriter import TagCollector

PARTS = frozenset({"VERTEX", "SEQEND"})
"""Entities that are parts of another (a polyline's vertices, the end marker of its vertices or of
an INSERT's attributes): not listed of their own. A POLYLINE's digest covers its vertices, so moving
a polyline is one POLYLINE modified, not its 57 VERTEX handles."""
WITH_PARTS = frozenset({"POLYLINE"})


def _name(entity: object) -> str:
    dxf = entity.dxf  # type: ignore[attr-defined]
    for attribute in ("name", "text", "tag"):
        value = dxf.get(attribute) if dxf.is_supported(attribute) else None
        if isinstance(value, str) and value:
            return value[:80]
    layer = dxf.get("layer") if dxf.is_supported("layer") else None
    return f"on layer {layer}" if isinstance(layer, str) and layer else ""


def _own(tags: list[DXFTag]) -> list[DXFTag]:
    """An entity's own tags: an INSERT's or a POLYLINE's export goes on with its ATTRIBs or VERTEXes
    and SEQEND, which are objects of their own (a changed attribute modifies the ATTRIB alone)."""
    for index, tag in enumerate(tags[1:], 1):
        if tag.code == 0:
            return tags[:index]
    return tags


TABLE_ENTRIES = frozenset(
    {"APPID", "BLOCK_RECORD", "DIMSTYLE", "LAYER", "LTYPE", "STYLE", "UCS", "VIEW", "VPORT"}
)


def _as_written(kind: str, tags: list[DXFTag]) -> list[DXFTag]:
    """The tags without what ezdxf sets only when it writes the drawing: a table's entry count
    (its entries are objects of their own) and a table entry's owner (always its table). A drawing
    saved is then the same revision as before, whether or not it had been written by ezdxf."""
    if kind == "TABLE":
        return [t for t in tags if t.code != 70]
    if kind in TABLE_ENTRIES:
        return [t for t in tags if t.code != 330]
    return tags


HEADER_KIND = "header variable"
SAVE_MAINTAINED = frozenset(
    {
        "$ACADVER",
        "$ACADMAINTVER",
        "$DWGCODEPAGE",
        "$HANDSEED",
        "$CMATERIAL",
        "$TDCREATE",
        "$TDUCREATE",
        "$TDUPDATE",
        "$TDUUPDATE",
        "$VERSIONGUID",
        "$FINGERPRINTGUID",
        "$EXTMIN",
        "$EXTMAX",
        "$PEXTMIN",
        "$PEXTMAX",
        "$LIMMIN",
        "$LIMMAX",
        "$PLIMMIN",
        "$PLIMMAX",
    }
)
"""Header variables ezdxf itself sets when it saves a drawing (`Drawing.update_all`): not a change."""


def changed_header(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Names of the header variables that differ between two ``HeaderSection.hdrvars``."""
    names = (before.keys() | after.keys()) - SAVE_MAINTAINED
    return sorted(n for n in names if _value(before.get(n)) != _value(after.get(n)))


def _value(variable: Any) -> Any:
    return None if variable is None else getattr(variable, "value", variable)


def inventory(doc: Drawing) -> dict[str, tuple[str, str, str]]:
    """handle -> (DXF type, name, digest of the entity's DXF tags) for every live entity, and
    ``$NAME`` -> ("header variable", ``$NAME``, digest of its value) for the header's variables."""
    out: dict[str, tuple[str, str, str]] = {}
    for name, variable in doc.header.hdrvars.items():
        if name not in SAVE_MAINTAINED:
            digest = hashlib.blake2b(repr(_value(variable)).encode(), digest_size=10).hexdigest()
            out[name] = (HEADER_KIND, name, digest)
    for handle, entity in list(doc.entitydb.items()):
        if not entity.is_alive or entity.dxftype() in PARTS:
            continue
        collector = TagCollector(dxfversion=doc.dxfversion)
        try:
            entity.export_dxf(collector)
            tags = collector.tags if entity.dxftype() in WITH_PARTS else _own(collector.tags)
            content = repr(_as_written(entity.dxftype(), tags)).encode()
        except Exception:  # an entity ezdxf cannot export still counts, by its attributes
            content = repr(sorted(entity.dxfattribs().items())).encode()
        digest = hashlib.blake2b(content, digest_size=10).hexdigest()
        out[handle] = (entity.dxftype(), _name(entity), digest)
    return out


def part_owners(entities: Iterable[Any]) -> dict[int, str]:
    """``id()`` of each part (`PARTS`) of the live POLYLINEs and INSERTs among `entities` -> its
    owner's handle (ezdxf's own ``owner`` of a vertex names the layout, not the polyline)."""
    owners: dict[int, str] = {}
    for entity in entities:
        kind = entity.dxftype()
        if kind not in ("POLYLINE", "INSERT") or not entity.is_alive:
            continue
        handle = entity.dxf.handle
        for part in [*(entity.vertices if kind == "POLYLINE" else ()), getattr(entity, "seqend", None)]:
            if part is not None:
                owners[id(part)] = handle
    return owners
