"""Cleaning DXF drawings: a dryRun-first purge of a layer's entities and a layer delete confirmed
through input_required. Each change is one undo step (navigate_history takes it back)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from _drawing import active_document, undoable
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from typing_extensions import TypedDict

import cadmcp.host

server = MCPServer("dxf-cleanup")


class PurgeReport(TypedDict):
    """What a purge removed (or, with dryRun, would remove)."""

    dryRun: bool
    layer: str
    handles: list[str]
    count: int


def _on_layer(entry: Any, layer: str) -> list[Any]:
    if layer not in entry.doc.layers:
        raise ToolError(f"No layer named {layer!r}; layer_summary lists the layers.")
    return [e for e in entry.doc.modelspace() if e.dxf.layer == layer]


@server.tool(
    annotations=types.ToolAnnotations(destructive_hint=True),
    meta={"io.cadmcp/keywords": ["delete entities", "purge layer", "erase"]},
)
def purge_layer_entities(layer: str, entityType: str = "", dryRun: bool = True) -> PurgeReport:
    """Delete the model-space entities on a layer (optionally only one type, e.g. LINE).

    A dry run by default: it lists the handles that would go. Call again with dryRun=false to delete.
    """
    entry = active_document()
    chosen = [e for e in _on_layer(entry, layer) if not entityType or e.dxftype() == entityType.upper()]
    handles = [e.dxf.handle for e in chosen]
    if not dryRun and chosen:
        msp = entry.doc.modelspace()

        def delete() -> None:
            for entity in chosen:
                msp.delete_entity(entity)

        undoable(entry, f"Purge {len(chosen)} entities on {layer}", delete)
    return PurgeReport(dryRun=dryRun, layer=layer, handles=handles, count=len(handles))


@server.tool(
    annotations=types.ToolAnnotations(destructive_hint=True),
    meta={"io.cadmcp/keywords": ["delete layer", "remove layer", "confirm"]},
)
async def delete_layer(layer: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Delete a layer and every entity on it after the user confirms (asks through input_required)."""
    host = cadmcp.host.current()
    if layer == "0":
        raise ToolError("Layer 0 cannot be deleted; purge its entities with purge_layer_entities instead.")
    count = await host.run_on_app_thread(lambda: len(_on_layer(active_document(), layer)))
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=f"Delete layer {layer} and its {count} entities?",
                requested_schema={
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                },
            )
        )
        return types.InputRequiredResult(input_requests={"confirm": question}, request_state=layer)
    data = answer.model_dump(by_alias=True) if hasattr(answer, "model_dump") else dict(answer)
    accepted = data.get("action") == "accept" and (data.get("content") or {}).get("confirm") is True
    if accepted:
        await host.run_on_app_thread(_delete_layer, layer)
    verdict = f"deleted with {count} entities" if accepted else "kept"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Layer {layer} {verdict}")],
        structured_content={"layer": layer, "deleted": accepted, "entities": count if accepted else 0},
    )


def _delete_layer(layer: str) -> None:
    entry = active_document()
    msp = entry.doc.modelspace()

    def delete() -> None:
        for entity in _on_layer(entry, layer):
            msp.delete_entity(entity)
        entry.doc.layers.remove(layer)

    undoable(entry, f"Delete layer {layer}", delete)
