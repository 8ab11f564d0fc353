"""Counting IFC elements: a structured-output tool and a per-storey resource template."""

from __future__ import annotations

import json
from collections import Counter

import mcp_types as types
from _model import active_document, storey_of
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from typing_extensions import TypedDict

server = MCPServer("ifc-quantities")


class ClassCount(TypedDict):
    """How many elements of one IFC class the active model has, per storey."""

    ifcClass: str
    count: int
    byStorey: dict[str, int]
    document: str


@server.tool(
    meta={"io.cadmcp/keywords": ["quantity takeoff", "element count", "how many walls"]},
    annotations=types.ToolAnnotations(read_only_hint=True),
)
def count_elements(ifcClass: str = "IfcWall") -> ClassCount:
    """Count the elements of an IFC class (e.g. IfcWall, IfcDoor) in the active model, per storey."""
    doc = active_document()
    try:
        elements = doc.file.by_type(ifcClass)
    except RuntimeError:
        raise ToolError(f"{ifcClass!r} is not an IFC class of {doc.file.schema}; try IfcWall.") from None
    per_storey = Counter(storey_of(e) for e in elements)
    return ClassCount(ifcClass=ifcClass, count=len(elements), byStorey=dict(per_storey), document=doc.title)


@server.resource(
    "ifc-sample://storey/{name}",
    mime_type="application/json",
    meta={"io.cadmcp/keywords": ["storey contents", "level elements"]},
)
def storey_contents(name: str) -> str:
    """The elements contained in one building storey (by name): GlobalId, class and name."""
    doc = active_document()
    storeys = [s for s in doc.file.by_type("IfcBuildingStorey") if s.Name == name]
    if not storeys:
        known = sorted(s.Name or s.GlobalId for s in doc.file.by_type("IfcBuildingStorey"))
        raise ResourceError(f"No storey named {name!r}; storeys: {', '.join(known)}")
    import ifcopenshell.util.element

    elements = ifcopenshell.util.element.get_decomposition(storeys[0])
    rows = [{"globalId": e.GlobalId, "class": e.is_a(), "name": e.Name} for e in elements]
    return json.dumps({"storey": name, "count": len(rows), "elements": rows})
