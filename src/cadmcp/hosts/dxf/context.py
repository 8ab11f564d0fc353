"""Read-only views of a live drawing: model context, audit warnings, one element as JSON."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cadmcp.hosts.dxf.coverage import layer_of
from cadmcp.hosts.dxf.documents import DxfDocument, DxfHostError
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from ezdxf.entities import DXFEntity

__all__ = ["element_info", "jsonable", "model_context", "model_warnings"]

_BBOX_ENTITY_LIMIT = 5000
_MAX_WARNINGS = 50
_LIVE_AUDIT_LIMIT = 30_000


def jsonable(value: Any) -> Any:
    """Convert ezdxf values (Vec3, tuples, bytes …) into JSON-friendly ones."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return round(value, 9)
    if hasattr(value, "x") and hasattr(value, "y") and hasattr(value, "z"):
        return [jsonable(value.x), jsonable(value.y), jsonable(value.z)]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _units_name(code: int) -> str:
    from ezdxf import units

    try:
        return units.unit_name(code) or "unitless"
    except (KeyError, IndexError, TypeError):
        return f"unknown ({code})"


def effective_names(doc: Any, names: Iterable[str]) -> dict[str, str]:
    """Block name -> the name a person knows it by: a dynamic block's references insert anonymous
    blocks (`*U33`), each naming the dynamic block it is a state of ("Section Callout")."""
    from ezdxf import dynblkhelper

    out: dict[str, str] = {}
    for name in names:
        out[name] = name
        block = doc.blocks.get(name) if name.startswith("*") else None
        if block is not None and (handle := dynblkhelper.get_dynamic_block_record_handle(block.block_record)):
            record = doc.entitydb.get(handle)
            if record is not None and record.is_alive:
                out[name] = record.dxf.name
    return out


def model_context(entry: DxfDocument) -> dict[str, Any]:
    """Live state of a document: header, layers with counts, layouts, blocks, extents, history."""
    doc = entry.doc
    header = doc.header
    layer_counts: Counter[str] = Counter()
    inserted: Counter[str] = Counter()  # block references placed in the layouts, by block name
    layouts: list[dict[str, Any]] = []
    for layout in doc.layouts:
        types: Counter[str] = Counter()
        for entity in layout.entity_space.entities:
            if entity.is_alive:
                types[entity.dxftype()] += 1
                if entity.dxftype() == "INSERT":
                    inserted[entity.dxf.name] += 1
                if (layer := layer_of(entity)) is not None:
                    layer_counts[layer] += 1
        layouts.append(
            {
                "name": layout.name,
                "kind": "model" if layout.is_modelspace else "paper",
                "entities": sum(types.values()),
                "by_type": dict(types.most_common()),
            }
        )
    by_name = by_casefold(layer_counts)
    layers = []
    for layer in doc.layers:
        name = layer.dxf.name
        layers.append(
            {
                "name": name,
                "color": layer.color,
                "linetype": layer.dxf.linetype,
                "on": layer.is_on(),
                "frozen": layer.is_frozen(),
                "locked": layer.is_locked(),
                "entities": by_name.get(name.casefold(), 0),
            }
        )
    layers.extend(
        {"name": name, "inTable": False, "entities": count}
        for name, count in sorted(undefined_layers(doc, layer_counts).items())
    )
    known = effective_names(doc, inserted)
    references: Counter[str] = Counter()  # by the name a person knows the block by
    for name, n in inserted.items():
        references[known.get(name, name)] += n
    blocks = []
    for block in doc.blocks:
        if block.name.startswith("*") or block.block_record.is_any_layout:
            continue
        blocks.append(
            {
                "name": block.name,
                "entities": len(block),
                "attributes": [attdef.dxf.tag for attdef in block.attdefs()],
                "references": references.get(block.name, 0),
            }
        )
    active = doc.layouts.active_layout()
    source = {"source": entry.source.as_json()} if entry.source is not None else {}
    return {
        **source,
        "title": entry.title,
        "path": entry.display_path(),
        "modified": entry.modified,
        "dxfversion": doc.dxfversion,
        "acadver": header.get("$ACADVER", doc.dxfversion),
        "release": _release(doc.dxfversion),
        # an R12 drawing holds neither (read_file_info says null too): not "Unitless" and "metric"
        "units": _units_name(int(header["$INSUNITS"])) if "$INSUNITS" in header else None,
        "measurement": (
            ("metric" if header["$MEASUREMENT"] == 1 else "imperial") if "$MEASUREMENT" in header else None
        ),
        "active_layout": active.name,
        "layouts": layouts,
        "layers": layers,
        "blocks": blocks,
        "extents": _extents(doc),
        "history": {
            "undo": entry.history.back_remaining,
            "redo": entry.history.forward_available,
            "last": entry.history.undo_names()[:5],
        },
    }


def layer_usage(doc: Any) -> Counter[str]:
    """Live entities per layer name as the entities spell it, over every layout."""
    used: Counter[str] = Counter()
    for layout in doc.layouts:
        for entity in layout.entity_space.entities:
            if entity.is_alive and (layer := layer_of(entity)) is not None:
                used[layer] += 1
    return used


def by_casefold(used: Counter[str]) -> Counter[str]:
    """The counts by layer name without case, as DXF names layers ("walls" is on layer WALLS)."""
    folded: Counter[str] = Counter()
    for name, count in used.items():
        folded[name.casefold()] += count
    return folded


def undefined_layers(doc: Any, used: Counter[str]) -> dict[str, int]:
    """Layers entities are on that the layer table lacks (by name, case-insensitive as in DXF), with
    their entity counts: AutoCAD draws them with default properties and adds them on audit."""
    known = {layer.dxf.name.casefold() for layer in doc.layers}
    spelled: dict[str, str] = {}  # each missing layer under the first spelling found
    missing: Counter[str] = Counter()
    for name, count in used.items():
        if (key := name.casefold()) not in known:
            missing[spelled.setdefault(key, name)] += count
    return dict(missing)


def _release(dxfversion: str) -> str:
    from ezdxf.lldxf.const import acad_release

    return acad_release.get(dxfversion, "unknown")


def _extents(doc: Any) -> dict[str, Any] | None:
    msp = doc.modelspace()
    if len(msp) <= _BBOX_ENTITY_LIMIT:
        from ezdxf import bbox

        box = bbox.extents(msp, fast=True)
        if box.has_data:
            return {"min": jsonable(box.extmin), "max": jsonable(box.extmax), "source": "computed"}
        return None
    extmin, extmax = doc.header.get("$EXTMIN"), doc.header.get("$EXTMAX")
    if extmin is None or extmax is None or abs(extmin[0]) >= 1e19 or extmin[0] > extmax[0]:
        return None
    return {"min": jsonable(extmin), "max": jsonable(extmax), "source": "header $EXTMIN/$EXTMAX"}


def model_warnings(entry: DxfDocument, run_audit: Any) -> dict[str, Any]:
    """Audit findings grouped by kind: fixes applied when the file was opened, and open issues now.

    ``run_audit()`` must audit the live document without leaving changes behind and
    return the auditor.
    """
    result: dict[str, Any] = {"document": entry.title}
    if entry.source is not None:  # read from a DWG: its release, the reader and what it could not carry over
        result["dwg"] = entry.source.as_json()
    if entry.auditor is not None:
        result["fixed_on_open"] = _group(entry.auditor.fixes)
    if missing := undefined_layers(entry.doc, layer_usage(entry.doc)):
        result["undefined_layers"] = {
            "message": "entities are on layers the layer table lacks (drawn with default color and "
            "linetype; AutoCAD adds such layers when it audits the drawing)",
            "layers": dict(sorted(missing.items())[:_MAX_WARNINGS]),
        }
    total = sum(len(layout.entity_space.entities) for layout in entry.doc.layouts)
    if total > _LIVE_AUDIT_LIMIT:
        result["current"] = (
            f"Live audit skipped: {total} entities (limit {_LIVE_AUDIT_LIMIT}) would take several seconds. "
            "Run it with execute_python_code: `a = doc.audit(); [str(e.message) for e in a.errors][:50]` "
            "(its fixes become one undoable step)."
        )
        return result
    auditor = run_audit()
    result["current_errors"] = _group(auditor.errors)
    result["current_fixable"] = _group(auditor.fixes)
    return result


def _group(findings: list[Any]) -> dict[str, Any]:
    from ezdxf.audit import AuditError

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for finding in findings[:_MAX_WARNINGS]:
        try:
            code = AuditError(finding.code).name
        except ValueError:
            code = str(finding.code)
        entity = finding.entity
        handle = entity.dxf.get("handle") if entity is not None and entity.dxf is not None else None
        groups[code].append({"message": str(finding.message), "handle": handle})
    return {"total": len(findings), "shown": min(len(findings), _MAX_WARNINGS), "groups": dict(groups)}


def element_info(entry: DxfDocument, element_id: str) -> dict[str, Any]:
    """One entity by handle as JSON."""
    handle = element_id.strip().upper()
    entity: DXFEntity | None = entry.doc.entitydb.get(handle)
    if entity is None or not entity.is_alive:
        raise DxfHostError(
            f"No entity has handle {echo(element_id)} in {entry.title}. Handles are hex strings like '2A'; "
            "find them with execute_python_code (e.g. [e.dxf.handle for e in msp.query('INSERT')]) or in "
            "dxf://schedule/{id}/preview.",
            "not_found",
        )
    info: dict[str, Any] = {
        "handle": handle,
        "dxftype": entity.dxftype(),
        "layer": layer_of(entity),
        "owner": entity.dxf.get("owner"),
        "attributes": jsonable(entity.dxfattribs()),
    }
    layout = entity.get_layout() if hasattr(entity, "get_layout") else None
    if layout is not None:
        info["layout"] = layout.name
    if entity.xdata is not None and entity.xdata.data:
        info["xdata"] = {
            app: [[tag.code, jsonable(tag.value)] for tag in tags] for app, tags in entity.xdata.data.items()
        }
    dxftype = entity.dxftype()
    if dxftype == "INSERT":
        info["block"] = entity.dxf.name
        info["block_attributes"] = {attrib.dxf.tag: attrib.dxf.text for attrib in entity.attribs}  # type: ignore[attr-defined]
    elif dxftype == "LWPOLYLINE":
        info["points"] = [jsonable(p) for p in entity.get_points("xyb")]  # type: ignore[attr-defined]
        info["closed"] = entity.closed  # type: ignore[attr-defined]
    elif dxftype == "MTEXT":
        info["text"] = entity.text  # type: ignore[attr-defined]
        info["plain_text"] = entity.plain_text()  # type: ignore[attr-defined]
    elif dxftype in ("TEXT", "ATTRIB", "ATTDEF"):
        info["plain_text"] = entity.plain_text()  # type: ignore[attr-defined]
    if hasattr(entity, "dxf") and entity.is_alive and layout is not None:
        from ezdxf import bbox

        box = bbox.extents([entity], fast=True)
        if box.has_data:
            info["bbox"] = {"min": jsonable(box.extmin), "max": jsonable(box.extmax)}
    return info
