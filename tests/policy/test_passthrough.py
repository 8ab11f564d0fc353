"""Invariants 3 and 4 under the policy: a host's result reaches the agent as the host sent it, and
the host receives the agent's arguments as the agent sent them, even when the person is asked with
a preview first (the daemon asks for the preview and for exactly that change in the request's
`_meta`, never in the arguments)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from cadmcp.daemon.hostlink import HostLink
from cadmcp.wire import endpoints, sockets
from tests.core.helpers import call, find_target, wait_for_hosts
from tests.policy.helpers import policy_env, wait_host_calls, wait_log_lines

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SCRIPT = "msp.add_circle((700, 700), 70, dxfattribs={'layer': 'S-GRID'})"
PROTOCOL_STAMPS = "io.modelcontextprotocol/"
"""`_meta` keys each connection's protocol layer stamps for itself (the server's identity)."""


def _wire(result: types.CallToolResult) -> dict[str, Any]:
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    meta = {k: v for k, v in (data.get("_meta") or {}).items() if not k.startswith(PROTOCOL_STAMPS)}
    return {**{k: v for k, v in data.items() if k not in ("_meta", "resultType")}, "_meta": meta}


def _own_keys(meta: dict[str, Any]) -> set[str]:
    """`_meta` keys but the server identity each connection's protocol layer stamps itself."""
    return {k for k in meta if not k.startswith("io.modelcontextprotocol/")}


async def _direct(runtime_dir: Path, pid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The host's own answer to a call, asked over its socket with no daemon between."""
    ep = next(e for e in endpoints.list_endpoints(runtime_dir) if e.pid == pid)
    async with sockets.connect(ep.path, timeout=5) as (read, write), HostLink(read, write) as link:
        await link.connect()
        raw = await link.raw_request("tools/call", {"name": name, "arguments": arguments})
    return _wire(types.CallToolResult.model_validate(raw))


async def test_a_hosts_result_and_meta_arrive_as_the_host_sent_them(
    hosts: Any, daemon_client: Any, runtime_dir: Path
) -> None:
    demo = hosts.start("demo")
    arguments = {"x1": 0, "y1": 0, "x2": 3, "y2": 4}
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        cap = await find_target(session, "measure_distance")
        through = await call(session, "invoke_dynamic", {"id": cap["id"], "arguments": arguments})
    direct = await _direct(runtime_dir, demo.pid, "measure_distance", arguments)
    assert direct["_meta"]  # the host does put its own _meta on this result
    assert _wire(through) == direct
    reached = await wait_host_calls(demo.pid, "measure_distance", 2)
    assert [line["args"] for line in reached] == [arguments, arguments]


async def test_a_confirmed_preview_sends_the_agents_arguments_untouched_and_stops_on_a_change_meanwhile(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    dxf = hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    asked: list[str] = []
    colleague_change: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        for change in colleague_change:  # someone else changes the drawing while the person reads
            await change()
        return types.ElicitResult(action="accept", content={"approve": True})

    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as agent:
        await wait_for_hosts(agent, 1)
        code = await find_target(agent, "execute_python_code", "DXF")
        applied = await call(agent, "invoke_dynamic", {"id": code["id"], "arguments": {"code": SCRIPT}})
        assert not applied.is_error and "[UNDO STEP]" in applied.content[0].text, applied
        assert _own_keys(applied.meta) == {"io.cadmcp/checkpoint"}  # the host's _meta, nothing added
        assert "creates 1 (1 CIRCLE)" in asked[0]

        async with daemon_client(era="legacy") as colleague:
            await wait_for_hosts(colleague, 1)
            other = await find_target(colleague, "execute_python_code", "DXF")

            async def change() -> None:
                done = await call(
                    colleague,
                    "invoke_dynamic",
                    {"id": other["id"], "arguments": {"code": "msp.add_point((9, 9))"}},
                )
                assert not done.is_error

            colleague_change.append(change)
            stopped = await call(agent, "invoke_dynamic", {"id": code["id"], "arguments": {"code": SCRIPT}})
        assert (
            stopped.is_error
            and "[NOT APPLIED] The document changed since the preview" in stopped.content[0].text
        )
        assert "creates 1 (1 CIRCLE)" in asked[1]
    reached = [line["args"] for line in await wait_host_calls(dxf.pid, "execute_python_code", 5)]
    agents = [args for args in reached if args != {"code": "msp.add_point((9, 9))"}]
    assert agents == [{"code": SCRIPT}] * 4  # preview and apply, twice: never a dryRun or previewed key
    decisions = [d for d in await wait_log_lines("policy/decision", 2) if d.get("preview")]
    assert [d["outcome"] for d in decisions] == ["confirmed", "confirmed"]
    assert all(d["preview"]["previewed"] and d["preview"]["created"] == 1 for d in decisions)
