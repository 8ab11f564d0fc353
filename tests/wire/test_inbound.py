"""Refused request lines still reach their sender: the id is found wherever the client put it."""

from __future__ import annotations

import json
import time

import pytest

from cadmcp.wire import inbound


def _line(request: dict[str, object]) -> bytes:
    return json.dumps(request, separators=(",", ":")).encode()


BIG = "x" * (200 * 1024)


@pytest.mark.parametrize(
    "request_",
    [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {"q": BIG, "id": 99}}},
        # the TypeScript SDK writes the envelope after the params: id last
        {"method": "tools/call", "params": {"arguments": {"q": BIG, "id": 99}}, "jsonrpc": "2.0", "id": 7},
        {
            "params": {"arguments": {"q": BIG}, "method": "nested"},
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
        },
    ],
)
def test_an_over_long_line_is_answered_to_its_top_level_id(request_: dict[str, object]) -> None:
    line = _line(request_)
    prefix, tail = line[: inbound.ID_SCAN_BYTES], line[-inbound.ID_SCAN_BYTES :]
    refusal = inbound.refuse(prefix, "too long", tail=tail)
    assert refusal.answer is not None
    message = refusal.answer.message
    assert message.id == 7
    assert message.result["structuredContent"] == {"type": "validation_error", "message": "too long"}


def test_a_line_nobody_waits_for_gets_no_answer() -> None:
    notification = _line({"jsonrpc": "2.0", "method": "notifications/x", "params": {"q": BIG}})
    refusal = inbound.refuse(notification[:1000], "too long", tail=notification[-1000:])
    assert refusal.answer is None


@pytest.mark.parametrize(
    ("answer", "answered"),
    [
        (
            {"jsonrpc": "2.0", "id": "c-4", "result": {"content": [{"type": "text", "text": BIG, "id": 1}]}},
            "c-4",
        ),
        ({"result": {"content": [{"type": "text", "text": BIG}], "id": 9}, "jsonrpc": "2.0", "id": 4}, 4),
        ({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": BIG}}, None),
        ({"level": "info", "id": 4, "msg": BIG}, None),  # a server's JSON logging: no JSON-RPC, nobody waits
    ],
)
def test_an_answer_too_long_to_take_fails_the_request_it_answers(
    answer: dict[str, object], answered: object
) -> None:
    line = _line(answer)
    prefix, tail = line[: inbound.ID_SCAN_BYTES], line[-inbound.ID_SCAN_BYTES :]
    refusal = inbound.refuse_answer(
        prefix, tail, answer_reason="over the limit", request_reason="too big", kind="result_too_large"
    )
    if answered is None:
        assert refusal.answer is None and refusal.line_start.startswith("{")
        return
    assert refusal.answer is not None and not refusal.to_peer  # for this side's session
    error = refusal.answer.message
    assert error.id == answered and error.error.message == "over the limit"
    assert error.error.data == {"type": "result_too_large"}


@pytest.mark.parametrize(
    ("line", "outcome"),
    [
        # a server's answer that cannot be read fails the request it answers, at once
        (b'{"jsonrpc":"2.0","id":"c-7","result":{"content":[{"type":"text","text":"caf\xe9"}]}}', "session"),
        (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}]', "session"),
        (b'{"jsonrpc":"2.0","id":7,"result":null}', "session"),
        # a request of the server's that cannot be read is answered to the server
        (b'{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":7}', "peer"),
        # a JSON log line carrying request-like fields is no message: nothing is made up from it
        (b'{"level":"info","id":7,"method":"tools/call","msg":"handling request"}', "nobody"),
        (b'{"level":"info","id":7,"msg":"done"}', "nobody"),
    ],
)
def test_a_line_a_client_cannot_read_goes_to_whoever_waits_for_it(line: bytes, outcome: str) -> None:
    refusal = inbound.decode(line, role="client")
    assert isinstance(refusal, inbound.Refusal)
    if outcome == "nobody":
        assert refusal.answer is None and refusal.line_start == line.decode()
        return
    assert refusal.answer is not None
    error = refusal.answer.message.error
    if outcome == "peer":
        assert refusal.to_peer and error.code == -32600
    else:
        assert not refusal.to_peer and error.data == {"type": "invalid_result"}
        assert error.message.startswith("The server's answer is no valid JSON-RPC message: "), error.message


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}",
            "nests",
        ),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"a":"\\ud800"}}', "unicode"),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"a":' + b"9" * 5000 + b"}}", "number"),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"a":', "json"),
    ],
)
def test_lines_the_parser_refuses_are_explained(line: bytes, words: str) -> None:
    decoded = inbound.decode(line)
    assert isinstance(decoded, inbound.Refusal) and decoded.answer is not None
    assert decoded.answer.message.id == 3 and words in decoded.reason.lower()


def test_a_tail_full_of_id_keys_is_searched_in_linear_time() -> None:
    """Each `"id":` used to start its own scan to the end of the line: 64 KiB of them held the event
    loop for about 36 s. The bound here is two orders of magnitude above the linear scan's cost."""
    nested = b'"id":1,' * (inbound.ID_SCAN_BYTES // 7)  # every one of them one level too deep
    tail = (b'{"id":2,"a":{' + nested + b'"b":0}}')[-inbound.ID_SCAN_BYTES :]
    started = time.perf_counter()
    refusal = inbound.refuse(b'{"jsonrpc":"2.0","method":"tools/call","params":', "too long", tail=tail)
    assert time.perf_counter() - started < 2.0
    assert refusal.answer is None  # no top-level id within the tail: nobody to answer
