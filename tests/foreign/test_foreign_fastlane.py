"""The proxy's fast lane: a plain 2026-era tool call answered beside the proxy's MCP server.

Raw JSON-RPC lines on a real proxy's endpoint, with mcp-server-time and server-everything behind
it: what the fast lane answers is what the SDK's server answers for the same call, progress and
cancellation reach through it, and what it must not take goes to the SDK's server.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from cadmcp.applications import CONFIG_ENV
from cadmcp.foreign.childprocess import server_process
from cadmcp.foreign.fastlane import FastLane, NotSent, ServerChannel, ServerGone
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.calllog import parse_line
from cadmcp.wire.endpoints import list_endpoints
from tests.foreign.conftest import config_env, python_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

MODERN = "2026-07-28"
ENVELOPE = {
    types.PROTOCOL_VERSION_META_KEY: MODERN,
    types.CLIENT_INFO_META_KEY: {"name": "raw-test", "version": "1"},
    types.CLIENT_CAPABILITIES_META_KEY: {},
}
CONVERT = {"source_timezone": "Europe/Berlin", "time": "14:30", "target_timezone": "Asia/Tokyo"}


def call_line(
    request_id: Any, name: str, arguments: Any, *, meta: dict[str, Any] | None = None, **more: Any
) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": {**ENVELOPE, **(meta or {})}, **more}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


class RawLink:
    """Lines to and from a host endpoint, read one message at a time."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, line: bytes) -> None:
        await self.stream.send(line + b"\n")

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.stream.receive()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def answer(self, request_id: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The response to `request_id`, and the notifications that came before it."""
        notes = []
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message, notes
            notes.append(message)


def _proxy_endpoint(runtime_dir: Path, pid: int) -> Path:
    return next(ep.path for ep in list_endpoints(runtime_dir) if ep.pid == pid)


def _host_lines(log_dir: Path, pid: int) -> list[dict[str, Any]]:
    lines = []
    for path in log_dir.glob(f"log_{pid}_*.log"):
        lines += [parse_line(line) for line in path.read_text().splitlines() if " tools/call " in line]
    return lines


async def test_a_plain_call_answers_as_the_sdk_server_answers_it_and_is_logged(
    hosts: Any, runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = config_env(tmp_path, {"Time": python_server("mcp_server_time", "--local-timezone", "UTC")})
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    proxy = hosts.start("Time", timeout=120)
    stream = await anyio.connect_unix(str(_proxy_endpoint(runtime_dir, proxy.pid)))
    async with stream:
        link = RawLink(stream)
        # a connection's first request decides its era: the SDK's server answers it
        await link.send(call_line(1, "convert_time", CONVERT))
        through_sdk, _ = await link.answer(1)
        # the same call again, now on a 2026-era connection: the fast lane answers it
        await link.send(call_line("two", "convert_time", CONVERT))
        beside, _ = await link.answer("two")
        assert beside["result"] == through_sdk["result"], (beside, through_sdk)
        assert beside["result"]["resultType"] == "complete"
        assert types.SERVER_INFO_META_KEY in beside["result"]["_meta"]
        assert beside["result"]["structuredContent"]["target"]["timezone"] == "Asia/Tokyo", beside

        # a failing call: the server's own isError result, the same both ways
        await link.send(call_line(3, "convert_time", {**CONVERT, "time": "25:99"}))
        failed, _ = await link.answer(3)
        assert failed["result"]["isError"] is True, failed

        # what the fast lane must not take keeps the SDK's answers: an unknown tool, bad arguments
        await link.send(call_line(4, "no_such_tool", {}))
        unknown, _ = await link.answer(4)
        assert "error" in unknown or unknown["result"].get("isError"), unknown
        await link.send(call_line(5, "convert_time", "not an object"))
        malformed, _ = await link.answer(5)
        assert malformed["error"]["code"] == types.INVALID_PARAMS, malformed
    with anyio.fail_after(10):  # the call log is written off the call's path: one line a call
        while len(lines := _host_lines(Path(os.environ[LOG_DIR_ENV]), proxy.pid)) < 4:
            await anyio.sleep(0.1)
    converted = [line for line in lines if line.get("target") == "convert_time"]
    assert [line["outcome"] for line in converted[:2]] == ["ok", "ok"], converted
    assert converted[0]["args"] == converted[1]["args"] == CONVERT


async def test_progress_and_cancellation_reach_through_the_fast_lane(
    hosts: Any, runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, everything: list[str]
) -> None:
    env = config_env(
        tmp_path, {"Everything": {"server": {"command": everything[0], "args": [everything[1], "stdio"]}}}
    )
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    proxy = hosts.start("Everything", timeout=120)
    stream = await anyio.connect_unix(str(_proxy_endpoint(runtime_dir, proxy.pid)))
    async with stream:
        link = RawLink(stream)
        discover = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": ENVELOPE}}
        await link.send(json.dumps(discover).encode())
        await link.answer(0)
        long_op = "trigger-long-running-operation"
        await link.send(call_line(1, long_op, {"duration": 2, "steps": 4}, meta={"progressToken": "mine"}))
        with anyio.fail_after(30):
            done, notes = await link.answer(1)
        progress = [n for n in notes if n.get("method") == "notifications/progress"]
        assert len(progress) >= 3 and all(n["params"]["progressToken"] == "mine" for n in progress), notes
        assert not done["result"].get("isError"), done

        await link.send(call_line(2, long_op, {"duration": 30, "steps": 30}, meta={"progressToken": 7}))
        with anyio.fail_after(30):
            first = await link.receive()
        assert first["params"]["progressToken"] == 7, first
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        await link.send(json.dumps(cancel).encode())
        await link.send(call_line(3, "echo", {"message": "still here"}))
        with anyio.fail_after(30):
            after, notes = await link.answer(3)  # no answer to the cancelled call comes first
        assert "still here" in json.dumps(after["result"]), after
        assert all(n.get("id") != 2 for n in notes), notes
    with anyio.fail_after(10):  # the proxy gave the call up (and told the server so)
        while not any(
            line.get("target") == long_op and line["outcome"] == "cancelled"
            for line in _host_lines(Path(os.environ[LOG_DIR_ENV]), proxy.pid)
        ):
            await anyio.sleep(0.1)


class _Host:
    """What the fast lane asks of the proxy's host: a stand-in with one tool."""

    def __init__(self, tg: anyio.abc.TaskGroup) -> None:
        self.task_group: anyio.abc.TaskGroup | None = tg
        self.calls: list[tuple[str, Any]] = []

    def serves_tool(self, name: str) -> bool:
        return name in ("add", "fails")

    async def call(self, name: str, arguments: Any, **kw: Any) -> Any:
        self.calls.append((name, arguments))
        if name == "fails":
            raise MCPError(
                code=types.INTERNAL_ERROR, message="the server is down", data={"type": "server_down"}
            )
        if kw["reporter"] is not None:
            await kw["reporter"](1.0, 2.0, "half")
        return {"content": [{"type": "text", "text": str(sum(arguments.values()))}]}


@pytest.mark.parametrize(
    ("line", "taken"),
    [
        (call_line(9, "add", {"a": 1}), True),
        (call_line(9, "other_tool", {}), False),  # not a tool the server serves: the SDK's wording
        (call_line(9, "add", [1]), False),  # malformed arguments: the SDK refuses them
        (call_line(9, "add", {}, task={"ttl": 1000}), False),  # a task-augmented call
        (call_line(True, "add", {}), False),  # not a request id
        (call_line(9, "add", {}, meta={types.PROTOCOL_VERSION_META_KEY: "2025-11-25"}), False),
        (b'{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"x://y"}}', False),
        (b"not json", False),
    ],
)
async def test_the_fast_lane_takes_only_plain_calls_of_served_tools(line: bytes, taken: bool) -> None:
    replies: list[bytes] = []

    async def reply(data: bytes) -> None:
        replies.append(data)

    async with anyio.create_task_group() as tg:
        lane = FastLane(_Host(tg), lambda: {"name": "proxy", "version": "1"}).intercept(reply)  # type: ignore[arg-type]
        assert lane.take(call_line(0, "add", {})) is False  # the first request decides the era
        assert lane.take(line) is taken
    if taken:
        answer = json.loads(replies[-1])
        assert answer["id"] == 9 and answer["result"]["content"][0]["text"] == "1"
        assert answer["result"]["resultType"] == "complete"
        assert answer["result"]["_meta"][types.SERVER_INFO_META_KEY] == {"name": "proxy", "version": "1"}


async def test_the_fast_lane_answers_errors_progress_and_takes_nothing_on_a_2025_connection() -> None:
    replies: list[dict[str, Any]] = []

    async def reply(data: bytes) -> None:
        replies.append(json.loads(data))

    async with anyio.create_task_group() as tg:
        host = _Host(tg)
        lane = FastLane(host, lambda: {"name": "proxy"}).intercept(reply)  # type: ignore[arg-type]
        lane.take(
            b'{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":%s}}'
            % json.dumps(ENVELOPE).encode()
        )
        assert lane.take(call_line(1, "fails", {}))
        assert lane.take(call_line(2, "add", {"a": 2, "b": 3}, meta={"progressToken": "t"}))
        legacy = FastLane(host, lambda: {"name": "proxy"}).intercept(reply)  # type: ignore[arg-type]
        legacy.take(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}')
        assert not legacy.take(call_line(3, "add", {"a": 1}))
    failed = next(r for r in replies if r.get("id") == 1)
    assert failed["error"] == {
        "code": types.INTERNAL_ERROR,
        "message": "the server is down",
        "data": {"type": "server_down"},
    }
    note = next(r for r in replies if r.get("method") == "notifications/progress")
    assert note["params"] == {"progressToken": "t", "progress": 1.0, "total": 2.0, "message": "half"}
    assert next(r for r in replies if r.get("id") == 2)["result"]["content"][0]["text"] == "5"
    assert [name for name, _ in host.calls] == ["fails", "add"]


async def test_a_call_on_an_ended_transport_says_it_was_not_sent() -> None:
    # a call made after the server ended but before the proxy noticed never reached it: the
    # proxy then says the server is down (nothing ran), not that it went away during the call
    read_send, read = anyio.create_memory_object_stream[Any](4)
    written, stdin = anyio.create_memory_object_stream[bytes](4)
    channel = ServerChannel()
    channel.attach(read, written)  # type: ignore[arg-type]  # what would be written, kept
    channel.bind(lambda method, params: {"method": method, "params": dict(params)})
    async with anyio.create_task_group() as tg:
        tg.start_soon(channel.run)
        await read_send.aclose()  # the server's stdout ended
        with anyio.fail_after(5):
            while not channel.closed:
                await anyio.sleep(0.01)
        with pytest.raises(NotSent) as raised:
            await channel.call({"name": "t", "arguments": {}}, on_progress=None, timeout=5)
        assert isinstance(raised.value, ServerGone)
        assert stdin.statistics().current_buffer_used == 0  # nothing was written


async def test_a_call_whose_write_fails_says_it_did_not_reach_the_server() -> None:
    # the proxy writes its own calls to the server's stdin itself: a broken pipe there (a real
    # process that closed its stdin) means the server never got the call, which is what the
    # caller is told (not that it may have partly run)
    closes_stdin = "import os, time; os.close(0); print('closed', flush=True); time.sleep(30)"
    read_send, read = anyio.create_memory_object_stream[Any](4)
    channel = ServerChannel()
    async with server_process(sys.executable, ["-c", closes_stdin], None, None) as pipes:
        assert (await pipes.stream.receive()).startswith(b"closed")
        channel.attach(read, pipes.stream.send_stream)
        channel.bind(lambda method, params: {"method": method, "params": dict(params)})
        async with read_send, anyio.create_task_group() as tg:
            tg.start_soon(channel.run)
            with anyio.fail_after(10), pytest.raises(NotSent):
                await channel.call({"name": "t", "arguments": {}}, on_progress=None, timeout=5)
            tg.cancel_scope.cancel()
