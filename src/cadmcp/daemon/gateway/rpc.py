"""Requests between daemons over NATS: one inbox per daemon, acknowledged and chunked replies.

The caller publishes a request with a reply subject in its own inbox and reads frames
from it (`frames.py`). That tells apart what a plain request/reply cannot: nobody serves
the machine (NATS answers "no responders"), the machine never accepted the call (nothing
ran), and the machine went silent or the call timed out after it had started.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import time
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.shared.dispatcher import ProgressFnT

from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.connection import Connection
from cadmcp.wire.sockets import LARGE_LINE_BYTES

MAX_PENDING_FRAMES = 4096
ANSWER_ROOM = 128
"""Frames of a request's queue that progress reports never take (an answer's chunks need them)."""


class RequestFailed(Exception):
    """A request that got no answer; `started` says whether the machine had begun running it."""

    def __init__(self, reason: str, message: str, *, started: bool) -> None:
        super().__init__(message)
        self.reason = reason  # no_responders | not_started | silent | timeout | disconnected | too_large
        self.message = message
        self.started = started


@dataclass(frozen=True)
class Deadlines:
    """How long a request waits: for the first frame, between frames once running, in all."""

    accept: float = 5.0
    silence: float = 15.0
    total: float = 600.0


class Pending:
    """One request waiting for its answer. Acks and keep-alives only move its clocks (they do not
    wake the waiting task: a fast call costs one wake-up, for its answer); answers and status
    messages are queued for it."""

    def __init__(self, deadlines: Deadlines, on_progress: ProgressFnT | None = None) -> None:
        self.deadlines = deadlines
        self.on_progress = on_progress
        self.started = False
        now = time.monotonic()
        self.end = now + deadlines.total
        self.quiet_until = now + deadlines.accept
        self.send, self.receive = anyio.create_memory_object_stream[Any](MAX_PENDING_FRAMES)

    async def feed(self, msg: Any) -> None:
        """Take one message arriving on this request's reply subject."""
        kind = (msg.headers or {}).get(frames.FRAME)
        if kind in (frames.ACK, frames.ALIVE, frames.PROGRESS):
            self.started = True
            self.quiet_until = time.monotonic() + self.deadlines.silence
            # relayed by the waiting task, so a slow client never holds up replies to other requests;
            # dropped rather than taking the room the answer's chunks need
            room = self.send.statistics().current_buffer_used < MAX_PENDING_FRAMES - ANSWER_ROOM
            if kind == frames.PROGRESS and self.on_progress is not None and room:
                self._queue(msg)
            return
        self._queue(msg)

    def _queue(self, msg: Any) -> None:
        with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.send.send_nowait(msg)

    async def _relay_progress(self, data: bytes) -> None:
        try:
            report = frames.decode(data)
            progress = float(report["progress"])
        except (KeyError, TypeError, ValueError):
            return  # a garbled report is dropped, the call goes on
        total = report.get("total")
        message = report.get("message")
        assert self.on_progress is not None
        with contextlib.suppress(Exception), anyio.move_on_after(1.0):  # a stuck client stream
            await self.on_progress(
                progress,
                float(total) if isinstance(total, int | float) else None,
                message[:200] if isinstance(message, str) else None,
            )

    def close(self) -> None:
        self.send.close()
        self.receive.close()

    async def answer(self) -> dict[str, Any]:
        """The final answer, joined from its chunks (RequestFailed when none comes in time)."""
        parts: dict[int, bytes] = {}
        size = 0
        while True:
            msg = None
            with anyio.move_on_after(max(0.0, min(self.end, self.quiet_until) - time.monotonic())):
                msg = await self.receive.receive()
            if msg is None:
                self._give_up()
                continue  # an ack or keep-alive came meanwhile
            headers = msg.headers or {}
            if headers.get(frames.FRAME) == frames.PROGRESS:
                await self._relay_progress(msg.data)
                continue
            if headers.get("Status") == "503":
                raise RequestFailed(
                    "no_responders", "Nothing serves that machine on the gateway now.", started=False
                )
            index, count = frames.chunk_position(headers)
            parts[index] = bytes(msg.data)
            size += len(msg.data)
            if size > frames.MAX_ANSWER_BYTES:
                raise RequestFailed(
                    "too_large", f"The answer is over {frames.MAX_ANSWER_BYTES} bytes.", started=self.started
                )
            if len(parts) >= count:
                try:
                    joined = b"".join(parts[i] for i in range(1, count + 1))
                    if len(joined) > LARGE_LINE_BYTES:  # megabytes of JSON: parse off the loop
                        return await anyio.to_thread.run_sync(frames.decode, joined)
                    return frames.decode(joined)
                except (KeyError, ValueError):
                    raise RequestFailed(
                        "garbled", "The machine's answer could not be read.", started=self.started
                    ) from None
            self.quiet_until = time.monotonic() + self.deadlines.silence

    def _give_up(self) -> None:
        """After a wait ran out: fail with the reason, unless an ack or keep-alive moved the clock."""
        now = time.monotonic()
        if now >= self.end:
            raise RequestFailed(
                "timeout", f"No answer within {self.deadlines.total:g} s.", started=self.started
            )
        if now < self.quiet_until:
            return
        if self.started:
            raise RequestFailed(
                "silent", f"The machine stopped answering for {self.deadlines.silence:g} s.", started=True
            )
        raise RequestFailed(
            "not_started",
            f"The machine did not accept the request within {self.deadlines.accept:g} s.",
            started=False,
        )


class Inbox:
    """This daemon's reply subjects: one subscription, many concurrent requests."""

    def __init__(self, connection: Connection, root: str) -> None:
        self.connection = connection
        self.root = root
        self._pending: dict[str, Pending] = {}
        self._counter = itertools.count(1)
        self._sub: Any = None

    async def start(self) -> None:
        self._sub = await self.connection.client.subscribe(f"{self.root}.*", cb=self._on_message)

    async def _on_message(self, msg: Any) -> None:
        pending = self._pending.get(msg.subject.rsplit(".", 1)[-1])
        if pending is not None:
            await pending.feed(msg)

    async def request(
        self,
        subject: str,
        body: dict[str, Any],
        deadlines: Deadlines,
        on_progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """Send `body` and wait for the final answer (RequestFailed when there is none); progress
        the serving machine relays goes to `on_progress`."""
        if not self.connection.connected:
            raise RequestFailed("disconnected", self.connection.describe_down(), started=False)
        client = self.connection.client
        payload = frames.encode(body)
        if len(payload) > self.connection.max_payload - frames.HEADROOM:
            raise RequestFailed(
                "too_large",
                f"The request is {len(payload)} bytes, over the gateway's limit of "
                f"{self.connection.max_payload - frames.HEADROOM} bytes; send less (e.g. smaller arguments).",
                started=False,
            )
        token = f"{next(self._counter)}"
        pending = self._pending[token] = Pending(deadlines, on_progress)
        try:
            try:
                await client.publish(subject, payload, reply=f"{self.root}.{token}")
            except Exception as exc:
                raise RequestFailed(
                    "disconnected", f"Could not send ({type(exc).__name__}).", started=False
                ) from None
            return await pending.answer()
        finally:
            self._pending.pop(token, None)
            pending.close()


class Reply:
    """The serving side of one request: acknowledge, keep alive, answer (chunked when large)."""

    def __init__(self, connection: Connection, subject: str | None) -> None:
        self.connection = connection
        self.subject = subject

    async def _send(self, payload: bytes, headers: dict[str, str]) -> None:
        if not self.subject:
            return
        with contextlib.suppress(Exception):  # the caller may be gone; nothing to tell anyone
            await self.connection.client.publish(self.subject, payload, headers=headers)

    async def ack(self) -> None:
        await self._send(b"", {frames.FRAME: frames.ACK})

    async def alive(self) -> None:
        await self._send(b"", {frames.FRAME: frames.ALIVE})

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Relay a host's progress report to the caller (it also keeps the call alive there)."""
        report = {"progress": progress, "total": total, "message": message}
        await self._send(frames.encode(report), {frames.FRAME: frames.PROGRESS})

    async def final(self, body: dict[str, Any]) -> None:
        payload = frames.encode(body)
        if len(payload) > frames.MAX_ANSWER_BYTES:
            payload = frames.encode(
                {
                    "error": {
                        "type": "result_too_large",
                        "message": f"The answer is {len(payload)} bytes, over the gateway's "
                        f"{frames.MAX_ANSWER_BYTES}-byte limit; ask for less (a smaller image, fewer items).",
                        "bytes": len(payload),
                    }
                }
            )
        for headers, part in frames.chunks(payload, self.connection.max_payload):
            await self._send(part, headers)


def new_nonce() -> str:
    """A random subject token for this daemon's inbox."""
    return secrets.token_hex(6)
