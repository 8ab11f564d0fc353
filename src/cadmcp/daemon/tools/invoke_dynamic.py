"""`invoke_dynamic`: run a capability found by search_dynamic; the host's own result comes back."""

from __future__ import annotations

from typing import Any

from cadmcp.daemon import invoking
from cadmcp.daemon.limits import MAX_READS
from cadmcp.daemon.tools.base import DaemonTool, Services, ToolCall
from cadmcp.wire.meta import TASK_SUPPORT

NAME = "invoke_dynamic"

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "Invoke a host capability",
    "description": (
        "Runs a capability found with search_dynamic: pass its `id` and `arguments` (the tool's, or a "
        "template's {params}); the host's own result comes back unchanged. To read several resources at "
        f"once, pass `reads=[{{id, arguments?}}, ...]` (at most {MAX_READS}) instead. Never run changes to "
        "one host in parallel: wait for each to finish. A 'stale' error means nothing ran: search again. "
        "If the host asks for input (input_required), answer and retry with the same id and arguments. "
        "A long call continues as an MCP task where the client supports tasks."
    ),
    "execution": {"taskSupport": "optional"},
    "inputSchema": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "A capability id from search_dynamic."},
            "arguments": {"type": "object", "description": "Arguments for the tool or template."},
            "reads": {
                "type": "array",
                "maxItems": MAX_READS,
                "description": "Several resource reads at once (instead of id).",
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "arguments": {"type": "object"}},
                    "required": ["id"],
                },
            },
        },
    },
}


async def _invoke(call: ToolCall) -> dict[str, Any]:
    params, s = call.params, call.services
    responses = (
        {
            k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
            for k, v in params.input_responses.items()
        }
        if params.input_responses
        else None
    )
    hooks = s.tasks.hooks(call.ctx)
    return await invoking.invoke(
        s.directory, call.ctx, call.args, responses, params.request_state, s.checker, hooks, s.gate
    )


def _task_policy(services: Services, arguments: dict[str, Any], refine: bool) -> tuple[Any, str]:
    """`optional`, named after the capability; with `refine` (2026-07-28, where the daemon decides),
    a host tool's own `execution.taskSupport` of `forbidden` or `required` applies."""
    found = invoking.live(services.directory, arguments.get("id"))
    if found is None:
        return "optional", NAME
    entry, cap = found
    label = f"{cap.target} on {entry.host_app} {entry.version}"
    declared = None
    if cap.kind == "tool":
        declared = (cap.raw.get("_meta") or {}).get(TASK_SUPPORT) or (cap.raw.get("execution") or {}).get(
            "taskSupport"
        )
    if refine and declared in ("forbidden", "required"):
        return declared, label
    return "optional", label


TOOL = DaemonTool(DEFINITION, _invoke, passes_through=True, task_policy=_task_policy)
