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
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import anyio

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
        self._stopped = threading.Event()
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
        while not self._stopped.is_set():
            self.pump(timeout=poll)

    def stop(self) -> None:
        self._stopped.set()
        self._jobs.put(None)


class CallbackAppThread:
    """Adapts an integrator's `post(fn)` (a UI-thread hook) to the `AppThread` interface."""

    def __init__(self, post: Callable[[Callable[[], None]], Any]) -> None:
        self._post = post

    def post(self, job: Callable[[], None]) -> None:
        self._post(job)


class AppCallCancelled(Exception):
    """The caller went away before the application thread picked the call up."""


class Dispatcher:
    """Serialises calls onto an `AppThread` and awaits their results from the I/O loop.

    One call runs at a time even if the integrator's `post` could run jobs concurrently.
    A call still waiting in the queue when its request is cancelled never runs.
    """

    def __init__(self, app_thread: AppThread) -> None:
        self.app_thread = app_thread
        self._lock = threading.Lock()
        self._local = threading.local()

    def on_app_thread(self) -> bool:
        """Whether the current thread is running an application-thread call right now."""
        return getattr(self._local, "active", False)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` on the application thread and return its result."""
        if self.on_app_thread():  # re-entrant call from app-thread code: run inline
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        cancelled = threading.Event()

        def settle(setter: Callable[[Any], None], value: Any) -> None:
            if not future.done():
                setter(value)

        def job() -> None:
            if cancelled.is_set():
                return
            with self._lock:
                self._local.active = True
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # handed back to the awaiting request
                    loop.call_soon_threadsafe(settle, future.set_exception, exc)
                else:
                    loop.call_soon_threadsafe(settle, future.set_result, result)
                finally:
                    self._local.active = False

        self.app_thread.post(job)
        try:
            return await future
        except (asyncio.CancelledError, anyio.get_cancelled_exc_class()):
            cancelled.set()
            raise
