"""Schedules: tables derived from the drawing (one per attributed block, plus layers)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from cadmcp.host.builtins.adapter import PREVIEW_ROWS
from cadmcp.hosts.dxf.coverage import layer_of
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
    schedules = []
    for name in sorted(inserts):
        block = doc.blocks.get(name)
        if block is None:
            continue
        tags = [attdef.dxf.tag for attdef in block.attdefs()]
        if not tags:
            continue
        columns = ["handle", "layout", "layer", "x", "y", "z", *tags]
        rows = []
        for layout_name, ref in inserts[name]:
            values = {attrib.dxf.tag: attrib.dxf.text for attrib in ref.attribs}
            p = ref.dxf.insert
            rows.append(
                [ref.dxf.handle, layout_name, ref.dxf.layer, round(p.x, 6), round(p.y, 6), round(p.z, 6)]
                + [values.get(tag, "") for tag in tags]
            )
        schedules.append(Schedule(name, f"{name} schedule ({len(rows)} references)", columns, rows))
    return schedules


def _layer_schedule(doc: Any) -> Schedule:
    counts: dict[str, int] = {}
    for layout in doc.layouts:
        for entity in layout.entity_space.entities:
            if (layer := layer_of(entity)) is not None:
                counts[layer] = counts.get(layer, 0) + 1
    rows = [
        [
            layer.dxf.name,
            layer.color,
            layer.dxf.linetype,
            layer.is_on(),
            layer.is_frozen(),
            layer.is_locked(),
            counts.get(layer.dxf.name, 0),
        ]
        for layer in doc.layers
    ]
    columns = ["name", "color", "linetype", "on", "frozen", "locked", "entities"]
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
