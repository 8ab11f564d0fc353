"""Reading one inbound JSON-RPC line: the message, or why not, addressed to the request's id.

The MCP SDK's own transports drop a line its parser refuses (too deeply nested, a lone
surrogate escape, a number out of range), so the caller waits for an answer that never
comes. Here a refused line that still names a request id gets a JSON-RPC error with that
id and a message that says what to change; nothing is silently lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

import mcp_types as types
from mcp.shared.message import SessionMessage

from cadmcp.wire.jsonwire import dumps

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest request line a daemon or host accepts; longer lines are skipped and answered."""
ID_SCAN_BYTES = 64 * 1024
"""How much of a refused line is searched for its request id."""

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')
_TAIL_KEY = re.compile(rb'"(?:id|method)"\s*:')
_VALUE = re.compile(rb'\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


@dataclass(frozen=True)
class Refusal:
    """A line that is not a usable message. `answer` is the error it makes: sent back to whoever
    wrote the line (`to_peer`: its request is answered so) or given to this side's session (the
    answer it waits for failed); None when nobody waits (`line_start` then says what it was)."""

    reason: str
    answer: SessionMessage | None
    to_peer: bool = True
    line_start: str = ""


class NotAMessage(ValueError):
    """What a session hears of an inbound line that is no JSON-RPC message (a peer's logging)."""

    def __init__(self, reason: str, line_start: str) -> None:
        super().__init__(reason)
        self.line_start = line_start
        """The line's first characters, as written."""


def decode(line: bytes, role: Literal["server", "client"] = "server") -> SessionMessage | Refusal:
    """Parse one line into a message, or a refusal: for a server (the line is a client's request)
    the error answering it; for a client (the line is a server's answer, request or note), the
    error failing the request it answers, or answering the server's request."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # malformed input is answered, never fatal
        if role == "server":
            return refuse(line, _explain(str(exc)), tail=line[-ID_SCAN_BYTES:])
        detail = str(exc)
        what = _explain(detail, answer=True)
        return refuse_answer(
            line[:ID_SCAN_BYTES],
            line[-ID_SCAN_BYTES:],
            answer_reason=f"The server's answer is no valid JSON-RPC message: {what}. Tell its author.",
            request_reason=_explain(detail),
            kind="invalid_result",
        )


def refuse(line: bytes, reason: str, code: int = types.INVALID_REQUEST, *, tail: bytes = b"") -> Refusal:
    """A refusal for `line`, answered to its request id when one can be found.

    `line` may be only the start of an over-long line and `tail` its end: clients write the id
    first (the Python SDK) or last (the TypeScript SDK), so both ends are searched.
    A refused `tools/call` is answered as a tool result carrying `{"type": "validation_error"}`,
    the envelope agents already handle; other requests get a JSON-RPC error.
    """
    head = request_head(line[:ID_SCAN_BYTES] if len(line) > ID_SCAN_BYTES else line)
    if head is None and tail:
        head = _merge(_scan_top_level(line[:ID_SCAN_BYTES]), _scan_tail(tail[-ID_SCAN_BYTES:]))
    if head is None:
        return _unaddressed(line, reason, code, tail)
    request_id, method = head
    if method == "tools/call" and code == types.INVALID_REQUEST:
        body = {"type": "validation_error", "message": reason}
        result = {
            "content": [{"type": "text", "text": dumps(body)}],
            "structuredContent": body,
            "isError": True,
            # the line is refused unread, so its protocol era is unknown: a 2026-07-28 client needs
            # the envelope, and a 2025-11-25 one takes a result's extra field as it is
            "resultType": "complete",
        }
        answer = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
        return Refusal(reason, SessionMessage(answer))
    error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=reason))
    return Refusal(reason, SessionMessage(error))


def _unaddressed(line: bytes, reason: str, code: int, tail: bytes) -> Refusal:
    """A refused line with no request to answer (no JSON, no method, an empty batch): JSON-RPC 2.0
    answers it with a null id, so the writer hears why instead of waiting. A notification (a
    method, no id) and a response (a `result` or an `error`: the peer answering a request of
    ours) are answered by no one; an answer's null id never matches a request the writer waits for."""
    head = line[:ID_SCAN_BYTES]
    method = _scan_top_level(head)[1] or (_scan_tail(tail[-ID_SCAN_BYTES:])[1] if tail else None)
    if method is not None or b'"result"' in head or b'"error"' in head:
        return Refusal(reason, None)
    try:
        parsed = json.loads(line) if len(line) <= ID_SCAN_BYTES else None
    except (ValueError, RecursionError):
        parsed, code = None, types.PARSE_ERROR
    if isinstance(parsed, dict):
        reason = "The request has no method; a JSON-RPC request needs jsonrpc, id, method and params."
    elif isinstance(parsed, list):
        reason = "A batch (a JSON array) is not taken: send one JSON-RPC request per line."
    error = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=reason))
    return Refusal(reason, SessionMessage(error))


def refuse_answer(
    prefix: bytes, tail: bytes, *, answer_reason: str, request_reason: str, kind: str
) -> Refusal:
    """A refusal for a line a client side cannot take (`prefix` its start, `tail` its end).

    Only a JSON-RPC line (one naming `"jsonrpc"`) with an id is answered: the server's request
    (it has a method) with an error for the server, the answer to one of this side's requests
    with an error typed ``kind`` for the session, failing that request at once. Anything else
    (a JSON log line that happens to carry an `id` or a `method`) is no message: nobody waits."""
    first = _scan_top_level(prefix[:ID_SCAN_BYTES])
    last = _scan_tail(tail[-ID_SCAN_BYTES:]) if tail else (None, None)
    request_id = first[0] if first[0] is not None else last[0]
    method = first[1] if first[1] is not None else last[1]
    jsonrpc = b'"jsonrpc"' in prefix[:ID_SCAN_BYTES] or b'"jsonrpc"' in tail[-ID_SCAN_BYTES:]
    if not jsonrpc or request_id is None:
        return Refusal(answer_reason, None, line_start=prefix[:200].decode(errors="replace"))
    if method is not None:
        error = types.ErrorData(code=types.INVALID_REQUEST, message=request_reason)
        return Refusal(
            request_reason, SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        )
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=answer_reason, data={"type": kind})
    answer = SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
    return Refusal(answer_reason, answer, to_peer=False)


_FAILURES = (  # what a parser's failure says → what is wrong, for a request and for an answer
    (
        ("recursion limit",),
        "The request nests too deeply for the JSON parser (about 200 levels); send flatter arguments.",
        "it nests too deeply for the JSON parser",
    ),
    (
        ("escape", "surrogate", "unicode", "utf-8"),
        "The request holds invalid Unicode (a lone surrogate escape such as \\ud800, or bytes "
        "that are not UTF-8); send valid UTF-8 text.",
        "it holds bytes that are not UTF-8 (or a lone surrogate escape)",
    ),
    (
        ("number out of range", "exceeds the limit"),
        "A number in the request is out of range (integers beyond about 4300 digits, floats "
        "beyond 64 bits); send such values as strings.",
        "a number in it is out of range",
    ),
    (
        ("json_invalid", "invalid json"),
        "The request is not valid JSON; send one JSON-RPC message per line.",
        "it is not valid JSON",
    ),
)


def _explain(detail: str, *, answer: bool = False) -> str:
    """A pydantic/JSON parse failure in words a caller can act on: of a request (to its sender),
    or with ``answer`` of a server's answer (to whoever called it)."""
    lowered = detail.lower()
    for words, of_request, of_answer in _FAILURES:
        if any(w in lowered for w in words):
            return of_answer if answer else of_request
    if answer:
        return "it is not a JSON-RPC 2.0 response (a result object or an error)"
    return "The request is not a valid JSON-RPC 2.0 message (it needs jsonrpc, id, method and params)."


def request_head(data: bytes) -> tuple[int | str, str] | None:
    """The top-level `id` and `method` of a request line that may be malformed, cut short or deeply
    nested; None when the line is not a request (nobody waits for an answer)."""
    try:
        parsed = json.loads(data, parse_int=_small_int)
    except (ValueError, RecursionError):
        return _merge(_scan_top_level(data), (None, None))
    if isinstance(parsed, dict) and isinstance(method := parsed.get("method"), str):
        request_id = parsed.get("id")
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            return request_id, method
    return None


def _small_int(text: str) -> int:
    return int(text) if len(text) <= 18 else 0


Head = tuple[int | str | None, str | None]


def _merge(first: Head, second: Head) -> tuple[int | str, str] | None:
    request_id = first[0] if first[0] is not None else second[0]
    method = first[1] if first[1] is not None else second[1]
    return (request_id, method) if request_id is not None and method is not None else None


def _scan_top_level(data: bytes) -> Head:
    """`"id"` and `"method"` at nesting depth 1 of the start of a line, without parsing the rest."""
    depth = 0
    previous: bytes = b""
    found: int | str | None = None
    method: str | None = None
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif token == b":" and depth == 1 and previous in (b'"id"', b'"method"'):
            value = _VALUE.match(data, match.end())
            literal = _literal(value.group(1)) if value is not None else None
            if previous == b'"id"':
                found = literal
            elif isinstance(literal, str):
                method = literal
        if found is not None and method is not None:
            break
        previous = token
    return found, method


def _scan_tail(tail: bytes) -> Head:
    """`"id"` and `"method"` among the last members of the top-level object, from the end of a line.

    The tail is tokenized once, from its first `"id":`/`"method":` (in JSON such a match is a
    real key, so strings are read right even when the tail starts inside one), and walked
    backwards: a key counts while the walk is inside the object that closes the line, never
    deeper; the walk stops at that object's opening brace. Linear in the tail, whatever it holds.
    """
    first = _TAIL_KEY.search(tail)
    if first is None:
        return None, None
    tokens = list(_TOKEN.finditer(tail, first.start()))
    if not tokens or tokens[-1].group() != b"}" or tail[tokens[-1].end() :].strip():
        return None, None
    found: dict[bytes, int | str | None] = {}
    depth = 0
    for i in range(len(tokens) - 1, 0, -1):  # tokens[0] is a key: nothing to its left
        token = tokens[i].group()
        if token in (b"}", b"]"):
            depth += 1
        elif token in (b"{", b"["):
            depth -= 1
            if depth == 0:  # the opening brace of the object that closes the line
                break
        elif token == b":" and depth == 1:
            key = tokens[i - 1].group()
            if key in (b'"id"', b'"method"') and key[1:-1] not in found:
                value = _VALUE.match(tail, tokens[i].end())
                found[key[1:-1]] = _literal(value.group(1)) if value is not None else None
    method = found.get(b"method")
    return found.get(b"id"), method if isinstance(method, str) else None


def _literal(raw: bytes) -> int | str | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None
