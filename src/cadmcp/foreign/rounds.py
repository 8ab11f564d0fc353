"""Input a foreign server asks for in the middle of a call, carried by multi-round results.

A 2025-era server asks with a server-to-client `elicitation/create` while its `tools/call` is
still open. The proxy keeps that call running in its own task, answers the daemon's request
with `input_required` (the question as an `inputRequests` entry, a proxy token as
`requestState`), and the retry that carries the `inputResponses` hands the answer to the waiting
server, then waits for the call's next event (its result, or another question). So the daemon,
its sealed state, its policy and its legacy-client fallback see a host like any other.

A question no retry answers within `ROUND_TIMEOUT` is answered ``cancel``.

Which call a question belongs to: JSON-RPC gives a server's request no link to the client request
it serves (over stdio nothing at all), so the proxy never guesses. A call the server runs as a
task (2025-11-25 tasks) gets its questions with the task's id in
``_meta["io.modelcontextprotocol/related-task"]``: they go to that call, however many are in
flight. Any other question goes to the one plain call in flight that could be asking; with several
such calls it is refused (the server hears an error), never handed to a call that did not ask.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.exceptions import MCPError

ROUND_PREFIX = "cadmcp-foreign-round:"
ROUND_TIMEOUT = 600.0
"""Seconds a question waits for its answer before the server is told ``cancel``."""
INPUT_KEY = "elicitation"
RELATED_TASK = "io.modelcontextprotocol/related-task"
MAX_CALLS = 256
"""Calls in flight through one proxy."""

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(eq=False)
class Call:
    send: Any
    recv: Any
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    reporter: Progress | None = None
    tasked: bool = False
    """The server runs this call as a task: its questions name the task."""
    task_id: str | None = None
    asking: bool = False
    answered: anyio.Event | None = None
    answer: types.ElicitResult | None = None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        reporter = self.reporter
        if reporter is not None:
            await reporter(progress, total, message)


def related_task(context: Any, params: Any) -> str | None:
    """The server task a request from the server says it belongs to (its `_meta`), if any."""
    for meta in (getattr(context, "meta", None), getattr(params, "meta", None)):
        if meta is not None and not isinstance(meta, dict):
            meta = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else None
        related = (meta or {}).get(RELATED_TASK)
        if isinstance(related, dict) and isinstance(related.get("taskId"), str):
            return related["taskId"]
    return None


def _elicit_result(answer: Any) -> types.ElicitResult:
    if answer is None:
        return types.ElicitResult(action="cancel")
    data = (
        answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        if hasattr(answer, "model_dump")
        else answer
    )
    try:
        return types.ElicitResult.model_validate(data)
    except ValueError:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f'inputResponses.{INPUT_KEY} must be an elicitation answer: {{"action": '
            '"accept"|"decline"|"cancel", "content": {...}}.',
        ) from None


class Rounds:
    """The calls in flight through the proxy and the questions waiting for their answers."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.waiting: dict[str, Call] = {}

    @staticmethod
    def owns(state: str | None) -> bool:
        """Whether a retry's `requestState` is the proxy's own (else it is the server's)."""
        return isinstance(state, str) and state.startswith(ROUND_PREFIX)

    async def start(
        self,
        run: Callable[[Call], Awaitable[Any]],
        reporter: Progress | None,
        tg: anyio.abc.TaskGroup | None,
        *,
        tasked: bool = False,
    ) -> Any:
        """Run one call (``run(call)``) in ``tg`` and answer with its first event, the caller hearing
        its progress through ``reporter``; ``tasked`` when the server runs it as a task (``run`` sets
        ``call.task_id``)."""
        if len(self.calls) >= MAX_CALLS:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"{MAX_CALLS} calls are already in flight to this server; wait for some to finish.",
            )
        send, recv = anyio.create_memory_object_stream[tuple[str, Any]](4)
        call = Call(send, recv, tasked=tasked)
        self.calls.append(call)

        async def body() -> None:
            try:
                with call.scope:
                    try:
                        await send.send(("result", await run(call)))
                    except Exception as exc:
                        await send.send(("error", exc))
            finally:
                if call in self.calls:
                    self.calls.remove(call)
                send.close()

        if tg is None:
            raise RuntimeError("the proxy is not started")
        tg.start_soon(body)
        return await self._next(call, reporter)

    async def _next(self, call: Call, reporter: Progress | None) -> Any:
        call.reporter = reporter
        try:
            kind, value = await call.recv.receive()
        except anyio.EndOfStream:
            raise MCPError(code=types.INTERNAL_ERROR, message="The call ended without a result.") from None
        except anyio.get_cancelled_exc_class():
            call.scope.cancel()  # the caller gave up: so does the server's call
            raise
        finally:
            call.reporter = None
        if kind == "result":
            return value
        if kind == "error":
            raise value
        token = secrets.token_urlsafe(18)
        self.waiting[token] = call
        return types.InputRequiredResult(
            input_requests={INPUT_KEY: types.ElicitRequest(params=value)},
            request_state=ROUND_PREFIX + token,
        )

    async def resume(self, state: str, responses: dict[str, Any] | None, reporter: Progress | None) -> Any:
        """A retry: give the waiting server its answer, then answer with the call's next event."""
        call = self.waiting.pop(state[len(ROUND_PREFIX) :], None)
        if call is None or call.answered is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="This answer is for a question that is no longer waiting (answered already, "
                f"unanswered for {ROUND_TIMEOUT:g} s, or the server restarted); call the tool again.",
            )
        call.answer = _elicit_result((responses or {}).get(INPUT_KEY))
        call.answered.set()
        return await self._next(call, reporter)

    async def elicit(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The session's elicitation callback: ask through the call that asked, wait for the answer."""
        task_id = related_task(context, params)
        if task_id is not None:
            call = next((c for c in self.calls if c.task_id == task_id and not c.asking), None)
            if call is None:
                return types.ErrorData(
                    code=types.INVALID_REQUEST, message=f"No call in flight runs task {task_id[:80]}."
                )
        else:
            plain = [c for c in self.calls if not c.tasked and not c.asking]
            if len(plain) != 1:
                message = (
                    "No call is in flight to ask through."
                    if not plain
                    else f"{len(plain)} calls are in flight and the request names none of them (no "
                    "related task): it is not handed to one at random."
                )
                return types.ErrorData(code=types.INVALID_REQUEST, message=message)
            call = plain[0]
        call.asking, call.answer, call.answered = True, None, anyio.Event()
        try:
            await call.send.send(("ask", params))
            with anyio.move_on_after(ROUND_TIMEOUT):
                await call.answered.wait()
            if call.answer is None:  # nobody answered: the server hears "cancel"
                for token, waiting in list(self.waiting.items()):
                    if waiting is call:
                        del self.waiting[token]
                return types.ElicitResult(action="cancel")
            return call.answer
        finally:
            call.asking, call.answered = False, None

    def fail_all(self, reason: str) -> None:
        """The server is gone: forget the questions (their calls fail with the connection)."""
        self.waiting.clear()
