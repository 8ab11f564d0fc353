"""The experimental core tasks of protocol 2025-11-25, for clients on that revision.

A client that declared nothing keeps calling as before. One that augments `invoke_dynamic`
or `launch_host` with `params.task` gets a `CreateTaskResult` at once; `tasks/get` answers
the task's state, `tasks/result` waits for the end and answers exactly what the call would
have (its result, or its JSON-RPC error), `tasks/list` pages through this client's tasks and
`tasks/cancel` stops one (a task that already ended cannot be cancelled: -32602). When the
host asks for input during a task, the task says `input_required`; the client's next
`tasks/result` is asked through elicitation (the requests carry the task's
`io.modelcontextprotocol/related-task`), as on that revision.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.invoking import RELATED_TASK_META, client_elicitation
from cadmcp.daemon.tasks.engine import TaskEngine
from cadmcp.daemon.tasks.extension import TaskParams
from cadmcp.daemon.tasks.owner import owner_of
from cadmcp.daemon.tasks.record import InputRound, TaskRecord

PAGE = 50


async def get(engine: TaskEngine, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
    return engine.lookup(ctx, params.task_id, "legacy").legacy()


async def result(engine: TaskEngine, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
    """Wait for the task's end (answering its input rounds on the way), then its final answer."""
    record = engine.lookup(ctx, params.task_id, "legacy")
    while not record.terminal:
        changed = record.changed
        round_ = record.round
        if record.status == "input_required" and round_ is not None and not round_.driven:
            await _answer_round(ctx, record, round_)
            continue
        await changed.wait()
    return _final(record)


async def _answer_round(ctx: ServerRequestContext[Any], record: TaskRecord, round_: InputRound) -> None:
    round_.driven = True
    try:
        answers = await client_elicitation(ctx, related_task=record.task_id)(round_.requests)
    except DaemonError as err:  # the client cannot answer: the call ends as it would have
        round_.fail(err)
        return
    except BaseException:
        round_.driven = False  # this tasks/result went away; the next one asks again
        raise
    round_.offer(answers)


def _final(record: TaskRecord) -> dict[str, Any]:
    related = {RELATED_TASK_META: {"taskId": record.task_id}}
    if record.status == "cancelled":
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"The task was cancelled, so it has no result. {record.status_message or ''}".strip(),
            data={"status": "cancelled", "_meta": related},
        )
    if record.result is not None:
        return {**record.result, "_meta": {**(record.result.get("_meta") or {}), **related}}
    error = record.error or {"code": types.INTERNAL_ERROR, "message": record.status_message or "failed"}
    raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))


async def list_tasks(
    engine: TaskEngine, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
) -> dict[str, Any]:
    """This client's tasks, newest first, `PAGE` at a time."""
    tasks = engine.store.owned(owner_of(ctx), "legacy")
    start = 0
    if params.cursor is not None:
        if not params.cursor.isdigit() or int(params.cursor) > len(tasks):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="Invalid cursor: pass the previous page's nextCursor, or none for the first page.",
            )
        start = int(params.cursor)
    page: dict[str, Any] = {"tasks": [r.legacy() for r in tasks[start : start + PAGE]]}
    if start + PAGE < len(tasks):
        page["nextCursor"] = str(start + PAGE)
    return page


async def cancel(engine: TaskEngine, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
    record = engine.lookup(ctx, params.task_id, "legacy")
    if not engine.cancel(record):
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"The task already ended ({record.status}); only running tasks can be cancelled.",
        )
    return record.legacy()
