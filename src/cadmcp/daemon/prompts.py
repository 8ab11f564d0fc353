"""The daemon's prompts: scripting conventions for `execute_python_code`, per host.

Answered by the daemon alone (no host is contacted). The texts live in `prompts.toml`
next to this module; this module only lists and renders them.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

MODES = ("edit", "read_only")
_TEXTS = Path(__file__).with_name("prompts.toml")


@functools.cache
def _texts() -> dict[str, Any]:
    import tomllib

    return tomllib.loads(_TEXTS.read_text(encoding="utf-8"))


def prompts() -> list[types.Prompt]:
    """Every prompt the daemon offers, with its arguments."""
    texts = _texts()
    modes = ", ".join(f"{m} ({texts['modes'][m]['description']})" for m in MODES)
    return [
        types.Prompt(
            name=name,
            title=spec["title"],
            description=spec["description"],
            arguments=[
                types.PromptArgument(name="task", description="What the script should do.", required=True),
                types.PromptArgument(name="mode", description=f"One of {modes}; default edit."),
            ],
        )
        for name, spec in texts["prompts"].items()
    ]


def render(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    """The prompt `name` for a task, or an invalid-params error saying what to pass."""
    texts = _texts()
    spec = texts["prompts"].get(name)
    if spec is None:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Unknown prompt {name!r}; the daemon offers {sorted(texts['prompts'])}.",
        )
    arguments = arguments or {}
    unknown = sorted(set(arguments) - {"task", "mode"})
    if unknown:
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"Unknown argument(s) {unknown}; pass task and mode."
        )
    task = (arguments.get("task") or "").strip()
    if not task:
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"{name} needs a task: say what the script should do."
        )
    mode = (arguments.get("mode") or "edit").strip()
    if mode not in MODES:
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"mode must be one of {list(MODES)} (got {mode!r})."
        )
    text = texts["common"]["text"].replace("{mode_text}", texts["modes"][mode]["text"])
    for key in ("title", "host", "search", "resources", "scope"):
        text = text.replace("{" + key + "}", spec[key].strip())
    text = text.replace("{task}", task).strip() + "\n"
    return types.GetPromptResult(
        description=f"{spec['title']} ({mode})",
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
    )


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    """`prompts/list` handler."""
    return types.ListPromptsResult(prompts=prompts())


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    """`prompts/get` handler."""
    return render(params.name, params.arguments)
