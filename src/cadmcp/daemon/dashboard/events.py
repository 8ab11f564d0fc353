"""Live updates for open pages: one bounded queue per browser, fed without ever waiting.

`publish` hands an event to every subscriber with `send_nowait`; a browser that reads too
slowly (or went away without closing) loses events instead of holding the daemon, and is
told to reload its state (`resync`) once it reads again. Events go out as server-sent events.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

QUEUE_EVENTS = 64
"""Events one browser may have waiting; past it, events for it are dropped."""
MAX_SUBSCRIBERS = 8
HEARTBEAT_SECONDS = 15.0


@dataclass
class _Subscriber:
    send: MemoryObjectSendStream[str]
    dropped: int = 0


class TooManyPages(RuntimeError):
    """More pages are open than the dashboard serves live updates to."""


class EventHub:
    """Fan-out of dashboard events to the open pages (bounded, never blocking)."""

    def __init__(self) -> None:
        self._subscribers: list[_Subscriber] = []
        self.dropped = 0
        """Events dropped for slow pages since start (shown in the page, and in the bench)."""

    @property
    def watching(self) -> int:
        return len(self._subscribers)

    def publish(self, kind: str, data: Any) -> None:
        """Queue `data` as an event of `kind` for every page; never waits."""
        if not self._subscribers:
            return
        frame = f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n"
        for sub in list(self._subscribers):
            if sub.dropped:  # it missed some: it must reload before further events make sense
                try:
                    sub.send.send_nowait("event: resync\ndata: {}\n\n")
                except anyio.WouldBlock:
                    sub.dropped += 1
                    self.dropped += 1
                    continue
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._remove(sub)
                    continue
                sub.dropped = 0
            try:
                sub.send.send_nowait(frame)
            except anyio.WouldBlock:
                sub.dropped += 1
                self.dropped += 1
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._remove(sub)

    def _remove(self, sub: _Subscriber) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def subscribe(self) -> AsyncIterator[str]:
        """The event stream of one page (SSE frames, with a heartbeat comment now and then)."""
        if len(self._subscribers) >= MAX_SUBSCRIBERS:
            raise TooManyPages(f"at most {MAX_SUBSCRIBERS} dashboard pages get live updates at once")
        send, receive = anyio.create_memory_object_stream[str](QUEUE_EVENTS)
        sub = _Subscriber(send)
        self._subscribers.append(sub)
        return self._stream(sub, receive)

    async def _stream(self, sub: _Subscriber, receive: MemoryObjectReceiveStream[str]) -> AsyncIterator[str]:
        try:
            yield "retry: 2000\nevent: hello\ndata: {}\n\n"
            async with receive:
                while True:
                    with anyio.move_on_after(HEARTBEAT_SECONDS) as scope:
                        frame = await receive.receive()
                    yield ": beat\n\n" if scope.cancelled_caught else frame
        finally:
            self._remove(sub)
            sub.send.close()
