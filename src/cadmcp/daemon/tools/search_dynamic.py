"""`search_dynamic`: search the capabilities of every host; ranked items with ids for invoke_dynamic."""

from __future__ import annotations

from typing import Any

from cadmcp.daemon import machines, searching
from cadmcp.daemon.catalog import KINDS
from cadmcp.daemon.limits import DEFAULT_LIMIT, MAX_ID_CHARS, MAX_LIMIT, MAX_QUERY_CHARS
from cadmcp.daemon.tools.base import DaemonTool, ToolCall

NAME = "search_dynamic"

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "Search host capabilities",
    "description": (
        "Call this first. Searches the tools, resources and templates of every running CAD/BIM host "
        "(DXF, IFC, FreeCAD, Revit...) and answers ranked items: an opaque `id` for invoke_dynamic, the "
        "host (hostApp, version, hostInstanceId, open `document`), a short description, requiredArgs, "
        "argsHint, and `why` an item ranked first among twins. Ask as you would a colleague ('count "
        "walls per storey', 'undo', 'screenshot of the plan'); an empty query lists all, up to limit. "
        "An id stays valid while its capability is "
        "unchanged; if invoke_dynamic says stale, search again."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do or read, in plain words."},
            "hostInstanceId": {
                "type": "string",
                "description": "Only this host (from list_host_instances or a result).",
            },
            "machineId": {
                "type": "string",
                "description": "Only hosts on this machine (an id or name from list_machines).",
            },
            "kinds": {
                "type": "array",
                "items": {"type": "string", "enum": list(KINDS)},
                "description": "Only these kinds of capability.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "How many items.",
            },
            "detail": {
                "type": "string",
                "enum": ["summary", "schema"],
                "default": "summary",
                "description": "'schema' adds each tool's inputSchema.",
            },
        },
    },
}


def _lenient(args: dict[str, Any]) -> dict[str, Any]:
    kinds = args.get("kinds")
    return {**args, "kinds": [kinds]} if isinstance(kinds, str) else args  # one kind, named alone


async def _search(call: ToolCall) -> dict[str, Any]:
    directory = call.services.directory
    machine = machines.resolve_machine(directory, call.services.gateway, call.args)
    return searching.search(directory, call.args, machine)


TOOL = DaemonTool(
    DEFINITION,
    _search,
    text_limits={"query": MAX_QUERY_CHARS, "hostInstanceId": MAX_ID_CHARS, "machineId": MAX_ID_CHARS},
    lenient=_lenient,
    waits_for_catalog=True,
)
