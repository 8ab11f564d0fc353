"""What a task-capable MCP client needs on top of the SDK's `ClientSession`.

2026-07-28: the SDK lets a client declare an extension and claim its result shape
(`extensions=`, `result_claims=`), send any typed request (`send_request`) and receive any
notification (`notification_bindings=`); these models are the extension's shapes. 2025-11-25:
the SDK client validates `tools/call` results as `CallToolResult`, so task-augmented calls go
through the session's raw request path (`raw`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Literal

import anyio
import mcp_types as types
from mcp.client.extension import NotificationBinding, ResultClaim
from mcp.client.session import ClientSession
from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}
_OPEN = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class CreatedTask(types.Result):
    """`CreateTaskResult` (`resultType: "task"`), as the client claims it."""

    model_config = _OPEN
    result_type: Literal["task"]
    task_id: str
    status: str


class Task(types.Result):
    """`DetailedTask` from `tasks/get` (or a 2025-11-25 `Task`): extra fields kept."""

    model_config = _OPEN
    task_id: str
    status: str
    status_message: str | None = None

    def field(self, name: str) -> Any:
        return (self.model_extra or {}).get(name)


class TaskParams(types.RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class StatusParams(types.NotificationParams):
    model_config = _OPEN
    task_id: str
    status: str
    status_message: str | None = None


async def _unresolved(result: CreatedTask, ctx: Any) -> types.CallToolResult:
    raise AssertionError("the tests read task handles themselves (allow_claimed=True)")


def task_client_kwargs(
    on_status: Callable[[StatusParams], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """`ClientSession` arguments of a 2026-07-28 client that takes tasks."""
    kwargs: dict[str, Any] = {
        "extensions": {TASKS: {}},
        "result_claims": {TASKS: [ResultClaim(result_type="task", model=CreatedTask, resolve=_unresolved)]},
    }
    if on_status is not None:
        kwargs["notification_bindings"] = [
            NotificationBinding(
                method="notifications/tasks/status", params_type=StatusParams, handler=on_status
            )
        ]
    return kwargs


async def get_task(session: ClientSession, task_id: str) -> Task:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), Task)


async def poll(
    session: ClientSession, task_id: str, until: set[str] = TERMINAL, timeout: float = 60.0
) -> tuple[Task, list[Task]]:
    """Poll `tasks/get` until the status is in `until`; the last state and every state seen."""
    seen: list[Task] = []
    with anyio.fail_after(timeout):
        while True:
            task = await get_task(session, task_id)
            seen.append(task)
            if task.status in until:
                return task, seen
            await anyio.sleep(0.1)


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> types.CallToolResult:
    """Call a tool and, if it became a task, poll it to its end: the call's result either way."""
    answer = await session.call_tool(name, args, allow_claimed=True)
    if isinstance(answer, CreatedTask):
        final, _ = await poll(session, answer.task_id)
        return types.CallToolResult.model_validate(final.field("result"))
    assert isinstance(answer, types.CallToolResult), answer
    return answer


async def raw(session: ClientSession, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request through the session's own envelope and dispatcher, its result unvalidated."""
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # type: ignore[arg-type]
    return await session._dispatcher.send_raw_request(method, data["params"], opts)  # type: ignore[arg-type]


async def legacy_poll(session: ClientSession, task_id: str, until: set[str] = TERMINAL) -> dict[str, Any]:
    with anyio.fail_after(60):
        while True:
            task = await raw(session, "tasks/get", {"taskId": task_id})
            if task["status"] in until:
                return task
            await anyio.sleep(0.1)
