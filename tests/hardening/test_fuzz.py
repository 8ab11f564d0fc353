"""Property-based fuzzing of every daemon tool through a real daemon and a real host.

Whatever the arguments, ids, reads, template parameters or requestState, every answer is a
tool result (a typed envelope when it is an error), never a hang, a crash or a traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints
from tests.hardening.rawwire import RawDaemon

pytestmark = pytest.mark.slow

TOOLS = [
    "search_dynamic",
    "invoke_dynamic",
    "list_host_instances",
    "launch_host",
    "read_file_info",
    "list_machines",
]
KEYS = [
    "id",
    "arguments",
    "reads",
    "query",
    "limit",
    "kinds",
    "detail",
    "hostInstanceId",
    "filePath",
    "hostApp",
    "version",
    "timeoutSeconds",
    "detach",
    "restartHostInstanceId",
    "text",
    "name",
]


def tool_call(name: str, arguments: Any, **params: Any) -> dict[str, Any]:
    """A tools/call request (the id is added when it is sent)."""
    return {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **params},
    }


class Fixture:
    def __init__(self, daemon: RawDaemon, real_ids: list[str]) -> None:
        self.daemon = daemon
        self.real_ids = real_ids
        self.next_id = 1000

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        request = {**request, "id": self.next_id}
        self.daemon.send(request)
        answer = self.daemon.answer(self.next_id, timeout=30)
        assert answer is not None, f"no answer to {str(request)[:300]}"
        assert self.daemon.proc.poll() is None, "the daemon exited"
        return answer


@pytest.fixture(scope="module")
def live() -> Iterator[Fixture]:
    runtime = Path(tempfile.mkdtemp(prefix="cmf"))
    os.chmod(runtime, 0o700)
    logs = Path(tempfile.mkdtemp(prefix="cmfl"))
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime), LOG_DIR_ENV: str(logs)}
    host = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", "demo"], env=env, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not list_endpoints(runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    daemon = RawDaemon(runtime, env={LOG_DIR_ENV: str(logs)})
    fixture = Fixture(daemon, [])
    for _ in range(100):
        answer = fixture.ask(
            {
                "jsonrpc": "2.0",
                "method": "tools/call",
                "params": {"name": "search_dynamic", "arguments": {"limit": 32}},
            }
        )
        items = answer["result"]["structuredContent"]["items"]
        if items:
            fixture.real_ids = [i["id"] for i in items]
            break
        time.sleep(0.1)
    assert fixture.real_ids, "the demo host never appeared"
    yield fixture
    daemon.close()
    host.send_signal(signal.SIGTERM)
    host.wait(10)
    shutil.rmtree(runtime, ignore_errors=True)
    shutil.rmtree(logs, ignore_errors=True)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=25,
)


@st.composite
def ids(draw: st.DrawFn, real: list[str]) -> Any:
    return draw(
        st.one_of(
            st.sampled_from(real),
            st.from_regex(r"\Ac[a-z2-7]{12}\Z"),
            st.text(max_size=30),
            json_values,
        )
    )


def _check(answer: dict[str, Any]) -> None:
    assert "Traceback" not in str(answer)
    if "error" in answer:  # protocol-level refusals keep a JSON-RPC error with a message
        assert answer["error"]["code"] in (-32602, -32600, -32603) and answer["error"]["message"], answer
        assert answer["error"]["code"] != -32603, answer  # never an internal error
        return
    result = answer["result"]
    if result.get("isError"):
        body = result.get("structuredContent")
        if body is None:  # a host's own error result passes through untouched
            assert result["content"], result
            return
        assert isinstance(body.get("type"), str) and body.get("message"), body
        assert body["type"] != "internal_error", body
        assert len(body["message"]) < 4000, body["message"][:300]


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(data=st.data())
def test_any_arguments_to_any_daemon_tool(live: Fixture, data: st.DataObject) -> None:
    tool = data.draw(st.sampled_from(TOOLS))
    args = data.draw(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), json_values, max_size=5))
    _check(live.ask(tool_call(tool, args)))


@FUZZ
@given(data=st.data())
def test_invoke_with_any_id_arguments_and_reads(live: Fixture, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        args: dict[str, Any] = {"id": data.draw(ids(live.real_ids))}
        if data.draw(st.booleans()):
            args["arguments"] = data.draw(st.dictionaries(st.text(max_size=10), json_values, max_size=4))
    else:
        reads = st.lists(
            st.fixed_dictionaries(
                {"id": ids(live.real_ids)},
                optional={"arguments": st.dictionaries(st.sampled_from(["name", "size", "x"]), json_values)},
            ),
            max_size=20,
        )
        args = {"reads": data.draw(reads)}
    _check(
        live.ask(
            {
                "jsonrpc": "2.0",
                "method": "tools/call",
                "params": {"name": "invoke_dynamic", "arguments": args},
            }
        )
    )


@FUZZ
@given(data=st.data())
def test_invoke_with_any_request_state_and_responses(live: Fixture, data: st.DataObject) -> None:
    params: dict[str, Any] = {
        "name": "invoke_dynamic",
        "arguments": {"id": data.draw(st.sampled_from(live.real_ids)), "arguments": {"item": "alpha"}},
    }
    if data.draw(st.booleans()):
        params["requestState"] = data.draw(st.text(max_size=200))
    if data.draw(st.booleans()):
        params["inputResponses"] = data.draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3))
    _check(live.ask({"jsonrpc": "2.0", "method": "tools/call", "params": params}))


def test_oversized_inputs_of_every_kind_are_refused(live: Fixture) -> None:
    big = "z" * (5 * 1024 * 1024)
    cases = [
        ("search_dynamic", {"query": big}),
        ("invoke_dynamic", {"id": big}),
        ("invoke_dynamic", {"id": live.real_ids[0], "arguments": {"text": big}}),
        ("invoke_dynamic", {"reads": [{"id": live.real_ids[0], "arguments": {"name": big}}]}),
        ("invoke_dynamic", {"reads": [{"id": "c" * 13}] * 5000}),
        ("launch_host", {"hostApp": big}),
        ("read_file_info", {"filePath": big}),
        ("search_dynamic", {"kinds": ["tool"] * 200_000}),
    ]
    for tool, args in cases:
        answer = live.ask(
            {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": tool, "arguments": args}}
        )
        body = answer["result"]["structuredContent"]
        assert answer["result"]["isError"] and body["type"] == "validation_error", (tool, str(body)[:200])
        assert len(body["message"]) < 500
