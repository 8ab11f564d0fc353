"""Spreadsheet-driven parameters of FreeCAD documents: list them, set one as an undoable step,
and read a body's features as a resource template."""

from __future__ import annotations

import json
import re

import mcp_types as types
from _document import active_document, transaction
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from typing_extensions import TypedDict

server = MCPServer("freecad-parameters")
CELL = re.compile(r"^[A-Z]{1,2}[0-9]+$")  # cells are properties named A1, B2...; Label2 is not one


class Parameter(TypedDict):
    sheet: str
    alias: str
    cell: str
    value: str


class ParameterChange(TypedDict):
    """A spreadsheet parameter set to a new value, and what the bodies' volumes became."""

    alias: str
    before: str
    after: str
    volumes: dict[str, float]


def _aliases(doc) -> list[Parameter]:  # type: ignore[no-untyped-def]
    rows = []
    for sheet in (o for o in doc.Objects if o.TypeId == "Spreadsheet::Sheet"):
        for prop in sheet.PropertiesList:
            alias = sheet.getAlias(prop) if CELL.match(prop) else None
            if alias:
                rows.append(Parameter(sheet=sheet.Name, alias=alias, cell=prop, value=str(sheet.get(prop))))
    return rows


@server.tool(
    meta={"io.cadmcp/keywords": ["parameters", "spreadsheet aliases", "design table"]},
    annotations=types.ToolAnnotations(read_only_hint=True),
)
def list_parameters() -> list[Parameter]:
    """Every named spreadsheet cell (alias) of the active document with its current value."""
    return _aliases(active_document())


@server.tool(meta={"io.cadmcp/keywords": ["change dimension", "set parameter", "resize part"]})
def set_parameter(alias: str, value: float) -> ParameterChange:
    """Set a spreadsheet parameter (by alias, e.g. thickness) and recompute, as one undo step."""
    doc = active_document()
    found = next((p for p in _aliases(doc) if p["alias"] == alias), None)
    if found is None:
        known = ", ".join(p["alias"] for p in _aliases(doc)) or "none"
        raise ToolError(f"No parameter is called {alias!r}; parameters: {known}.")
    sheet = doc.getObject(found["sheet"])
    with transaction(f"Set {alias} = {value:g}"):
        sheet.set(found["cell"], f"{value:g}")
        doc.recompute()
        broken = [o.Name for o in doc.Objects if "Invalid" in o.State or "Error" in o.State]
        if broken:
            raise ToolError(f"{alias} = {value:g} breaks {', '.join(broken)}; nothing was changed.")
    volumes = {
        o.Name: round(o.Shape.Volume, 3)
        for o in doc.Objects
        if o.TypeId == "PartDesign::Body" and not o.Shape.isNull()
    }
    return ParameterChange(
        alias=alias, before=found["value"], after=str(sheet.get(found["cell"])), volumes=volumes
    )


@server.resource(
    "freecad-sample://body/{name}",
    mime_type="application/json",
    meta={"io.cadmcp/keywords": ["body features", "feature tree"]},
)
def body_features(name: str) -> str:
    """The features of one PartDesign body in order, each with its type and the body volume after it."""
    doc = active_document()
    body = doc.getObject(name)
    if body is None or body.TypeId != "PartDesign::Body":
        bodies = [o.Name for o in doc.Objects if o.TypeId == "PartDesign::Body"]
        raise ResourceError(f"No body named {name!r}; bodies: {', '.join(bodies) or 'none'}.")
    rows = [
        {
            "name": f.Name,
            "type": f.TypeId,
            "volume": round(f.Shape.Volume, 3) if not f.Shape.isNull() else None,
        }
        for f in body.Group
        if not f.isDerivedFrom("Sketcher::SketchObject")
    ]
    return json.dumps({"body": name, "tip": body.Tip.Name if body.Tip else None, "features": rows})
