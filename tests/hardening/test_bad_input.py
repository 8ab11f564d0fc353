"""Bad input gets a typed answer that says what to fix; nothing hangs, crashes or reaches a host."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.endpoints import endpoint_name, list_endpoints, pid_alive
from tests.core.helpers import call, find_target, structured, wait_for_hosts
from tests.hardening.rawwire import RawDaemon, envelope

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def raw(runtime_dir: Path) -> Any:
    daemon = RawDaemon(runtime_dir)
    yield daemon
    daemon.close()


def test_requests_the_json_parser_refuses_are_answered_not_dropped(raw: RawDaemon) -> None:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"invoke_dynamic","arguments":'
    cases = {
        1: head % 1 + b'{"id":"cabcdefghijkl","arguments":{"x":' + b"[" * 300 + b"]" * 300 + b"}}}}",
        2: head % 2 + b'{"id":"cabcdefghijkl","arguments":{"text":"\\ud800"}}}}',
        3: head % 3 + b'{"id":"cabcdefghijkl","arguments":{"n":' + b"9" * 5000 + b"}}}}",
        4: head % 4 + b'{"id":"cabcdefghijkl","arguments":{"n":1}',  # cut short: not JSON at all
    }
    words = {1: "nests", 2: "unicode", 3: "number", 4: "json"}
    for request_id, line in cases.items():
        raw.send(line)
        body = envelope(raw.answer(request_id))
        assert body["type"] == "validation_error"
        assert words[request_id] in body["message"].lower()
    raw.send(raw.call(5, "list_host_instances", {}))
    answer = raw.answer(5)
    assert answer is not None and answer["result"]["structuredContent"]["count"] == 0


def test_lines_with_no_request_to_answer_get_a_null_id_error_but_notifications_none(raw: RawDaemon) -> None:
    """JSON-RPC 2.0: a line that is no JSON, a request with no method and a batch are answered with a
    null id saying what was wrong (the writer does not wait in silence); a notification is not."""
    for line, code, words in (
        (b"this is not json", -32700, "not valid json"),
        (b'{"jsonrpc":"2.0","id":12}', -32600, "has no method"),
        (b"[]", -32600, "batch"),
    ):
        raw.send(line)
        answer = raw.answer(None)
        assert answer is not None and answer["error"]["code"] == code, (line, answer)
        assert words in answer["error"]["message"].lower()
    raw.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}')
    unasked = raw.answer(None, timeout=1.5)
    assert unasked is None or "error" not in unasked, unasked
    raw.send(raw.call(9, "list_host_instances", {}))
    assert raw.answer(9) is not None


def test_a_request_line_over_the_size_limit_is_skipped_and_answered(raw: RawDaemon) -> None:
    big = "x" * (17 * 1024 * 1024)
    raw.send(raw.call(7, "search_dynamic", {"query": big}))
    body = envelope(raw.answer(7, timeout=30))
    assert body["type"] == "validation_error" and "MiB" in body["message"]
    assert len(body["message"]) < 300
    raw.send(raw.call(8, "search_dynamic", {"query": "anything"}))
    answer = raw.answer(8)
    assert answer is not None and "result" in answer


def test_huge_values_are_refused_with_short_messages(raw: RawDaemon) -> None:
    ten_mb = "c" * (10 * 1024 * 1024)
    requests = {
        10: ("search_dynamic", {"query": ten_mb}),
        11: ("invoke_dynamic", {"id": ten_mb}),
        12: ("invoke_dynamic", {"id": "cabcdefghijkl", "arguments": {"code": ten_mb}}),
        13: ("launch_host", {"filePath": ten_mb}),
        14: ("read_file_info", {"filePath": ten_mb}),
        15: ("invoke_dynamic", {"reads": [{"id": ten_mb}]}),
    }
    for request_id, (tool, args) in requests.items():
        raw.send(raw.call(request_id, tool, args))
    for request_id in requests:
        body = envelope(raw.answer(request_id, timeout=30))
        assert body["type"] == "validation_error", body
        assert len(body["message"]) < 400, body["message"][:400]
        assert ten_mb[:200] not in str(body)


def test_an_id_with_a_trailing_newline_is_not_an_id(raw: RawDaemon) -> None:
    raw.send(raw.call(20, "invoke_dynamic", {"id": "cabcdefghijkl\n"}))
    body = envelope(raw.answer(20))
    assert body["type"] == "validation_error" and body["field"] == "id"


def test_a_home_of_an_unknown_user_is_a_validation_error(raw: RawDaemon) -> None:
    raw.send(raw.call(21, "launch_host", {"filePath": "~nosuchuser/x.dxf"}))
    body = envelope(raw.answer(21))
    assert body["type"] == "validation_error" and "~user" in body["message"]


def _host_log(pid: int) -> str:
    folder = Path(os.environ[LOG_DIR_ENV])
    return "".join(p.read_text() for p in folder.glob(f"log_{pid}_*.log"))


async def test_host_tool_arguments_are_checked_against_its_schema_before_it_runs(
    hosts: Any, daemon_client: Any
) -> None:
    dxf = hosts.start("dxf", str(SAMPLES / "floorplan.dxf"))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        run = await find_target(session, "execute_python_code")
        history = await find_target(session, "navigate_history")
        cases: list[tuple[str, dict[str, Any], str, str]] = [
            (run["id"], {}, "code", "missing"),
            (run["id"], {"code": 5}, "code", "a string"),
            (history["id"], {"direction": "sideways"}, "direction", "one of 'back', 'forward'"),
            (history["id"], {"direction": "back", "steps": "two"}, "steps", "an integer"),
            (run["id"], {"code": "1", "colour": "red"}, "colour", "unknown argument"),
        ]
        for cap_id, arguments, field, words in cases:
            result = await call(session, "invoke_dynamic", {"id": cap_id, "arguments": arguments})
            body = result.structured_content
            assert result.is_error and body["type"] == "validation_error", body
            fields = {e["field"]: e for e in body["errors"]}
            assert field in fields and words in fields[field]["problem"], body
            assert "pydantic" not in body["message"]
            assert body["example"], body  # a complete call to copy
        shot = await find_target(session, "view_screenshot")
        small = await call(session, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 10}})
        (width,) = small.structured_content["errors"]
        assert width["field"] == "width" and "got 10" in width["problem"], width
        assert width["expected"].startswith("an integer >= 64"), width
        assert width["expected"] == "an integer >= 64 <= 4096"  # what fits, not the problem again
        example = (
            await call(session, "invoke_dynamic", {"id": history["id"], "arguments": {}})
        ).structured_content
        assert example["example"] == {"direction": "back"}
        ok = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": "1 + 1"}})
        assert not ok.is_error
    with anyio.fail_after(10):  # the host writes a call's line after its answer has gone out
        while (log := _host_log(dxf.pid)).count("tools/call") < 1:
            await anyio.sleep(0.05)
    assert log.count("tools/call") == 1, log  # only the valid call reached the host


async def test_template_arguments_are_checked(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        greeting = await find_target(session, "demo://greeting/{name}")
        for arguments in ({}, {"name": "a", "nmae": "b"}, {"name": {"nested": 1}}):
            result = await call(session, "invoke_dynamic", {"id": greeting["id"], "arguments": arguments})
            assert result.structured_content["type"] == "validation_error", arguments
            assert result.structured_content["example"] == {"name": "<name>"}
        fine = await call(session, "invoke_dynamic", {"id": greeting["id"], "arguments": {"name": "Ada"}})
        assert fine.content[0].resource.text == "Hello, Ada!"


async def test_odd_files_in_the_runtime_dir_neither_kill_nor_hide_live_hosts(
    hosts: Any, daemon_client: Any, runtime_dir: Path
) -> None:
    demo = hosts.start("demo")
    (runtime_dir / f"cadmcp_Huge_1.0_{2**70}.sock").touch()
    (runtime_dir / endpoint_name("Fake", "1", demo.pid)).write_bytes(os.urandom(64))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(runtime_dir / endpoint_name("Silent", "1", demo.pid)))
    silent.listen()
    try:
        async with daemon_client() as session:
            await wait_for_hosts(session, 1)
            for _ in range(6):  # several scans: the live host stays listed and searchable
                listing = await structured(session, "list_host_instances")
                assert [h["pid"] for h in listing["hosts"]] == [demo.pid]
                item = await find_target(session, "echo")
                result = await call(
                    session, "invoke_dynamic", {"id": item["id"], "arguments": {"text": "hi"}}
                )
                assert result.content[0].text == "hi"
                await anyio.sleep(0.5)
            states = {e["hostApp"]: e for e in listing["endpoints"]}
            assert states["Fake"]["status"] == "failed" and "not a socket" in states["Fake"]["error"]
            assert states["Silent"]["status"] == "failed"
    finally:
        silent.close()


def test_a_fresh_daemon_waits_for_discovery_before_calling_an_id_unknown(
    hosts: Any, runtime_dir: Path
) -> None:
    """A client that starts a daemon per command sends an id before the first scan finished."""
    hosts.start("demo")
    first = RawDaemon(runtime_dir)
    try:
        for attempt in range(50):
            first.send(first.call(100 + attempt, "search_dynamic", {"query": "echo"}))
            items = first.answer(100 + attempt)["result"]["structuredContent"]["items"]
            if items:
                break
        cap_id = next(i["id"] for i in items if i["target"] == "echo")
    finally:
        first.close()
    for run in range(3):
        fresh = RawDaemon(runtime_dir)
        try:
            fresh.send(fresh.call(1, "invoke_dynamic", {"id": cap_id, "arguments": {"text": f"run {run}"}}))
            answer = fresh.answer(1, timeout=30)
            assert answer is not None and "result" in answer
            assert answer["result"].get("isError") is not True, answer
            assert answer["result"]["content"][0]["text"] == f"run {run}"
        finally:
            fresh.close()


def test_an_endpoint_name_claiming_an_impossible_pid_is_not_an_endpoint(runtime_dir: Path) -> None:
    (runtime_dir / f"cadmcp_Huge_1.0_{2**70}.sock").touch()
    assert list_endpoints(runtime_dir) == []
    assert pid_alive(2**70) is False


async def test_a_2025_client_without_elicitation_is_told_instead_of_asked(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    async with daemon_client(era="legacy") as session:  # declares no elicitation capability
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        with anyio.fail_after(20):  # it used to be sent elicitation/create and never answered
            result = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": {"item": "beta"}})
        body = result.structured_content
        assert result.is_error and body["type"] == "invocation_failed", body
        assert body["missingCapability"] == "elicitation" and "elicitation" in body["message"]
        status = await find_target(session, "demo://status")
        items = (await call(session, "invoke_dynamic", {"id": status["id"]})).content[0].resource.text
        assert "beta" in items  # nothing was deleted


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_sdk_client_reads_a_request_refused_unread(daemon_client: Any, era: str) -> None:
    """A request the daemon refuses before parsing it (over its size) is answered as a tool result
    an MCP SDK client of either era reads, not as a shape it cannot validate."""
    async with daemon_client(era) as session:
        result = await session.call_tool(
            "invoke_dynamic", {"id": "cabcdefghijkl", "arguments": {"b": "x" * 5_000_000}}
        )
        assert result.is_error
        body = result.structured_content
        assert body is not None and body["type"] == "validation_error", body
        assert "over 4.25 MiB" in body["message"]
        assert (await session.call_tool("list_host_instances", {})).structured_content["count"] == 0
