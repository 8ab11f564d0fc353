"""execute_python_code with `dryRun` and `previewed`, for adapters that can preview.

An agent previews with the `dryRun` and `previewed` arguments. The daemon, confirming a call
under the person's policy, asks for the same through the request's `_meta`
(`cadmcp.wire.meta.PREVIEW`) and leaves the caller's arguments as they were.

No `from __future__ import annotations`: the tool's parameter annotations are read by the
MCP server to build its input schema.
"""

from typing import Annotated, Any

import mcp_types as types
from mcp.server.mcpserver import Context
from pydantic import Field

from cadmcp.host.builtins.adapter import DocumentAdapter, HostError
from cadmcp.host.builtins.checkpoint import position, stamped
from cadmcp.host.builtins.preview import apply_previewed, preview_script
from cadmcp.host.builtins.scripts import run_script
from cadmcp.wire.meta import PREVIEW

PREVIEW_NOTE = (
    " dryRun=true previews instead: the script runs in a transaction, the answer lists what it would "
    "create, modify and delete (by kind and name) with before- and after-pictures, and everything is "
    "rolled back; pass the answer's applyWith.previewed as previewed to apply exactly that change (it "
    "refuses if the document changed since)."
)
MAX_PREVIEWED_CHARS = 100

ScriptCode = Annotated[
    str, Field(description="Python source to run; a final expression's value is returned.")
]
"""execute_python_code's `code` parameter, the same with or without previews."""
StepName = Annotated[
    str | None,
    Field(
        description="Short name of the undo step, e.g. 'Add grid lines A-D' (default: the "
        "script's leading comment or first line)."
    ),
]
"""execute_python_code's `description` parameter."""


def previewing_tool(surface: Any, adapter: DocumentAdapter) -> Any:
    """The execute_python_code function of a host whose adapter can preview."""

    def execute_python_code(
        code: ScriptCode,
        description: StepName = None,
        dryRun: Annotated[
            bool,
            Field(
                description="Preview only: report and picture what the script would change, then roll back."
            ),
        ] = False,
        previewed: Annotated[
            str | None,
            Field(
                description="applyWith.previewed from a dryRun answer: apply only if the document is still "
                "as previewed and the run gives the previewed result.",
                max_length=MAX_PREVIEWED_CHARS,
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> types.CallToolResult:
        def run() -> types.CallToolResult:
            asked = requested_preview(ctx)
            dry_run = dryRun or asked.get("dryRun") is True
            applying = previewed or asked.get("apply")
            if not isinstance(code, str) or not code.strip():
                raise HostError("code is empty: pass the Python source to run.", "invalid")
            if dry_run and applying:
                raise HostError("Pass dryRun or previewed, not both.", "invalid")
            if dry_run:
                return preview_script(adapter, code, description)
            before = position(adapter)
            if isinstance(applying, str) and applying:
                applied = apply_previewed(adapter, code, description, applying)
                if isinstance(applied, str):
                    return types.CallToolResult(
                        content=[types.TextContent(type="text", text=applied)], is_error=True
                    )
                result = applied
            else:
                result = run_script(adapter, code, description)
            answer = types.CallToolResult(
                content=[types.TextContent(type="text", text=result.text())], is_error=result.is_error
            )
            return stamped(adapter, before, answer, surface.saved_from)

        return surface._tool_call("execute_python_code", run)

    return execute_python_code


def requested_preview(ctx: Context | None) -> dict[str, Any]:
    """What the request's `_meta` asks of the call: `{"dryRun": true}` or `{"apply": revisions}`."""
    try:
        meta = ctx.request_context.meta if ctx is not None else None
    except ValueError:  # outside a request
        return {}
    asked = meta.get(PREVIEW) if isinstance(meta, dict) else None
    if not isinstance(asked, dict):
        return {}
    apply = asked.get("apply")
    if apply is not None and (not isinstance(apply, str) or len(apply) > MAX_PREVIEWED_CHARS):
        raise HostError(
            "The request's preview apply value must be applyWith.previewed of a dryRun.", "invalid"
        )
    return asked
