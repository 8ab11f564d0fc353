"""Removing IFC elements: a dryRun-first bulk delete and a single delete confirmed through
input_required. Both are one undo step each (navigate_history takes them back)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from _model import active_document, undoable
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from typing_extensions import TypedDict

import cadmcp.host

server = MCPServer("ifc-cleanup")


class RemovalReport(TypedDict):
    """What a removal did (or, with dryRun, would do)."""

    dryRun: bool
    ifcClass: str
    removed: list[str]
    count: int


def _remove(file: Any, elements: list[Any]) -> None:
    import ifcopenshell.api.root

    for element in elements:
        ifcopenshell.api.root.remove_product(file, product=element)


@server.tool(
    annotations=types.ToolAnnotations(destructive_hint=True),
    meta={"io.cadmcp/keywords": ["delete elements", "purge", "remove by class"]},
)
def remove_elements_by_class(ifcClass: str, nameContains: str = "", dryRun: bool = True) -> RemovalReport:
    """Remove every element of an IFC class (optionally only names containing a text).

    Runs as a dry run by default: it lists what would go. Call again with dryRun=false to remove.
    """
    doc = active_document()
    try:
        found = doc.file.by_type(ifcClass)
    except RuntimeError:
        raise ToolError(f"{ifcClass!r} is not an IFC class of {doc.file.schema}; try IfcFurniture.") from None
    chosen = [e for e in found if nameContains.lower() in (e.Name or "").lower()]
    ids = [e.GlobalId for e in chosen]
    if not dryRun and chosen:
        undoable(f"Remove {len(chosen)} {ifcClass}", lambda: _remove(doc.file, chosen))
    return RemovalReport(dryRun=dryRun, ifcClass=ifcClass, removed=ids, count=len(ids))


@server.tool(
    annotations=types.ToolAnnotations(destructive_hint=True),
    meta={"io.cadmcp/keywords": ["delete element", "remove wall", "confirm"]},
)
async def delete_element(globalId: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Delete one element by GlobalId after the user confirms (asks through input_required)."""
    host = cadmcp.host.current()
    describe = await host.run_on_app_thread(_describe, globalId)
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=f"Delete {describe}? This removes it and its relationships.",
                requested_schema={
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                },
            )
        )
        return types.InputRequiredResult(input_requests={"confirm": question}, request_state=globalId)
    data = answer.model_dump(by_alias=True) if hasattr(answer, "model_dump") else dict(answer)
    accepted = data.get("action") == "accept" and (data.get("content") or {}).get("confirm") is True
    if accepted:
        await host.run_on_app_thread(_delete, globalId)
    verdict = "deleted" if accepted else "kept"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{describe} {verdict}")],
        structured_content={"globalId": globalId, "deleted": accepted},
    )


def _element(global_id: str) -> Any:
    doc = active_document()
    try:
        return doc, doc.file.by_guid(global_id)
    except RuntimeError:
        raise ToolError(f"No element with GlobalId {global_id!r}; find ids with count_elements.") from None


def _describe(global_id: str) -> str:
    _, element = _element(global_id)
    return f"{element.is_a()} {element.Name or ''} ({global_id})".replace("  ", " ")


def _delete(global_id: str) -> None:
    doc, element = _element(global_id)
    undoable(f"Delete {global_id}", lambda: _remove(doc.file, [element]))
