"""The proxy's fast lane: plain tool calls relayed beside the MCP sessions, line for line.

A call to a foreign host crosses two processes of ours (daemon, then proxy) where a call to one
of cadmcp's own hosts crosses one. Through the SDK on both of the proxy's sides (its server for
the daemon, its client for the server), that second hop cost more than the first. So the proxy
answers a plain `tools/call` itself, at the line level, and keeps the SDK for everything else:

- `ServerChannel` sits on the foreign server's stdio pipe before the proxy's client session. The
  proxy's calls go out on the pipe with ids of their own; their answers are taken off it as
  lines and their progress as messages, back to the waiting call; every other message goes on to
  the session (so the server's questions still reach `cadmcp.foreign.rounds`, listing and probes
  still work).
- `FastLane.intercept` is the per-connection hook of the proxy's endpoint
  (`cadmcp.wire.sockets.message_streams`): it takes a 2026-era `tools/call` whose tool the proxy
  serves, runs it through the same `ForeignHost.call` the SDK handler runs, and writes the answer
  shaped as the SDK shapes it for that protocol version, with the host's call-log line. Anything
  else (the first request of a connection, listing, reads, a 2025-era connection, a malformed
  request) goes to the SDK's server as before, which also gives the errors their wording.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import anyio.abc
import mcp_types as types
from anyio.abc import ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import SessionMessage
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from cadmcp.foreign.rounds import Progress
from cadmcp.host.runtime import check_result_size
from cadmcp.wire.calllog import CallLogger, error_of, outcome_of
from cadmcp.wire.jsonwire import dumps
from cadmcp.wire.passthrough import SERVER_INFO_META_KEY, without_server_info
from cadmcp.wire.sockets import LARGE_LINE_BYTES, Reply

log = logging.getLogger("cadmcp.foreign")

PROTOCOL_VERSION_META = types.PROTOCOL_VERSION_META_KEY
CANCEL_WRITE_TIMEOUT = 2.0
"""Seconds the server is given to take a call's cancellation before the call gives up on telling it."""
SESSION_BUFFER = 8
"""Messages for the session that may wait while it is busy, before the channel waits for it."""
PROGRESS_WAIT = 0.5
"""Seconds a progress note may wait for its caller's connection; a slower one loses the note, so a
caller that stops reading never holds up the answers of the others' calls."""
_CLOSED = object()


class ServerGone(ConnectionError):
    """The foreign server's transport ended while a call waited for its answer."""


class NotSent(ServerGone):
    """The foreign server's transport had ended before the call was sent: nothing of it ran."""


class ServerChannel:
    """The proxy's own requests on a stdio server's pipe, beside its client session.

    It is the pipe's `Intercept` (`cadmcp.wire.sockets.message_streams`): each line the server
    writes is offered to it before it is parsed. It takes the answers to its calls (read with the
    standard JSON parser, not validated into the SDK's models) and the lines that are no JSON at
    all; `run` passes the rest on to the session, less the progress of its calls and the answers
    too long to be taken at the line level (parsed on a worker thread)."""

    def __init__(self) -> None:
        self._read: MemoryObjectReceiveStream[SessionMessage | Exception] | None = None
        self._stdin: ByteSendStream | None = None
        self._envelope: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
        self._to_session, self.session_read = anyio.create_memory_object_stream[SessionMessage | Exception](
            SESSION_BUFFER
        )
        self._pending: dict[str, MemoryObjectSendStream[Any]] = {}
        self._progress: dict[str, Progress] = {}
        self._ids = itertools.count(1)
        self.closed = False
        """No more calls go out: the pipe ended or the proxy is done with it."""
        self.ended = False
        """The server's side ended the pipe (it exited, or closed its stdout)."""
        self.on_server_end: Callable[[], None] | None = None
        """Called once the server's stdout ends (it exited or closed it), before the session notices."""
        self.not_protocol = 0
        """Lines of the server's stdout that were not MCP messages (a server logging to stdout)."""
        self.first_not_protocol = ""

    def intercept(self, reply: Reply) -> ServerChannel:
        """The pipe's intercept (it writes to the server's stdin itself, not through ``reply``)."""
        return self

    def attach(
        self, read: MemoryObjectReceiveStream[SessionMessage | Exception], stdin: ByteSendStream
    ) -> MemoryObjectReceiveStream[SessionMessage | Exception]:
        """Read what the pipe passes on (the session reads what this returns instead), and write
        calls to the server's ``stdin`` directly: a write that fails says the call never reached
        the server."""
        self._read = read
        self._stdin = stdin
        return self.session_read

    def bind(self, envelope: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        """Frame requests as the connected session does (its protocol era's envelope)."""
        self._envelope = envelope

    def take(self, line: bytes) -> bool:
        """Take the answer to one of this channel's calls, or a line that is no JSON object."""
        if not line[:64].lstrip().startswith(b"{"):
            self._note_not_protocol(line[:400].decode(errors="replace"))
            return True
        if len(line) > LARGE_LINE_BYTES or b'"cadmcp-' not in line:
            return False  # parsed off the event loop (and taken by `run`), or the session's
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return False  # the session's parser words what is wrong
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "method" in message:
            return False  # a request of the server's, or no JSON-RPC (its logging): the session's reader
        request_id = message.get("id")
        if not isinstance(request_id, str):
            return False
        waiter = self._pending.pop(request_id, None)
        if waiter is None:
            return request_id.startswith("cadmcp-")  # the answer to a call given up meanwhile
        with contextlib.suppress(anyio.BrokenResourceError, anyio.WouldBlock):  # given up meanwhile
            waiter.send_nowait(_answered(message))
        return True

    def close(self) -> None:
        """The pipe closed (`run` fails the calls still waiting)."""

    async def run(self) -> None:
        """Deliver what the server sends until its transport ends; calls still waiting then fail."""
        assert self._read is not None, "attach() first"
        try:
            async with self._to_session:
                async for item in self._read:
                    if isinstance(item, SessionMessage) and await self._took(item.message):
                        continue
                    if isinstance(item, ValueError):  # a line that is no MCP message: counted, not passed
                        self._note_not_protocol(getattr(item, "line_start", "") or str(item))
                        continue
                    await self._to_session.send(item)
            self.closed = self.ended = True  # the server's side ended (not the proxy's own doing)
            if self.on_server_end is not None:
                self.on_server_end()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session stopped reading: the connection is over
        finally:
            self.closed = True
            for waiter in list(self._pending.values()):
                with contextlib.suppress(anyio.BrokenResourceError, anyio.WouldBlock):
                    waiter.send_nowait(_CLOSED)

    def _note_not_protocol(self, text: str) -> None:
        self.not_protocol += 1
        if self.not_protocol == 1:
            self.first_not_protocol = text.strip()[:200]
            log.warning("the server wrote a line that is no MCP message: %r", self.first_not_protocol)

    def not_protocol_note(self) -> str:
        """What a reason for the server being down adds when its stdout carried other text."""
        if not self.not_protocol:
            return ""
        return (
            f"its stdout had {self.not_protocol} line(s) that are no MCP messages, the first "
            f"{self.first_not_protocol!r} (a stdio MCP server must write only protocol messages to "
            "stdout; its logging belongs on stderr)"
        )

    async def _took(self, message: Any) -> bool:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            waiter = self._pending.pop(message.id, None) if isinstance(message.id, str) else None
            if waiter is None:
                return False
            answered = message.result if isinstance(message, types.JSONRPCResponse) else message.error
            with contextlib.suppress(anyio.BrokenResourceError, anyio.WouldBlock):  # given up meanwhile
                waiter.send_nowait(answered)
            return True
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/progress":
            params = message.params or {}
            token = params.get("progressToken")
            reporter = self._progress.get(token) if isinstance(token, str) else None
            if reporter is None:
                return False
            progress, total = params.get("progress"), params.get("total")
            if isinstance(progress, int | float) and not isinstance(progress, bool):
                message_text = params.get("message")
                with anyio.move_on_after(PROGRESS_WAIT):
                    await reporter(
                        float(progress),
                        float(total)
                        if isinstance(total, int | float) and not isinstance(total, bool)
                        else None,
                        message_text if isinstance(message_text, str) else None,
                    )
            return True
        return False

    async def call(
        self, params: dict[str, Any], *, on_progress: Progress | None, timeout: float
    ) -> dict[str, Any]:
        """One `tools/call` to the server; its result as it arrived (the serverInfo stamp removed);
        with ``on_progress``, the server is asked for its progress and ``on_progress`` hears it.

        TimeoutError after ``timeout`` seconds; cancelled or timed out, the server is told to stop.
        MCPError for the server's error answer, ServerGone when its transport ended meanwhile."""
        if self.closed or self._envelope is None or self._stdin is None:
            raise NotSent("the server's connection is closed")
        request_id = f"cadmcp-{next(self._ids)}"
        data = self._envelope("tools/call", params)
        out = data["params"]
        if on_progress is not None:
            out["_meta"] = {**(out.get("_meta") or {}), "progressToken": request_id}
            self._progress[request_id] = on_progress
        send, receive = anyio.create_memory_object_stream[Any](1)
        self._pending[request_id] = send
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": out}
        try:
            with anyio.fail_after(timeout):
                await self._send(request_id, request)
                outcome = await receive.receive()
        except BaseException:
            if self._pending.pop(request_id, None) is not None and not self.closed:
                await self._cancel(request_id)
            raise
        finally:
            self._progress.pop(request_id, None)
        if outcome is _CLOSED:
            raise ServerGone("the server's connection closed during the call")
        if isinstance(outcome, types.ErrorData):
            raise MCPError.from_error_data(outcome)
        return without_server_info(outcome)

    async def _send(self, request_id: str, message: dict[str, Any]) -> None:
        assert self._stdin is not None
        try:  # a whole line per write: the session's messages, written beside, never interleave
            await self._stdin.send(_encoded(message) + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self._pending.pop(request_id, None)
            raise NotSent("the server's stdin is closed (it ended)") from None

    async def _cancel(self, request_id: str) -> None:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the caller gave up on the call"},
        }
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(CANCEL_WRITE_TIMEOUT),
            contextlib.suppress(NotSent),  # the server ended: nothing to stop there
        ):
            await self._send(request_id, note)


def _answered(message: dict[str, Any]) -> dict[str, Any] | types.ErrorData:
    """A call's outcome from the server's answer: its result, or the error it answered or is."""
    result, error = message.get("result"), message.get("error")
    if isinstance(result, dict):
        return result
    if "result" not in message and isinstance(error, dict):
        try:
            return types.ErrorData.model_validate(error)
        except ValidationError:
            what = "its error is malformed"
    elif "result" in message:
        what = f"its result is {'null' if result is None else type(result).__name__}, not an object"
    else:
        what = "it has neither a result nor an error"
    return types.ErrorData(
        code=types.INTERNAL_ERROR,
        message=f"the server's answer is no JSON-RPC response ({what}); tell the server's author",
        data={"type": "invalid_result"},
    )


def _encoded(message: dict[str, Any]) -> bytes:
    try:
        return dumps(message).encode()
    except UnicodeEncodeError:  # a lone surrogate escape in the server's text: keep it escaped
        return json.dumps(message, separators=(",", ":")).encode()


class LaneHost(Protocol):
    """What the fast lane asks of the proxy's host (`cadmcp.foreign.proxy.ForeignHost`)."""

    @property
    def task_group(self) -> anyio.abc.TaskGroup | None: ...

    def serves_tool(self, name: str) -> bool: ...

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        input_responses: dict[str, Any] | None,
        state: str | None,
        reporter: Progress | None,
    ) -> Any: ...


class FastLane:
    """The proxy endpoint's hook: per connection, a `ConnectionLane`."""

    def __init__(self, host: LaneHost, server_info: Callable[[], dict[str, Any]]) -> None:
        self.host = host
        self.server_info = server_info
        """The proxy's own serverInfo stamp (what its SDK server puts on 2026-era results)."""
        self.logger = CallLogger()

    def intercept(self, reply: Reply) -> ConnectionLane:
        return ConnectionLane(self, reply)


class ConnectionLane:
    """What the fast lane took on one connection to the proxy, and how it answers."""

    def __init__(self, lane: FastLane, reply: Reply) -> None:
        self.lane = lane
        self.reply = reply
        self.era: str | None = None
        """`modern` or `legacy` once the connection's first request said (the SDK's rule)."""
        self.calls: dict[Any, anyio.CancelScope] = {}

    def take(self, line: bytes) -> bool:
        """True when this line is a call the fast lane answers (or the cancellation of one)."""
        if self.era == "legacy" or (
            self.era is not None and b'"tools/call"' not in line and b"notifications/cancelled" not in line
        ):
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict):
            return False
        method, params = message.get("method"), message.get("params")
        if self.era is None:
            if "id" in message and isinstance(method, str):  # the first request decides the era
                meta = params.get("_meta") if isinstance(params, dict) else None
                modern = method != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_META in meta
                self.era = "modern" if modern else "legacy"
            return False
        if method == "notifications/cancelled" and isinstance(params, dict):
            scope = self.calls.get(_key(params.get("requestId")))
            if scope is None:
                return False
            scope.cancel()
            return True
        if method != "tools/call" or not isinstance(params, dict) or "id" not in message:
            return False
        request_id = message["id"]
        version = _plain_call_version(params)
        tg = self.lane.host.task_group
        if (
            version is None
            or tg is None
            or isinstance(request_id, bool)
            or not isinstance(request_id, str | int)
            or _key(request_id) in self.calls
            or not self.lane.host.serves_tool(params["name"])
        ):
            return False  # the SDK's server answers it, with its own wording for what is wrong
        scope = anyio.CancelScope()
        self.calls[_key(request_id)] = scope
        tg.start_soon(self._serve, request_id, params, version, scope)
        return True

    def close(self) -> None:
        """The connection closed: its calls are given up (the server is told to stop each)."""
        for scope in self.calls.values():
            scope.cancel()

    async def _serve(
        self, request_id: Any, params: dict[str, Any], version: str, scope: anyio.CancelScope
    ) -> None:
        name, arguments = params["name"], params.get("arguments") or {}
        token = _progress_token(params)
        started = time.perf_counter()
        fields: dict[str, Any] = {"target": name}
        result: dict[str, Any] | None = None
        error: BaseException | None = None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            note: dict[str, Any] = {"progressToken": token, "progress": value}
            if total is not None:
                note["total"] = total
            if message is not None:
                note["message"] = message
            await self.reply(_encoded({"jsonrpc": "2.0", "method": "notifications/progress", "params": note}))

        try:
            with scope:
                try:
                    answer = await self.lane.host.call(
                        name,
                        arguments,
                        input_responses=params.get("inputResponses"),
                        state=params.get("requestState"),
                        reporter=progress if token is not None else None,
                    )
                    result = self._shaped(answer, version)
                    line = {"jsonrpc": "2.0", "id": request_id, "result": result}
                except Exception as exc:
                    error = exc
                    data = handler_exception_to_error_data(exc)
                    if data is None:
                        log.exception("a fast-lane call of %s failed", name)
                        data = types.ErrorData(code=types.INTERNAL_ERROR, message="Internal server error")
                    line = {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": data.model_dump(by_alias=True, mode="json", exclude_none=True),
                    }
                await self.reply(_encoded(line))
        finally:
            self.calls.pop(_key(request_id), None)
            if scope.cancelled_caught or (scope.cancel_called and result is None and error is None):
                self.lane.logger.record(
                    "tools/call",
                    "cancelled",
                    fields,
                    started,
                    arguments,
                    error={"type": "Cancelled", "message": "the caller gave up on the call"},
                )
            elif error is not None:
                outcome = "timeout" if isinstance(error, TimeoutError) else "error"
                self.lane.logger.record(
                    "tools/call", outcome, fields, started, arguments, error=error_of(error)
                )
            elif result is not None:
                self.lane.logger.record(
                    "tools/call", outcome_of(result), fields, started, arguments, result=result
                )

    def _shaped(self, answer: Any, version: str) -> dict[str, Any]:
        """The answer as the SDK's server puts it on this protocol version's wire."""
        if isinstance(answer, BaseModel):
            answer = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        check_result_size(answer)
        if "resultType" not in answer:
            answer = {**answer, "resultType": "complete"}
        try:
            shaped = serialize_server_result("tools/call", version, answer)
        except ValidationError:
            log.exception("the server's result of a call is not a valid tool result")
            raise MCPError(code=types.INTERNAL_ERROR, message="Handler returned an invalid result") from None
        meta = shaped.get("_meta")
        if meta is None:
            shaped["_meta"] = {SERVER_INFO_META_KEY: self.lane.server_info()}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            shaped["_meta"] = {**meta, SERVER_INFO_META_KEY: self.lane.server_info()}
        return shaped


def _key(request_id: Any) -> Any:
    """A request id as the calls are keyed (JSON-RPC ids 7 and "7" are not the same)."""
    return (type(request_id).__name__, request_id)


def _progress_token(params: dict[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def _plain_call_version(params: dict[str, Any]) -> str | None:
    """The protocol version of a well-formed 2026-era `tools/call` the fast lane may answer, else
    None: a task-augmented call, or one whose fields the SDK must first refuse."""
    meta = params.get("_meta")
    version = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
    if version not in MODERN_PROTOCOL_VERSIONS or "task" in params:
        return None
    if not isinstance(params.get("name"), str):
        return None
    if params.get("arguments") is not None and not isinstance(params.get("arguments"), dict):
        return None
    state, responses = params.get("requestState"), params.get("inputResponses")
    if state is not None and not isinstance(state, str):
        return None
    if responses is not None and not isinstance(responses, dict):
        return None
    return str(version)
