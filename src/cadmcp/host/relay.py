"""The progress relay of one request: from the call's code on the application thread to the
I/O loop, which sends it as MCP progress notifications (see :mod:`cadmcp.host.progress`).

Reports are coalesced: while one notification is being written, a newer report replaces the
pending one, so a tight loop cannot flood the connection, and reporting never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

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
