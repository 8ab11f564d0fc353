"""Layer reports for DXF drawings: a structured-output tool and a per-layer resource template."""

from __future__ import annotations

import json
from collections import Counter

import mcp_types as types
from _drawing import active_document
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from pydantic import BaseModel

server = MCPServer("dxf-layers")


class LayerRow(BaseModel):
    name: str
    entities: int
    color: int
    frozen: bool


class LayerSummary(BaseModel):
    """Every layer of the active drawing with how many model-space entities it holds."""

    document: str
    layers: list[LayerRow]
    emptyLayers: list[str]


@server.tool(
    meta={"io.cadmcp/keywords": ["layer list", "layer usage", "entities per layer"]},
    annotations=types.ToolAnnotations(read_only_hint=True),
)
def layer_summary() -> LayerSummary:
    """Summarise the layers of the active drawing: entity counts, colour, frozen state, empty layers."""
    entry = active_document()
    counts = Counter(e.dxf.layer for e in entry.doc.modelspace())
    rows = [
        LayerRow(
            name=layer.dxf.name,
            entities=counts.get(layer.dxf.name, 0),
            color=layer.color,
            frozen=layer.is_frozen(),
        )
        for layer in entry.doc.layers
    ]
    return LayerSummary(
        document=entry.title, layers=rows, emptyLayers=[r.name for r in rows if r.entities == 0]
    )


@server.resource(
    "dxf-sample://layer/{name}",
    mime_type="application/json",
    meta={"io.cadmcp/keywords": ["layer contents", "entities on layer"]},
)
def layer_contents(name: str) -> str:
    """The model-space entities on one layer: handle and type, with a count per type."""
    entry = active_document()
    if name not in entry.doc.layers:
        raise ResourceError(f"No layer named {name!r}; read layer_summary for the layer names.")
    entities = [e for e in entry.doc.modelspace() if e.dxf.layer == name]
    by_type = Counter(e.dxftype() for e in entities)
    rows = [{"handle": e.dxf.handle, "type": e.dxftype()} for e in entities[:500]]
    return json.dumps({"layer": name, "count": len(entities), "byType": dict(by_type), "entities": rows})
