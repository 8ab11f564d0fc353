"""Long-running calls as MCP tasks, in both protocol eras.

- 2026-07-28 clients that declare `io.modelcontextprotocol/tasks` (SEP-2663): the daemon
  decides per call; `tasks/get`, `tasks/update`, `tasks/cancel`, status on `subscriptions/listen`
  (`extension`).
- 2025-11-25 clients: task-augmented `tools/call` (`params.task`), `tasks/get`, `tasks/result`,
  `tasks/list`, `tasks/cancel` (`legacy`).

`TaskEngine` (`engine`) decides and runs; `TaskStore` (`store`) keeps; `owner` says whose a task
is. `install` wires all of it into the daemon's low-level server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cadmcp.daemon.tasks import extension, legacy
from cadmcp.daemon.tasks.engine import TASKS_EXTENSION, TaskEngine, TaskSupport
from cadmcp.daemon.tasks.extension import TaskParams, UpdateParams
from cadmcp.daemon.tasks.settings import TaskSettings

__all__ = ["TASKS_EXTENSION", "TaskEngine", "TaskSettings", "TaskSupport", "advertise", "install"]

Handler = Callable[[TaskEngine, ServerRequestContext[Any], Any], Awaitable[Any]]


def install(server: Server[Any], engine: TaskEngine) -> None:
    """Serve the task methods of both eras and run `tools/call` through the engine.

    The engine goes first in the middleware chain, so the work it runs in the background is the
    whole rest of the request's handling (call log, request-state sealing, the tool).
    """

    def by_era(modern: Handler | None, handshake: Handler | None, method: str) -> Any:
        async def handle(ctx: ServerRequestContext[Any], params: Any) -> Any:
            chosen = modern if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else handshake
            if chosen is None:
                raise MCPError(
                    code=types.METHOD_NOT_FOUND,
                    message=f"{method} is not part of tasks at protocol {ctx.protocol_version}.",
                )
            return await chosen(engine, ctx, params)

        return handle

    server.add_request_handler("tasks/get", TaskParams, by_era(extension.get, legacy.get, "tasks/get"))
    server.add_request_handler(
        "tasks/cancel", TaskParams, by_era(extension.cancel, legacy.cancel, "tasks/cancel")
    )
    server.add_request_handler("tasks/update", UpdateParams, by_era(extension.update, None, "tasks/update"))
    server.add_request_handler("tasks/result", TaskParams, by_era(None, legacy.result, "tasks/result"))
    server.add_request_handler(
        "tasks/list", types.PaginatedRequestParams, by_era(None, legacy.list_tasks, "tasks/list")
    )
    server.add_request_handler(
        "subscriptions/listen",
        types.SubscriptionsListenRequestParams,
        by_era(extension.listen, None, "subscriptions/listen"),
    )
    server.middleware.insert(0, engine)


def advertise(
    capabilities: types.ServerCapabilities, protocol_version: str | None
) -> types.ServerCapabilities:
    """Say what the daemon supports: the extension at 2026-07-28, core `tasks` before it.

    The daemon's own lists never change, so serving `subscriptions/listen` (for task status)
    does not turn on `listChanged`.
    """
    if protocol_version in MODERN_PROTOCOL_VERSIONS:
        update: dict[str, Any] = {"extensions": {**(capabilities.extensions or {}), TASKS_EXTENSION: {}}}
        if capabilities.tools is not None:
            update["tools"] = types.ToolsCapability(list_changed=False)
        if capabilities.prompts is not None:
            update["prompts"] = types.PromptsCapability(list_changed=False)
        return capabilities.model_copy(update=update)
    return capabilities.model_copy(
        update={
            "tasks": types.ServerTasksCapability(
                list=types.TasksListCapability(),
                cancel=types.TasksCancelCapability(),
                requests=types.ServerTasksRequestsCapability(
                    tools=types.TasksToolsCapability(call=types.TasksCallCapability())
                ),
            )
        }
    )
