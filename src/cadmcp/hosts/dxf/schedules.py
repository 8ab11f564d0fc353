"""Schedules: tables derived from the drawing (one per attributed block, plus layers)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from cadmcp.host.builtins.adapter import PREVIEW_ROWS
from cadmcp.hosts.dxf.context import by_casefold, effective_names, layer_usage, undefined_layers
from cadmcp.hosts.dxf.documents import DxfHostError
from cadmcp.wire.echo import echo

__all__ = ["PREVIEW_ROWS", "Schedule", "list_schedules", "schedule_csv"]


@dataclass
class Schedule:
    """A table: id, title, column names and rows."""

    id: str
    title: str
    columns: list[str]
    rows: list[list[Any]]


def _block_schedules(doc: Any) -> list[Schedule]:
    inserts: dict[str, list[Any]] = {}
    for layout in doc.layouts:
        for entity in layout:
            if entity.dxftype() == "INSERT":
                inserts.setdefault(entity.dxf.name, []).append((layout.name, entity))
    known = effective_names(doc, inserts)
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for name, refs in inserts.items():  # a dynamic block's references, whatever state they insert
        grouped.setdefault(known[name], []).extend(refs)
    schedules = []
    for name in sorted(grouped):
        refs = grouped[name]
        blocks = [doc.blocks.get(n) for n in dict.fromkeys(ref.dxf.name for _, ref in refs)]
        tags = list(dict.fromkeys(a.dxf.tag for b in blocks if b is not None for a in b.attdefs()))
        if not tags:
            continue
        dynamic = any(ref.dxf.name != name for _, ref in refs)
        state_column = ["block"] if dynamic else []  # which anonymous state each reference inserts
        columns = ["handle", "layout", "layer", "x", "y", "z", "copies", *state_column, *tags]
        rows = []
        placed = 0
        for layout_name, ref in refs:
            values = {attrib.dxf.tag: attrib.dxf.text for attrib in ref.attribs}
            p = ref.dxf.insert
            copies = _copies(ref)  # a multi-insert (MINSERT) places rows x columns copies
            placed += copies
            where = [round(p.x, 6), round(p.y, 6), round(p.z, 6)]
            texts = [values.get(tag, "") for tag in tags]
            state = [ref.dxf.name] if dynamic else []
            rows.append([ref.dxf.handle, layout_name, ref.dxf.layer, *where, copies, *state, *texts])
        counted = f"{len(rows)} references" + (f", {placed} copies placed" if placed != len(rows) else "")
        schedules.append(Schedule(name, f"{name} schedule ({counted})", columns, rows))
    return schedules


def _copies(ref: Any) -> int:
    try:
        return max(1, int(ref.dxf.row_count)) * max(1, int(ref.dxf.column_count))
    except (AttributeError, TypeError, ValueError):
        return 1


def _layer_schedule(doc: Any) -> Schedule:
    counts = layer_usage(doc)
    by_name = by_casefold(counts)
    rows = [
        [
            layer.dxf.name,
            layer.color,
            layer.dxf.linetype,
            layer.is_on(),
            layer.is_frozen(),
            layer.is_locked(),
            by_name.get(layer.dxf.name.casefold(), 0),
            True,
        ]
        for layer in doc.layers
    ]
    missing = undefined_layers(doc, counts)  # layers entities are on that the table lacks
    rows += [[name, "", "", "", "", "", count, False] for name, count in sorted(missing.items())]
    columns = ["name", "color", "linetype", "on", "frozen", "locked", "entities", "in_table"]
    return Schedule("layers", "Layers", columns, rows)


def all_schedules(doc: Any) -> list[Schedule]:
    """Every schedule of the drawing: attributed blocks (by block name) and ``layers``."""
    return [*_block_schedules(doc), _layer_schedule(doc)]


def list_schedules(doc: Any) -> list[dict[str, Any]]:
    """Available schedules: id, title, columns, row count."""
    return [
        {"id": s.id, "title": s.title, "columns": s.columns, "rows": len(s.rows)} for s in all_schedules(doc)
    ]


def schedule_csv(doc: Any, schedule_id: str, limit: int = PREVIEW_ROWS) -> str:
    """CSV (header row + first ``limit`` rows) of one schedule."""
    schedules = all_schedules(doc)
    for schedule in schedules:
        if schedule.id == schedule_id or schedule.id.lower() == schedule_id.lower():
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(schedule.columns)
            writer.writerows(schedule.rows[:limit])
            return out.getvalue()
    ids = ", ".join(s.id for s in schedules)
    raise DxfHostError(
        f"No schedule {echo(schedule_id)}. Available schedules: {ids} (see dxf://schedules).", "not_found"
    )
