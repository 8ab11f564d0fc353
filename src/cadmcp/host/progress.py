"""Progress of the call running now: `report_progress(fraction, message)` from tool code.

A host tool's plain function runs on the application thread while the request it serves
lives on the I/O loop. `report_progress` hands the latest figure to the I/O loop, which sends
it as an MCP progress notification (`progress` = the fraction, `total` = 1) against the
caller's progress token; nothing is sent when the caller asked for no progress. Reports are
coalesced: while one notification is being written, a newer report replaces the pending one,
so a tight loop cannot flood the connection, and reporting never blocks the calling code.

Adapters call it from application-thread code (a long screenshot, a tessellation); scripts
run by `execute_python_code` get it as `progress(fraction, message)` in their namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

from cadmcp.wire.echo import echo

log = logging.getLogger("cadmcp.host")

Reporter = Callable[[float, float | None, str | None], Awaitable[None]]
"""How a request reports progress (the SDK session's `report_progress`)."""

MAX_MESSAGE_CHARS = 200
"""Longer progress messages are clipped."""


_request_relay: ContextVar[ProgressRelay | None] = ContextVar("cadmcp_progress_relay", default=None)


class ProgressRelay:
    """A thread-safe, coalescing bridge from one call's code to its request's reporter."""

    def __init__(self, reporter: Reporter, loop: asyncio.AbstractEventLoop) -> None:
        self._reporter = reporter
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: tuple[float, str | None] | None = None
        self._last: tuple[float, str | None] = (-1.0, None)
        self._sending = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None

    def report(self, fraction: float, message: str | None) -> None:
        """Queue a figure for sending; safe from any thread, never blocks."""
        with self._lock:
            if self._closed:
                return
            fraction = max(fraction, self._last[0])  # progress never goes backwards on the wire
            if (fraction, message) == (self._pending or self._last):
                return
            self._pending = (fraction, message)
            if self._sending:
                return
            self._sending = True
        try:
            self._loop.call_soon_threadsafe(self._start)
        except RuntimeError:  # the loop is closing: nobody is listening any more
            with self._lock:
                self._sending = False

    def close(self) -> None:
        """The call is over: later reports are dropped."""
        with self._lock:
            self._closed = True

    def _start(self) -> None:
        self._task = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        while True:
            with self._lock:
                item, self._pending = self._pending, None
                if item is None or self._closed:
                    self._sending = False
                    return
                self._last = item
            try:
                await self._reporter(item[0], 1.0, item[1])
            except Exception:  # a closed stream must not break the call that reports
                log.debug("progress notification not sent", exc_info=True)


@contextlib.contextmanager
def relaying(reporter: Reporter) -> Iterator[ProgressRelay]:
    """While a request is handled (on the I/O loop), route its calls' progress to `reporter`."""
    relay = ProgressRelay(reporter, asyncio.get_running_loop())
    token = _request_relay.set(relay)
    try:
        yield relay
    finally:
        _request_relay.reset(token)
        relay.close()


def current_relay() -> ProgressRelay | None:
    """The relay of the request the calling I/O-loop code serves (None outside a request)."""
    return _request_relay.get()


def report_progress(fraction: float, message: str | None = None) -> None:
    """Say how far the current call is: `fraction` from 0 to 1, with a short `message`.

    Call it from tool code (on the application thread, or async code serving the request);
    outside a call it does nothing. Values outside 0..1 are clamped and never go backwards.
    Raises `AppCallCancelled` once the call was cancelled, so a loop that reports also stops.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise TypeError(
            "progress fraction must be a number from 0 to 1, like progress(0.5, 'half way') "
            f"(got {echo(fraction, 40)})"
        )
    if message is not None and not isinstance(message, str):
        raise TypeError(f"progress message must be text or None (got {type(message).__name__})")
    from cadmcp.host.appthread import AppCallCancelled, current_call

    call = current_call()
    if call is not None and call.cancel_requested:  # every loop that reports can be cancelled
        raise AppCallCancelled("The call was stopped while it ran (cancelled, or the host is stopping).")
    if math.isnan(fraction):
        return
    relay = call.progress if call is not None else _request_relay.get()
    if relay is None:
        return
    if message is not None and len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    relay.report(min(1.0, max(0.0, float(fraction))), message)
