"""Running calls as tasks: when a call becomes one, how it runs, reports, asks and stops.

The engine is server middleware around `tools/call`. For a client that can take tasks it runs
the rest of the request's handling (call log, request-state sealing, the daemon's tool) as a
background job and waits:

- a job that finishes within `after` seconds is answered directly, exactly as without tasks;
- one still running then becomes a task: the request is answered with the task handle and the
  job's eventual answer (the same wire result the synchronous call would have given, or its
  JSON-RPC error) is kept for `tasks/get` / `tasks/result`.

Which calls may become tasks is the daemon's `policy(name, arguments, refine)`: `forbidden`
(answered directly), `optional` (the rule above) or `required` (a task at once). A 2025-11-25
client asks for a task itself (`params.task`) and gets one at once. A client that declares no
task support never meets any of this: its calls run as before.

A job's work is the daemon's own tool: for `invoke_dynamic`, a host call through whatever link
the capability lives behind. While it runs, `hooks(ctx)` gives the tool what it needs: progress
forwarding (the client's progress token, and the task's status message), whether the call
reached a host, and the task's own channel for the host's input rounds. Cancelling a job cancels
its host call, which the host turns into stopping (and rolling back) the running script.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from cadmcp.daemon.catalog import HostEntry
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.hostlink import Link
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.invoking import CallHooks, HostLost, InputAnswerer, host_lost
from cadmcp.daemon.tasks.owner import Owner, owner_of
from cadmcp.daemon.tasks.record import Era, TaskRecord
from cadmcp.daemon.tasks.settings import TaskSettings
from cadmcp.daemon.tasks.store import TaskNotFound, TaskStore

log = logging.getLogger("cadmcp.daemon")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TaskSupport = Literal["forbidden", "optional", "required"]
Policy = Callable[[Any, Any, bool], tuple[TaskSupport, str]]
"""`(tool name, arguments, refine) -> (support, label)`; `refine` asks for the target's own rule."""

EXPIRED_GRACE_S = 60.0
"""How long a task stopped at its TTL stays visible (failed, saying why) before it is dropped."""
HOST_CHECK_S = 1.0
"""How often a task waiting for input checks that its host is still there."""


def declares_tasks(ctx: ServerRequestContext[Any]) -> bool:
    """Whether this (2026-07-28) request declares the tasks extension in its capabilities."""
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return extensions is not None and TASKS_EXTENSION in extensions


@dataclass(eq=False)
class Job:
    """One call running in the background on behalf of a request (and perhaps a task)."""

    era: Era
    ctx: ServerRequestContext[Any]
    owner: Owner
    label: str
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: dict[str, Any] | None = None
    error: Exception | None = None
    """What the call raised (a JSON-RPC error, invalid params, a daemon bug)."""
    lost: dict[str, Any] | None = None
    """The `invocation_failed` answer when the host went away during the call."""
    task: TaskRecord | None = None
    direct: bool = False
    """Committed to answering the original request itself (it is getting `input_required`)."""
    request_open: bool = True
    sent: bool = False
    progress_message: str | None = None
    woken: anyio.Event = field(default_factory=anyio.Event)
    """Set when the job is done or wants to be a task now (the person must be asked)."""
    promoted: anyio.Event = field(default_factory=anyio.Event)
    """Set once the request decided whether the job is a task."""

    def mark_sent(self) -> None:
        self.sent = True
        if self.task is not None:
            self.task.execution_started = True


_current_job: ContextVar[Job | None] = ContextVar("cadmcp_task_job", default=None)


class RawNotification(BaseModel):
    """A server notification by method name (for methods the SDK has no model of)."""

    method: str
    params: dict[str, Any]


class TaskEngine:
    """Turns long calls into tasks, keeps them, and serves their state to their owners."""

    def __init__(
        self,
        directory: HostDirectory,
        policy: Policy,
        settings: TaskSettings | None = None,
    ) -> None:
        self.directory = directory
        self.policy = policy
        self.settings = settings or TaskSettings.from_env()
        self.store = TaskStore(self.settings)
        self._tg: anyio.abc.TaskGroup | None = None
        self._jobs: dict[str, Job] = {}
        self._listeners: dict[object, Callable[[TaskRecord], None]] = {}

    # -- lifecycle ----------------------------------------------------------------------------
    async def run(self, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run jobs and expire tasks until cancelled (jobs end with the daemon)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                while True:
                    await anyio.sleep(1.0)
                    self.sweep()
            finally:
                self._tg = None

    def sweep(self) -> None:
        """Forget tasks past their TTL; stop the ones still running then."""
        for record in self.store.due():
            if record.terminal:
                self.store.forget(record)
                continue
            overdue = f"The task ran longer than its time to live ({record.ttl:g} s)"
            self._stop(
                record,
                "failed",
                f"{overdue} and was stopped; {self._stop_note(record)}",
                error={"code": types.INTERNAL_ERROR, "message": f"{overdue} and was stopped."},
            )
            record.expires_at = self.store.clock() + EXPIRED_GRACE_S

    # -- the middleware -----------------------------------------------------------------------
    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or self._tg is None or not isinstance(ctx.params, Mapping):
            return await call_next(ctx)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern:
            if not declares_tasks(ctx):
                return await call_next(ctx)
            era: Era = "extension"
        else:
            if not isinstance(ctx.params.get("task"), Mapping):
                return await call_next(ctx)
            era = "legacy"
        name, arguments = ctx.params.get("name"), ctx.params.get("arguments")
        support, label = self.policy(name, arguments, modern)
        if support == "forbidden":
            if modern:
                return await call_next(ctx)
            raise MCPError(
                code=types.METHOD_NOT_FOUND,
                message=f"{name} does not run as a task; call it without params.task "
                "(invoke_dynamic and launch_host can run as tasks).",
            )
        job = Job(era, ctx, owner_of(ctx), label)
        token = _current_job.set(job)  # the job's task inherits it (hooks, note_failure)
        try:
            self._tg.start_soon(self._work, job, call_next, ctx)
        finally:
            _current_job.reset(token)
        try:
            if support == "optional" and era == "extension":
                with anyio.move_on_after(self.settings.after):
                    await job.woken.wait()
            if not job.done.is_set() and not job.direct:
                created = self._promote(job, _requested_ttl(ctx) if era == "legacy" else None)
                job.promoted.set()
                if created is not None:
                    return created
                if era == "legacy":
                    job.scope.cancel()
                    raise MCPError(
                        code=types.INTERNAL_ERROR,
                        message=f"The daemon keeps {self.settings.max_tasks} tasks at most and all are "
                        "running; wait for some to finish or cancel them (tasks/cancel), then retry.",
                    )
            job.promoted.set()  # not a task: a confirmation waits on this request
            await job.done.wait()
        except anyio.get_cancelled_exc_class():
            if job.task is None:  # the request went away before it became a task: stop the call
                job.scope.cancel()
            raise
        finally:
            job.request_open = False
        if job.error is not None:
            raise job.error
        if job.outcome is None:
            raise MCPError(
                code=types.INTERNAL_ERROR, message="The daemon is stopping; the call was cancelled."
            )
        return job.outcome

    async def _work(self, job: Job, call_next: CallNext, ctx: ServerRequestContext[Any]) -> None:
        try:
            with job.scope:
                try:
                    result = await call_next(ctx)
                    job.outcome = (
                        result.model_dump(by_alias=True, mode="json", exclude_none=True)
                        if isinstance(result, BaseModel)
                        else dict(result or {})
                    )
                except Exception as exc:  # answered as the direct call would have, or kept in the task
                    if handler_exception_to_error_data(exc) is None:
                        log.exception("a background call failed")
                    job.error = exc
        finally:
            job.done.set()
            job.woken.set()
            if job.task is not None:
                self._settle(job, job.task)
                self._jobs.pop(job.task.task_id, None)

    def _promote(self, job: Job, ttl: float | None) -> dict[str, Any] | None:
        record = self.store.create(job.owner, job.era, job.label, ttl)
        if record is None:
            return None
        job.task = record
        record.execution_started = job.sent
        record.status_message = job.progress_message or f"{job.label}: running."
        self._jobs[record.task_id] = job
        log.info("task %s… created era=%s target=%s", record.task_id[:8], record.era, job.label)
        return record.created_result()

    def _settle(self, job: Job, record: TaskRecord) -> None:
        """Keep what the job ended with (a task cancelled or stopped earlier stays so)."""
        if record.terminal:
            return
        if job.outcome is None and job.error is None:
            record.status, record.status_message = "cancelled", f"Cancelled: {self._stop_note(record)}"
        elif job.lost is not None:
            record.status = "failed"
            record.status_message = str(job.lost.get("message"))
            record.error = {"code": types.INTERNAL_ERROR, "message": record.status_message, "data": job.lost}
            record.result = job.outcome  # what tasks/result answers for a 2025-11-25 client
        elif job.error is not None:
            error = handler_exception_to_error_data(job.error) or types.ErrorData(
                code=types.INTERNAL_ERROR,
                message="The daemon failed while running the call; the daemon log has details.",
            )
            record.status, record.status_message = "failed", error.message
            record.error = error.model_dump(by_alias=True, mode="json", exclude_none=True)
        else:
            record.result = job.outcome
            is_error = bool(record.result and record.result.get("isError"))
            # 2025-11-25 counts a tool result with isError as failed; the extension as completed
            record.status = "failed" if is_error and record.era == "legacy" else "completed"
            record.status_message = "Finished; the result reports an error." if is_error else "Finished."
        record.round = None
        record.touch()
        self.store.finished(record)
        self._publish(record, status_changed=True)
        log.info("task %s… %s: %s", record.task_id[:8], record.status, record.status_message)

    # -- what the running call uses -----------------------------------------------------------
    def hooks(self, ctx: ServerRequestContext[Any]) -> CallHooks:
        """How the daemon's tool reports while it runs (a job's, or a plain request's)."""
        job = _current_job.get()
        if job is None:  # the host is asked for progress only when the client asked for it
            meta = ctx.meta if isinstance(ctx.meta, Mapping) else {}
            asked = "progress_token" in meta
            return CallHooks(progress=ctx.session.report_progress if asked else None)
        return CallHooks(
            progress=partial(self._progress, job),
            on_sent=job.mark_sent,
            input_channel=partial(self._input_channel, job),
            confirm_channel=partial(self._confirm_channel, job),
        )

    def note_failure(self, error: DaemonError) -> None:
        """The daemon's tool answered an error: a host that went away makes its task `failed`."""
        job = _current_job.get()
        if job is not None and isinstance(error, HostLost):
            job.lost = error.body()

    async def _progress(self, job: Job, progress: float, total: float | None, message: str | None) -> None:
        job.mark_sent()  # progress comes from something that runs
        if job.request_open or job.era == "legacy":  # 2025-11-25: the token lives as long as the task
            with contextlib.suppress(Exception):
                await job.ctx.session.report_progress(progress, total, message)
        job.progress_message = describe_progress(progress, total, message)
        record = job.task
        if record is not None and not record.terminal:
            record.status_message = job.progress_message
            record.touch()
            self._publish(record, status_changed=False)

    def _input_channel(self, job: Job, entry: HostEntry, link: Link) -> InputAnswerer | None:
        if job.task is None:
            job.direct = True  # not a task (yet): the request answers this round as usual
            return None
        return partial(self._ask, job, job.task, entry, link)

    async def _confirm_channel(self, job: Job, entry: HostEntry, link: Link) -> InputAnswerer | None:
        """The channel for the person's confirmation: a call not yet a task becomes one now (its
        request is still waiting to decide), so the question waits in the task's input round."""
        if job.task is None and not job.direct:
            job.woken.set()
            with anyio.move_on_after(HOST_CHECK_S * 5):  # bounded: the request decides at once
                await job.promoted.wait()
        return self._input_channel(job, entry, link)

    async def _ask(
        self, job: Job, record: TaskRecord, entry: HostEntry, link: Link, requests: dict[str, Any]
    ) -> dict[str, Any]:
        """One input round of a task: show the requests, wait for the client's answers."""
        round_ = record.open_round(requests)
        record.status = "input_required"
        record.status_message = _input_message(requests, record.era)
        record.touch()
        self._publish(record, status_changed=True)
        while not round_.answered.is_set():
            with anyio.move_on_after(HOST_CHECK_S):
                await round_.answered.wait()
            if not round_.answered.is_set() and entry.key not in self.directory.links:
                raise host_lost(
                    entry, "the host went away while the task waited for input", execution_started=True
                )
        record.round = None
        if round_.failure is not None:
            raise round_.failure
        record.status, record.status_message = "working", f"{job.label}: input received, running."
        record.touch()
        self._publish(record, status_changed=True)
        return round_.responses

    # -- operations on tasks ------------------------------------------------------------------
    def lookup(self, ctx: ServerRequestContext[Any], task_id: Any, era: Era) -> TaskRecord:
        """The caller's task, or the protocol's -32602 error."""
        try:
            return self.store.lookup(owner_of(ctx), task_id, era)
        except TaskNotFound as missing:
            if missing.expired:
                message = (
                    f"Failed to retrieve task: Task has expired (tasks are kept {self.settings.ttl:g} s "
                    "from creation). Run the call again."
                )
            else:
                message = (
                    "Failed to retrieve task: Task not found. Use the taskId the call answered with, "
                    "from the same client."
                )
            raise MCPError(code=types.INVALID_PARAMS, message=message) from None

    def cancel(self, record: TaskRecord) -> bool:
        """Cancel a task: it says `cancelled` at once and its call is stopped (False if it had ended)."""
        if record.terminal:
            return False
        self._stop(record, "cancelled", f"Cancelled by the client; {self._stop_note(record)}")
        return True

    def answer(self, record: TaskRecord, responses: dict[str, Any]) -> None:
        """Take a client's answers to the task's outstanding input requests (others are ignored)."""
        if record.round is not None and not record.terminal:
            record.round.offer(responses)

    def subscribe(self, listener: Callable[[TaskRecord], None]) -> Callable[[], None]:
        """Call `listener(record)` on every task change; returns the unsubscribe function."""
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None)

    def _stop(
        self, record: TaskRecord, status: Literal["cancelled", "failed"], message: str, **fields: Any
    ) -> None:
        record.status, record.status_message = status, message
        record.error = fields.get("error")
        record.round = None
        record.touch()
        job = self._jobs.get(record.task_id)
        if job is not None:
            job.scope.cancel()
        self.store.finished(record)
        self._publish(record, status_changed=True)
        log.info("task %s… %s: %s", record.task_id[:8], status, message)

    @staticmethod
    def _stop_note(record: TaskRecord) -> str:
        if record.execution_started:
            return (
                "the call had reached the host, which was told to stop it (a script in cadmcp's own "
                "hosts stops and its changes are rolled back; another MCP server keeps what it did)."
            )
        return "the call had not reached a host; nothing ran."

    def _publish(self, record: TaskRecord, *, status_changed: bool) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(record)
            except Exception:
                log.exception("a task listener failed")
        if record.era == "legacy" and status_changed and self._tg is not None:
            job = self._jobs.get(record.task_id)
            if job is not None:
                self._tg.start_soon(self._notify_legacy, job, record.legacy())

    @staticmethod
    async def _notify_legacy(job: Job, task: dict[str, Any]) -> None:
        """2025-11-25 `notifications/tasks/status` on the client's connection (best effort)."""
        with contextlib.suppress(Exception):
            await job.ctx.session.send_notification(
                RawNotification(method="notifications/tasks/status", params=task)  # type: ignore[arg-type]
            )

    def running(self, record: TaskRecord) -> Job | None:
        """The job behind a task still being worked on."""
        job = self._jobs.get(record.task_id)
        return job if job is not None and not record.terminal else None


def describe_progress(progress: float, total: float | None, message: str | None) -> str:
    """A progress notification as a status message: `40%: storey 2 of 5`."""
    head = f"{min(100.0, max(0.0, 100 * progress / total)):.0f}%" if total else f"{progress:g} done"
    return f"{head}: {message}" if message else head


def _input_message(requests: dict[str, Any], era: Era) -> str:
    asked = [
        str((r.get("params") or {}).get("message") or r.get("method"))
        for r in requests.values()
        if isinstance(r, dict)
    ]
    how = "answer with tasks/update" if era == "extension" else "call tasks/result to answer"
    return f"Waiting for input ({how}): " + "; ".join(a[:200] for a in asked[:4])


def _requested_ttl(ctx: ServerRequestContext[Any]) -> float | None:
    """The lifetime a 2025-11-25 client asked for (`params.task.ttl`, ms), at least 1 s."""
    task = (ctx.params or {}).get("task") or {}
    ttl = task.get("ttl") if isinstance(task, Mapping) else None
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0:
        return max(1.0, ttl / 1000)
    return None
