"""What one daemon tool is: its definition for agents, its argument check and its handler.

Every tool of the daemon's fixed surface is one module of this package declaring a
:class:`DaemonTool`; the server looks the tool up in :data:`cadmcp.daemon.tools.TOOLS` and calls
:meth:`DaemonTool.call`, which checks the arguments once (size and text bounds, then the tool's
own ``inputSchema`` through the same :class:`ArgumentChecker` that checks host tools' arguments)
before the handler runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from cadmcp.daemon.argcheck import ArgumentChecker
from cadmcp.daemon.limits import MAX_ARGUMENTS_BYTES, check_text, json_size
from cadmcp.wire.echo import echo
from cadmcp.wire.jsonwire import dumps

if TYPE_CHECKING:
    from cadmcp.daemon.gateway import Gateway
    from cadmcp.daemon.hosts import HostDirectory
    from cadmcp.daemon.launching import HostLauncher
    from cadmcp.daemon.policy.gate import Gate
    from cadmcp.daemon.tasks import TaskEngine, TaskSupport

__all__ = ["MAX_TOOL_ARGUMENTS_BYTES", "DaemonTool", "Services", "ToolCall", "structured"]

MAX_TOOL_ARGUMENTS_BYTES = MAX_ARGUMENTS_BYTES + 64 * 1024
"""A daemon tool's whole arguments (a host call's `arguments` plus what surrounds them)."""


@dataclass(frozen=True)
class Services:
    """What the daemon's tools work with (the daemon's parts, shared by every call)."""

    directory: HostDirectory
    launcher: HostLauncher
    checker: ArgumentChecker
    tasks: TaskEngine
    gate: Gate
    """The person's policy, deciding every host call before it is sent."""
    gateway: Gateway | None = None


@dataclass(frozen=True)
class ToolCall:
    """One `tools/call` of a daemon tool, its arguments already checked."""

    services: Services
    ctx: ServerRequestContext[Any]
    params: types.CallToolRequestParams
    args: dict[str, Any]


Handler = Callable[[ToolCall], Awaitable[Any]]
TaskPolicy = Callable[["Services", dict[str, Any], bool], "tuple[TaskSupport, str]"]


def structured(value: dict[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    """A daemon tool result: structured content plus its compact JSON text mirror."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=dumps(value))],
        structured_content=value,
        is_error=is_error,
    )


@dataclass(frozen=True)
class DaemonTool:
    """One tool of the daemon's surface."""

    definition: dict[str, Any]
    """What `tools/list` says of it: name, title, description, inputSchema, execution."""
    handler: Handler
    """The answer: a dict (sent as structured content) or a wire result to pass through."""
    text_limits: Mapping[str, int] = field(default_factory=dict)
    """String arguments and their most characters, refused before the schema is checked."""
    lenient: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Accepted spellings made canonical before the check (``kinds: "tool"`` for ``["tool"]``)."""
    waits_for_catalog: bool = False
    """Answer from a directory that has seen every host's latest catalog."""
    passes_through: bool = False
    """The handler's dict is a host's own result, sent as it is."""
    task_policy: TaskPolicy | None = None
    """Whether a call may run as a task, and its name there; None: never a task."""

    @property
    def name(self) -> str:
        return str(self.definition["name"])

    def check(self, checker: ArgumentChecker, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments, made canonical, or a `validation_error` saying what to fix.

        The only place a daemon tool's arguments are bounded; a null argument is an absent one."""
        json_size(args, f"{self.name} arguments", MAX_TOOL_ARGUMENTS_BYTES)
        args = {k: v for k, v in args.items() if v is not None}
        for name, limit in self.text_limits.items():
            check_text(args.get(name), name, limit)
        if self.lenient is not None:
            args = self.lenient(args)
        checker.check_schema(f"daemon:{self.name}", self.name, self.definition["inputSchema"], args)
        return args

    async def call(
        self, services: Services, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> Any:
        """Check the arguments, wait for the catalog if asked, run the handler."""
        args = self.check(services.checker, params.arguments or {})
        if self.waits_for_catalog:
            await services.directory.caught_up()
        answer = await self.handler(ToolCall(services, ctx, params, args))
        return answer if self.passes_through else structured(answer)


def unknown_tool_message(name: str, names: list[str]) -> str:
    return (
        f"Unknown tool {echo(name, 40)}. The daemon serves {names}; "
        "host tools are reached through search_dynamic and invoke_dynamic."
    )
