"""Keeping a link to an MCP peer that may go away: what the daemon does for each host it reaches,
and a foreign-host proxy for the server behind it.

- `retry_delay`: the wait before the next attempt after a run of failures (doubling to a limit).
- `ListChanges`: a session's `*/list_changed` notifications (2025-11-25 era) as a stream, so the
  link lists its peer again; bounded, and a burst collapses into the changes already waiting.
- `describe`: one line for the error that ended a link, through the SDK's single-exception groups.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

PENDING_CHANGES = 8
"""Change notifications waiting to be listed; more in a burst add nothing (one listing covers them)."""


def retry_delay(failures: int, first: float, most: float) -> float:
    """Seconds to wait after `failures` failed attempts in a row: `first`, doubling, at most `most`."""
    return min(most, first * 2 ** min(max(failures - 1, 0), 32))


def unwrap(exc: BaseException) -> BaseException:
    """The one error inside the single-exception groups the SDK's task groups add."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException, limit: int | None = None) -> str:
    """`Type: message` of the error that ended a link (clipped to `limit` characters)."""
    exc = unwrap(exc)
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if limit is None else text[:limit]


class ListChanges:
    """A session's list-change notifications: pass `on_message` as its ``message_handler`` and
    iterate `received` to list the peer again after each."""

    def __init__(self) -> None:
        self._send, self.received = anyio.create_memory_object_stream[str](PENDING_CHANGES)

    async def on_message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", "") or ""
        if method.endswith("list_changed"):
            with contextlib.suppress(anyio.WouldBlock):
                self._send.send_nowait(method)
