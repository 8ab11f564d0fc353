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
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.connection import Connection

MAX_PENDING_FRAMES = 4096


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


class Inbox:
    """This daemon's reply subjects: one subscription, many concurrent requests."""

    def __init__(self, connection: Connection, root: str) -> None:
        self.connection = connection
        self.root = root
        self._queues: dict[str, MemoryObjectSendStream[Any]] = {}
        self._counter = itertools.count(1)
        self._sub: Any = None

    async def start(self) -> None:
        self._sub = await self.connection.client.subscribe(f"{self.root}.*", cb=self._on_message)

    async def _on_message(self, msg: Any) -> None:
        queue = self._queues.get(msg.subject.rsplit(".", 1)[-1])
        if queue is not None:
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                queue.send_nowait(msg)

    @contextlib.contextmanager
    def open(self) -> Any:
        """(reply subject, frame stream) for one request, closed on exit."""
        token = f"{next(self._counter)}"
        send, receive = anyio.create_memory_object_stream[Any](MAX_PENDING_FRAMES)
        self._queues[token] = send
        try:
            yield f"{self.root}.{token}", receive
        finally:
            self._queues.pop(token, None)
            send.close()
            receive.close()

    async def request(self, subject: str, body: dict[str, Any], deadlines: Deadlines) -> dict[str, Any]:
        """Send `body` and wait for the final answer (RequestFailed when there is none)."""
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
        with self.open() as (reply, stream):
            try:
                await client.publish(subject, payload, reply=reply)
            except Exception as exc:
                raise RequestFailed(
                    "disconnected", f"Could not send ({type(exc).__name__}).", started=False
                ) from None
            return await _collect(stream, deadlines)


async def _collect(stream: MemoryObjectReceiveStream[Any], deadlines: Deadlines) -> dict[str, Any]:
    started = False
    parts: dict[int, bytes] = {}
    size = 0
    now = time.monotonic()
    end = now + deadlines.total
    quiet_until = now + deadlines.accept
    while True:
        now = time.monotonic()
        msg = None
        with anyio.move_on_after(max(0.0, min(end, quiet_until) - now)):
            msg = await stream.receive()
        if msg is None:
            if time.monotonic() >= end:
                raise RequestFailed("timeout", f"No answer within {deadlines.total:g} s.", started=started)
            if started:
                raise RequestFailed(
                    "silent", f"The machine stopped answering for {deadlines.silence:g} s.", started=True
                )
            raise RequestFailed(
                "not_started",
                f"The machine did not accept the request within {deadlines.accept:g} s.",
                started=False,
            )
        headers = msg.headers or {}
        if headers.get("Status") == "503":
            raise RequestFailed(
                "no_responders", "Nothing serves that machine on the gateway now.", started=False
            )
        kind = headers.get(frames.FRAME, frames.FINAL)
        if kind in (frames.ACK, frames.ALIVE):
            started = True
            quiet_until = time.monotonic() + deadlines.silence
            continue
        index, count = frames.chunk_position(headers)
        parts[index] = bytes(msg.data)
        size += len(msg.data)
        if size > frames.MAX_ANSWER_BYTES:
            raise RequestFailed(
                "too_large", f"The answer is over {frames.MAX_ANSWER_BYTES} bytes.", started=started
            )
        if len(parts) >= count:
            try:
                return frames.decode(b"".join(parts[i] for i in range(1, count + 1)))
            except (KeyError, ValueError):
                raise RequestFailed(
                    "garbled", "The machine's answer could not be read.", started=started
                ) from None
        quiet_until = time.monotonic() + deadlines.silence


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

    async def keep_alive(self, every: float) -> None:
        """Send `alive` every `every` seconds until cancelled."""
        while True:
            await anyio.sleep(every)
            await self.alive()


def new_nonce() -> str:
    """A random subject token for this daemon's inbox."""
    return secrets.token_hex(6)
