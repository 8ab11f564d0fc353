"""Schedules per element class: the list behind ``ifc://schedules`` and the CSV previews."""

from __future__ import annotations

import csv
import io
from typing import Any

import ifcopenshell

from cadmcp.host.builtins.adapter import PREVIEW_ROWS, NotFound
from cadmcp.hosts.ifc.context import element_counts, project_unit
from cadmcp.hosts.ifc.elements import storey_of
from cadmcp.hosts.ifc.schemas import declared_schema_name
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
    """One schedule per element class present: id (the class), title, row count and preview URI
    (its quantities are in the project's units, `quantity_units`)."""
    return [
        {"id": cls, "title": _title(cls), "rows": n, "uri": f"ifc://schedule/{cls}/preview"}
        for cls, n in element_counts(f).items()
    ]


def _lineage(f: ifcopenshell.file, ifc_class: str) -> list[str]:
    """The class and its supertypes, nearest first (IfcWallStandardCase, IfcWall, IfcBuildingElement...)."""
    import ifcopenshell.ifcopenshell_wrapper as wrapper

    try:
        declaration = wrapper.schema_by_name(declared_schema_name(f)).declaration_by_name(ifc_class)
    except Exception:
        return [ifc_class]
    names = []
    while declaration is not None:
        names.append(declaration.name())
        declaration = declaration.supertype()
    return names


def _columns(f: ifcopenshell.file, ifc_class: str, elements: list[ifcopenshell.entity_instance]) -> list[str]:
    """The key columns of the class or of its nearest supertype that has some (a standard-case wall's
    are a wall's); otherwise its type, its common property set's IsExternal and its quantities."""
    lineage = _lineage(f, ifc_class)
    keyed = next((cls for cls in lineage if cls in KEY_COLUMNS), None)
    if keyed is not None:
        return KEY_COLUMNS[keyed]
    import ifcopenshell.util.element

    # a *StandardCase or *ElementedCase class has its supertype's common set (Pset_BeamCommon)
    named = next((c for c in lineage if not c.endswith(("StandardCase", "ElementedCase"))), ifc_class)
    common = f"Pset_{named.removeprefix('Ifc')}Common"
    columns = ["PredefinedType", f"{common}.IsExternal"]
    for element in elements[:PREVIEW_ROWS]:  # quantities found on the previewed rows
        for qto, values in ifcopenshell.util.element.get_psets(element, qtos_only=True).items():
            columns += [f"{qto}.{k}" for k in values if k != "id" and f"{qto}.{k}" not in columns]
    return columns[:8]


def _value(element: ifcopenshell.entity_instance, column: str) -> Any:
    """A column's value; a standard quantity set's quantity (Qto_SpaceBaseQuantities.NetFloorArea) is
    also found in the element's other quantity sets, where ArchiCAD and IFC2X3-era exporters put it
    (BaseQuantities.NetFloorArea)."""
    import ifcopenshell.util.element
    import ifcopenshell.util.selector

    value = ifcopenshell.util.selector.get_element_value(element, column)
    qto, _, name = column.partition(".")
    if value is None and name and qto.startswith("Qto_"):
        for values in ifcopenshell.util.element.get_psets(element, qtos_only=True).values():
            if values.get(name) is not None:
                return values[name]
    return value


def quantity_units(f: ifcopenshell.file) -> dict[str, str]:
    """The project's units that the schedules' quantities are in (``{"length": "MILLIMETRE", ...}``)."""
    kinds = (("LENGTHUNIT", "length"), ("AREAUNIT", "area"), ("VOLUMEUNIT", "volume"))
    return {what: name for kind, what in kinds if (name := project_unit(f, kind))}


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
    columns = _columns(f, match, elements)
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
        row += [_cell(_value(element, col)) for col in columns]
        writer.writerow(row)
    if len(elements) > PREVIEW_ROWS:
        writer.writerow([f"# {len(elements) - PREVIEW_ROWS} more rows not shown"])
    return out.getvalue()
