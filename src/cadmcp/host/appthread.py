"""Running document work on the application's own thread.

CAD APIs are single-threaded: Revit and AutoCAD marshal every call onto their UI thread.
The host runtime keeps MCP I/O on its own thread and hands each tool or resource call to
the application thread one at a time. How work reaches that thread is the integrator's
choice:

- `QueueAppThread`: a queue the application drains, either by handing its main thread to
  `run_forever()` (headless hosts) or by calling `pump()` from its own main loop or idle
  callback;
- `CallbackAppThread`: the application supplies `post(fn)`, which must arrange for `fn()`
  to run on its UI thread soon (Qt's `QTimer.singleShot`, Revit's `ExternalEvent`,
  Blender's `bpy.app.timers`...).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import anyio
from mcp.shared.exceptions import MCPError

from cadmcp.host.relay import ProgressRelay, current_relay

T = TypeVar("T")


class AppThread(Protocol):
    """Something that can run a callable on the application's thread."""

    def post(self, job: Callable[[], None]) -> None:
        """Arrange for `job()` to run on the application thread; must not block."""
        ...


class QueueAppThread:
    """A job queue drained by the application thread (`run_forever` or `pump`)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._stopped = False  # a plain flag: stop() must be safe inside a signal handler
        self.thread_id: int | None = None

    def post(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def pump(self, timeout: float = 0.0) -> int:
        """Run the queued jobs (waiting up to `timeout` for the first); returns how many ran."""
        self.thread_id = threading.get_ident()
        ran = 0
        block = timeout > 0
        while True:
            try:
                job = self._jobs.get(block=block, timeout=timeout if block else None)
            except queue.Empty:
                return ran
            block = False
            if job is None:
                return ran
            job()
            ran += 1

    def run_forever(self, poll: float = 0.25) -> None:
        """Drain jobs on the calling thread until `stop()`; wakes regularly so signals land."""
        self.thread_id = threading.get_ident()
        while not self._stopped:
            self.pump(timeout=poll)

    def stop(self) -> None:
        """Make `run_forever` return; idempotent and safe from a signal handler (no locks taken:
        `SimpleQueue.put` is reentrant, unlike `threading.Event.set`)."""
        self._stopped = True
        self._jobs.put(None)


class CallbackAppThread:
    """Adapts an integrator's `post(fn)` (a UI-thread hook) to the `AppThread` interface."""

    def __init__(self, post: Callable[[Callable[[], None]], Any]) -> None:
        self._post = post

    def post(self, job: Callable[[], None]) -> None:
        self._post(job)


class AppCallCancelled(Exception):
    """The call was cancelled: its caller went away before the application thread picked it up,
    or (raised where running code reports progress) while it ran."""


WEDGE_GRACE_S = 10.0
"""How long code asked to stop (timeout, cancel, shutdown) may keep the application thread
before the host calls itself wedged and answers `host_busy` instead of queueing calls."""

HOST_BUSY = -32010
"""JSON-RPC error code of `host_busy` (server-defined range)."""


@dataclass
class AppCall:
    """One call handed to the application thread, as the host sees it while it runs.

    The flags are plain attributes: a signal handler or another thread may set them without
    taking a lock (code on the application thread polls them).
    """

    label: str
    queued_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    cancel_requested: bool = False
    """The request was cancelled (or the host is stopping): running code should stop."""
    stop_requested_at: float | None = None
    """When something (a timeout, a cancel) last asked the running code to stop."""
    progress: ProgressRelay | None = None
    """Where `cadmcp.host.report_progress` sends this call's progress (its request's token)."""

    def request_stop(self) -> None:
        self.cancel_requested = True
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()


class HostBusy(MCPError):
    """The application thread is wedged in code that was asked to stop and did not; nothing can run."""

    def __init__(self, report: dict[str, Any]) -> None:
        message = (
            f"The host's application thread is stuck in {report['running']} "
            f"(running {report['runningSeconds']} s; asked to stop {report['stopRequestedSeconds']} s ago), "
            "so no call can run until it ends. "
            "Wait and retry, or restart the host (its documents reopen from their last saved state)."
        )
        super().__init__(code=HOST_BUSY, message=message, data={"type": "host_busy", **report})


_local = threading.local()


def current_call() -> AppCall | None:
    """The call the calling application-thread code is running for (None outside a call)."""
    return getattr(_local, "call", None)


class Dispatcher:
    """Serialises calls onto an `AppThread` and awaits their results from the I/O loop.

    One call runs at a time even if the integrator's `post` could run jobs concurrently.
    A call still waiting in the queue when its request is cancelled never runs; a running
    one is asked to stop (`AppCall.cancel_requested`, honoured by code execution). While the
    thread is wedged (see `WEDGE_GRACE_S`) new and queued calls fail at once with `HostBusy`, and
    so does the wedged call itself: its caller is not left waiting for code that does not stop.
    """

    def __init__(self, app_thread: AppThread) -> None:
        self.app_thread = app_thread
        self._lock = threading.Lock()
        self.running: AppCall | None = None

    def on_app_thread(self) -> bool:
        """Whether the current thread is running an application-thread call right now."""
        return current_call() is not None

    def busy_report(self) -> dict[str, Any] | None:
        """What wedges the application thread, or None when it is not wedged."""
        call = self.running
        if call is None or call.started_at is None or call.stop_requested_at is None:
            return None
        now = time.monotonic()
        if now - call.stop_requested_at < WEDGE_GRACE_S:
            return None
        return {
            "running": call.label,
            "since": _wall_time(call.started_at),
            "runningSeconds": round(now - call.started_at),
            "stopRequestedSeconds": round(now - call.stop_requested_at),
        }

    def cancel_running(self) -> None:
        """Ask whatever runs on the application thread to stop (signal-safe: sets flags only)."""
        call = self.running
        if call is not None:
            call.request_stop()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` on the application thread and return its result."""
        if self.on_app_thread():  # re-entrant call from app-thread code: run inline
            return fn(*args, **kwargs)
        if (report := self.busy_report()) is not None:
            raise HostBusy(report)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        control = AppCall(getattr(fn, "__name__", "a call"), progress=current_relay())

        def settle(setter: Callable[[Any], None], value: Any) -> None:
            if not future.done():
                setter(value)

        def job() -> None:
            if control.cancel_requested:
                return
            with self._lock:
                control.started_at = time.monotonic()
                self.running = control
                _local.call = control
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # handed back to the awaiting request
                    loop.call_soon_threadsafe(settle, future.set_exception, exc)
                else:
                    loop.call_soon_threadsafe(settle, future.set_result, result)
                finally:
                    _local.call = None
                    self.running = None

        self.app_thread.post(job)
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=WAIT_SLICE_S)
                if done:
                    return future.result()
                if (report := self.busy_report()) is not None:
                    if control.started_at is None:
                        control.cancel_requested = True  # never runs: the queue is stuck behind a wedge
                        raise HostBusy(report)
                    if self.running is control:  # this call is what does not stop: its caller hears so
                        future.cancel()  # whatever it ends with later is nobody's to read
                        raise HostBusy(report)
        except (asyncio.CancelledError, anyio.get_cancelled_exc_class()):
            control.request_stop()
            raise


WAIT_SLICE_S = 0.5
"""How often a call waiting for the application thread checks whether it is wedged."""


def _wall_time(monotonic_moment: float) -> str:
    """A monotonic moment as an ISO 8601 UTC wall-clock time (seconds)."""
    moment = time.time() - (time.monotonic() - monotonic_moment)
    return datetime.fromtimestamp(moment, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
