"""Schedules per element class: the list behind ``ifc://schedules`` and the CSV previews."""

from __future__ import annotations

import csv
import io
from typing import Any

import ifcopenshell

from cadmcp.host.builtins.adapter import PREVIEW_ROWS, NotFound
from cadmcp.hosts.ifc.context import element_counts
from cadmcp.hosts.ifc.elements import storey_of
from cadmcp.wire.echo import echo

KEY_COLUMNS: dict[str, list[str]] = {
    "IfcDoor": [
        "Pset_DoorCommon.FireRating",
        "Pset_DoorCommon.IsExternal",
        "OverallWidth",
        "OverallHeight",
        "Qto_DoorBaseQuantities.Area",
    ],
    "IfcWindow": [
        "Pset_WindowCommon.IsExternal",
        "Pset_WindowCommon.FireRating",
        "OverallWidth",
        "OverallHeight",
        "Qto_WindowBaseQuantities.Area",
    ],
    "IfcWall": [
        "Pset_WallCommon.IsExternal",
        "Pset_WallCommon.FireRating",
        "Qto_WallBaseQuantities.Length",
        "Qto_WallBaseQuantities.Height",
        "Qto_WallBaseQuantities.NetSideArea",
    ],
    "IfcSlab": [
        "PredefinedType",
        "Pset_SlabCommon.IsExternal",
        "Qto_SlabBaseQuantities.Depth",
        "Qto_SlabBaseQuantities.NetArea",
    ],
    "IfcSpace": ["LongName", "Qto_SpaceBaseQuantities.NetFloorArea", "Qto_SpaceBaseQuantities.Height"],
}


class ScheduleNotFound(NotFound):
    """The schedule id names no element class present in the model."""


def _title(ifc_class: str) -> str:
    return f"{ifc_class.removeprefix('Ifc')} Schedule"


def list_schedules(f: ifcopenshell.file) -> list[dict[str, Any]]:
    """One schedule per element class present: id (the class), title, row count and preview URI."""
    return [
        {"id": cls, "title": _title(cls), "rows": n, "uri": f"ifc://schedule/{cls}/preview"}
        for cls, n in element_counts(f).items()
    ]


def _columns(ifc_class: str, elements: list[ifcopenshell.entity_instance]) -> list[str]:
    if ifc_class in KEY_COLUMNS:
        return KEY_COLUMNS[ifc_class]
    import ifcopenshell.util.element

    common = f"Pset_{ifc_class.removeprefix('Ifc')}Common"
    columns = ["PredefinedType", f"{common}.IsExternal"]
    for element in elements[:PREVIEW_ROWS]:  # quantities found on the previewed rows
        for qto, values in ifcopenshell.util.element.get_psets(element, qtos_only=True).items():
            columns += [f"{qto}.{k}" for k in values if k != "id" and f"{qto}.{k}" not in columns]
    return columns[:8]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, ifcopenshell.entity_instance):
        return getattr(value, "Name", None) or f"#{value.id()}"
    return str(value)


def schedule_preview(f: ifcopenshell.file, schedule_id: str) -> str:
    """CSV with a header row and the first rows of one class, ordered by storey elevation then name."""
    import ifcopenshell.util.element
    import ifcopenshell.util.selector

    present = list(element_counts(f))
    match = next((cls for cls in present if cls.lower() == schedule_id.strip().lower()), None)
    if match is None:
        raise ScheduleNotFound(
            f"No schedule {echo(schedule_id)} in this model. Available schedules: "
            f"{', '.join(present) or 'none'} (read ifc://schedules)."
        )
    elements = list(f.by_type(match, include_subtypes=False))
    storeys = {e: storey_of(e) for e in elements}

    def order(e: ifcopenshell.entity_instance) -> tuple[float, str, int]:
        storey = storeys[e]
        elevation = getattr(storey, "Elevation", None) or 0.0
        return (elevation, e.Name or "", e.id())

    elements.sort(key=order)
    columns = _columns(match, elements)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["GlobalId", "Name", "Storey", "Type", *columns])
    for element in elements[:PREVIEW_ROWS]:
        storey = storeys[element]
        element_type = ifcopenshell.util.element.get_type(element)
        row = [
            element.GlobalId,
            element.Name or "",
            (storey.Name or "") if storey is not None else "",
            (element_type.Name or "") if element_type is not None else "",
        ]
        row += [_cell(ifcopenshell.util.selector.get_element_value(element, col)) for col in columns]
        writer.writerow(row)
    if len(elements) > PREVIEW_ROWS:
        writer.writerow([f"# {len(elements) - PREVIEW_ROWS} more rows not shown"])
    return out.getvalue()
