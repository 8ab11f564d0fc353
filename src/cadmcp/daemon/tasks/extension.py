"""The `io.modelcontextprotocol/tasks` extension (SEP-2663) for 2026-07-28 clients.

`tasks/get` answers the `DetailedTask` (result, JSON-RPC error or input requests inlined);
`tasks/update` takes answers to a task's input requests and `tasks/cancel` asks the task to
stop, both answering an empty acknowledgement. Status notifications
(`notifications/tasks/status`, each carrying the `DetailedTask`) flow on a
`subscriptions/listen` stream that names the tasks (`taskIds`, or `tasksStatus` as in the
extension's schema); the stream starts with each task's current state and ends once all of
them have finished, unless it also listens for other events. There is no `tasks/list`: a
task is reached by its id.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import Field

from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.limits import check_responses
from cadmcp.daemon.tasks.engine import TASKS_EXTENSION, RawNotification, TaskEngine, declares_tasks
from cadmcp.daemon.tasks.owner import owner_of
from cadmcp.daemon.tasks.record import TaskRecord
from cadmcp.daemon.tasks.store import TaskNotFound

MAX_LISTENED_TASKS = 64
LISTEN_BUFFER = 256
TASK_FILTER_KEYS = ("taskIds", "tasksStatus")


class TaskParams(types.RequestParams):
    """`{taskId}`: which task."""

    task_id: str


class UpdateParams(TaskParams):
    """`{taskId, inputResponses}`: answers to a task's outstanding input requests."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


def require_extension(ctx: ServerRequestContext[Any], what: str) -> None:
    """Refuse a request that uses the extension without declaring it (`-32021`, naming it)."""
    if not declares_tasks(ctx):
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"{what} needs the {TASKS_EXTENSION} extension in this request's client capabilities.",
            data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )


async def get(engine: TaskEngine, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
    require_extension(ctx, "tasks/get")
    record = engine.lookup(ctx, params.task_id, "extension")
    return {"resultType": "complete", **record.detailed()}


async def update(engine: TaskEngine, ctx: ServerRequestContext[Any], params: UpdateParams) -> dict[str, Any]:
    require_extension(ctx, "tasks/update")
    try:  # the same bounds as invoke_dynamic's answers, before the task is looked at
        responses = check_responses(params.input_responses)
    except DaemonError as err:
        raise MCPError(code=types.INVALID_PARAMS, message=err.message, data=err.body()) from None
    record = engine.lookup(ctx, params.task_id, "extension")
    engine.answer(record, responses)
    return {"resultType": "complete"}


async def cancel(engine: TaskEngine, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
    require_extension(ctx, "tasks/cancel")
    engine.cancel(engine.lookup(ctx, params.task_id, "extension"))
    return {"resultType": "complete"}


async def listen(
    engine: TaskEngine, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
) -> types.SubscriptionsListenResult:
    """One `subscriptions/listen` stream: task status for the named tasks of this client.

    The daemon's own lists never change, so list-change kinds are acknowledged and never fire.
    """
    subscription_id = ctx.request_id
    if subscription_id is None:
        raise MCPError(code=types.INVALID_REQUEST, message="subscriptions/listen needs a request id")
    wanted = params.notifications
    extra = wanted.model_extra or {}
    key = next((k for k in TASK_FILTER_KEYS if k in extra), None)
    records: list[TaskRecord] = []
    if key is not None:
        require_extension(ctx, "Task status notifications")
        named = extra[key] if isinstance(extra[key], list) else []
        ids = list(dict.fromkeys(i for i in named[:MAX_LISTENED_TASKS] if isinstance(i, str)))
        owner = owner_of(ctx)
        for task_id in ids:
            try:
                records.append(engine.store.lookup(owner, task_id, "extension"))
            except TaskNotFound:
                continue  # not this client's: not honored, and nothing said about it
    honored_ids = [r.task_id for r in records]
    core_kinds = {
        "tools_list_changed": True if wanted.tools_list_changed else None,
        "prompts_list_changed": True if wanted.prompts_list_changed else None,
        "resources_list_changed": True if wanted.resources_list_changed else None,
        "resource_subscriptions": list(wanted.resource_subscriptions)
        if wanted.resource_subscriptions
        else None,
    }
    honored = types.SubscriptionFilter(**core_kinds, **({key: honored_ids} if key is not None else {}))
    meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    send, receive = anyio.create_memory_object_stream[TaskRecord](LISTEN_BUFFER)
    watched = set(honored_ids)

    def deliver(record: TaskRecord) -> None:
        if record.task_id in watched:
            try:
                send.send_nowait(record)
            except (anyio.WouldBlock, anyio.ClosedResourceError):
                send.close()  # a client that stopped reading: end its stream (it can listen again)

    unsubscribe = engine.subscribe(deliver)
    try:
        await ctx.session.send_notification(
            types.SubscriptionsAcknowledgedNotification(
                params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
            ),
            related_request_id=subscription_id,
        )
        for record in records:
            await _send_status(ctx, record, meta)
        open_ended = any(v is not None for v in core_kinds.values())
        finished = {r.task_id for r in records if r.terminal}
        async with receive:
            while open_ended or finished != watched:
                record = await receive.receive()
                await _send_status(ctx, record, meta)
                if record.terminal:
                    finished.add(record.task_id)
    except anyio.EndOfStream:
        pass
    finally:
        unsubscribe()
        send.close()
    return types.SubscriptionsListenResult(_meta=meta)


async def _send_status(ctx: ServerRequestContext[Any], record: TaskRecord, meta: dict[str, Any]) -> None:
    task = record.detailed()
    task["_meta"] = {**task["_meta"], **meta}
    await ctx.session.send_notification(
        RawNotification(method="notifications/tasks/status", params=task),  # type: ignore[arg-type]
        related_request_id=ctx.request_id,
    )
