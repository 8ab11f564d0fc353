"""The daemon end to end: real host processes, real sockets, a real daemon, real SDK clients."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession

from cadmcp.wire.sockets import connect
from tests.core.helpers import call, find, find_target, structured, wait_for_hosts
from tests.tasks.helpers import raw

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_three_hosts_are_listed_searched_and_routed_by_pid(hosts: Any, daemon_client: Any) -> None:
    alpha1 = hosts.spawn("demo", "--app", "Alpha", "--app-version", "1.0")
    alpha2 = hosts.spawn("demo", "--app", "Alpha", "--app-version", "2.0")
    beta = hosts.spawn("demo", "--app", "Beta", "--app-version", "1.0")
    for proc in (alpha1, alpha2, beta):
        hosts.wait_ready(proc)
    async with daemon_client() as session:
        listing = await wait_for_hosts(session, 3)
        assert sorted((h["hostApp"], h["version"], h["pid"]) for h in listing["hosts"]) == sorted(
            [("Alpha", "1.0", alpha1.pid), ("Alpha", "2.0", alpha2.pid), ("Beta", "1.0", beta.pid)]
        )
        items = [i for i in await find(session, "echo", limit=32) if i["target"] == "echo"]
        assert len(items) == 3 and len({i["id"] for i in items}) == 3
        for it in items:
            result = await call(session, "invoke_dynamic", {"id": it["id"], "arguments": {"text": "x"}})
            assert result.content[0].text == "x"
            status = await find_target(session, "demo://status", hostInstanceId=it["hostInstanceId"])
            assert status["hostInstanceId"] == it["hostInstanceId"]
        pids = {i["hostInstanceId"].rsplit("-", 1)[1] for i in items}
        assert pids == {str(alpha1.pid), str(alpha2.pid), str(beta.pid)}
        only_beta = await find(session, "echo", hostInstanceId=items[0]["hostInstanceId"])
        assert {i["hostInstanceId"] for i in only_beta} == {items[0]["hostInstanceId"]}
        # "an empty query lists everything" was not so past one page: what is left out is said
        every = await structured(session, "search_dynamic", {"query": "", "limit": 32})
        assert (
            every["hasMore"] and "more are not listed" in every["more"] and "hostInstanceId" in every["more"]
        )
        one = await structured(
            session,
            "search_dynamic",
            {"query": "", "hostInstanceId": items[0]["hostInstanceId"], "limit": 32},
        )
        assert not one["hasMore"] and "more" not in one
        blank = await structured(session, "search_dynamic", {"query": " ? ", "limit": 5})  # no words either
        assert "raise limit (up to 32)" in blank["more"], blank
        few = {"query": "", "hostInstanceId": items[0]["hostInstanceId"], "limit": 3}
        said = (await structured(session, "search_dynamic", few))["more"]
        assert "hostInstanceId" not in said and "raise limit" in said, said  # the one host is asked already


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_new_clients_first_calls_see_the_hosts_already_running(
    hosts: Any, daemon_client: Any, era: str
) -> None:
    """An AI client starts the daemon and searches at once: hosts running before it are there."""
    procs = [hosts.spawn("demo", "--app", app) for app in ("Alpha", "Beta", "Gamma")]
    for proc in procs:
        hosts.wait_ready(proc)
    async with daemon_client(era=era) as session:
        items = await find(session, "echo", limit=32)
        assert sorted(i["hostApp"] for i in items if i["target"] == "echo") == ["Alpha", "Beta", "Gamma"]
    async with daemon_client(era=era) as session:
        listing = await structured(session, "list_host_instances")
        assert listing["count"] == 3, listing["endpoints"]


PASSTHROUGH_CASES: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "hello ünïcode"}),
    ("measure_distance", {"x1": 0, "y1": 0, "x2": 3, "y2": 4}),
    ("fail", {"message": "nope"}),
    ("render_swatch", {"red": 1, "green": 2, "blue": 3}),
    ("link_status", {}),
    ("crash", {}),
]


def _comparable(result: Any) -> dict[str, Any]:
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    meta = dumped.get("_meta") or {}
    meta.pop("io.modelcontextprotocol/serverInfo", None)
    if not meta:
        dumped.pop("_meta", None)
    return dumped


async def test_tool_results_pass_through_unchanged(hosts: Any, daemon_client: Any, runtime_dir: Any) -> None:
    """Text, structured content with _meta, isError, images and resource links arrive as sent."""
    host = hosts.start("demo")
    path = next(p for p in runtime_dir.iterdir() if p.name.endswith(f"_{host.pid}.sock"))
    async with (
        daemon_client() as session,
        connect(path) as (read, write),
        ClientSession(read, write) as direct,
    ):
        await direct.discover()
        await wait_for_hosts(session, 1)
        for tool, args in PASSTHROUGH_CASES:
            item = await find_target(session, tool)
            via_daemon = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": args})
            straight = await direct.call_tool(tool, args)
            assert _comparable(via_daemon) == _comparable(straight), tool


async def test_catalog_changes_are_followed_and_ids_go_stale(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        add_tool = await find_target(session, "add_tool")
        set_desc = await find_target(session, "set_description")

        await call(session, "invoke_dynamic", {"id": add_tool["id"], "arguments": {"name": "count_walls"}})
        with anyio.fail_after(10):
            while not [i for i in await find(session, "count_walls") if i["target"] == "count_walls"]:
                await anyio.sleep(0.1)

        await call(
            session,
            "invoke_dynamic",
            {"id": set_desc["id"], "arguments": {"name": "echo", "description": "New"}},
        )
        with anyio.fail_after(10):
            while (await find_target(session, "echo"))["id"] == echo["id"]:
                await anyio.sleep(0.1)
        stale = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x"}})
        assert stale.is_error
        assert stale.structured_content["type"] == "stale"
        assert stale.structured_content["reason"] == "changed"
        assert stale.structured_content["retry"] == "search_then_reinvoke"
        assert (await find_target(session, "add_tool"))["id"] == add_tool["id"]  # unchanged tools keep ids
        fresh = await find_target(session, "echo")
        ok = await call(session, "invoke_dynamic", {"id": fresh["id"], "arguments": {"text": "y"}})
        assert ok.content[0].text == "y"


async def test_host_killed_mid_call_fails_then_goes_stale(hosts: Any, daemon_client: Any) -> None:
    victim = hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        slow = await find_target(session, "slow")
        outcome: dict[str, Any] = {}

        async def run_slow() -> None:
            outcome["result"] = await call(
                session, "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 30}}
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_slow)
            await anyio.sleep(1.0)
            os.kill(victim.pid, signal.SIGKILL)
        failed = outcome["result"]
        assert failed.is_error
        assert failed.structured_content["type"] == "invocation_failed"
        assert failed.structured_content["executionStarted"] is True
        stale = await call(session, "invoke_dynamic", {"id": slow["id"], "arguments": {"seconds": 1}})
        assert stale.structured_content["type"] == "stale"
        assert stale.structured_content["reason"] == "host_disconnected"
        listing = await structured(session, "list_host_instances")  # still serving
        assert listing["count"] == 0


async def test_multi_round_input_with_a_modern_client(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        args = {"id": item["id"], "arguments": {"item": "beta"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert "confirm" in (first.input_requests or {})
        assert first.request_state and "pending:beta" not in first.request_state  # sealed, opaque
        answer = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}

        tampered = first.request_state[:-4] + ("AAAA" if not first.request_state.endswith("AAAA") else "BBBB")
        other_args = {"id": item["id"], "arguments": {"item": "alpha"}}
        for call_args, state in ((args, tampered), (other_args, first.request_state)):
            refused = await session.call_tool(
                "invoke_dynamic",
                call_args,
                input_responses=answer,
                request_state=state,
                allow_input_required=True,
            )
            _assert_state_refused(refused)
        done = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult) and not done.is_error
        assert done.structured_content["deleted"] is True
        assert done.structured_content["state"] == "pending:beta"  # the host got its own state back


async def test_an_expired_request_state_is_refused(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client(env={"CADMCP_REQUEST_STATE_TTL": "1"}) as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        args = {"id": item["id"], "arguments": {"item": "beta"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        await anyio.sleep(2.5)
        answer = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}
        refused = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        _assert_state_refused(refused)
        assert "expired" in refused.structured_content["message"]


def _assert_state_refused(result: Any) -> None:
    """A requestState the SDK's boundary refused: the daemon's validation_error, saying what to do."""
    assert isinstance(result, types.CallToolResult) and result.is_error, result
    body = result.structured_content
    assert body["type"] == "validation_error" and body["reason"] == "invalid_request_state", body
    assert "Start the call again without requestState" in body["message"]


async def test_multi_round_input_with_a_2025_client_is_driven_by_the_daemon(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with daemon_client(era="legacy", elicitation_callback=elicit) as session:
        assert session.protocol_version == "2025-11-25"
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        done = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": {"item": "gamma"}})
        assert not done.is_error
        assert done.structured_content["deleted"] is True
        assert asked == ["Delete gamma?"]


async def test_resource_reads_single_template_and_batch(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        status = await find_target(session, "demo://status")
        greeting = await find_target(session, "demo://greeting/{name}")
        assert greeting["kind"] == "resource_template" and greeting["argsHint"] == "name: string"
        assert greeting["requiredArgs"] == ["name"]
        one = await call(session, "invoke_dynamic", {"id": greeting["id"], "arguments": {"name": "Ada"}})
        assert one.content[0].type == "resource" and one.content[0].resource.text == "Hello, Ada!"
        missing = await call(session, "invoke_dynamic", {"id": greeting["id"], "arguments": {}})
        assert missing.structured_content["type"] == "validation_error"

        big = await find_target(session, "demo://big/{size}")
        batch = await call(
            session,
            "invoke_dynamic",
            {
                "reads": [
                    {"id": status["id"]},
                    {"id": greeting["id"], "arguments": {"name": "Bo"}},
                    {"id": big["id"], "arguments": {"size": str(5 * 1024 * 1024)}},
                ]
            },
        )
        report = batch.structured_content["reads"]
        assert [r["ok"] for r in report] == [True, True, False]
        assert report[2]["error"]["type"] == "result_too_large"
        texts = [c.resource.text for c in batch.content if c.type == "resource"]
        assert "Hello, Bo!" in texts and len(texts) == 2

        # one unknown id or missing argument fails its own row, not the batch (it failed them all)
        mixed = await call(
            session,
            "invoke_dynamic",
            {"reads": [{"id": "c" + "a" * 12}, {"id": greeting["id"]}, {"id": status["id"]}]},
        )
        rows = mixed.structured_content["reads"]
        assert not mixed.is_error and [r["ok"] for r in rows] == [False, False, True], rows
        assert rows[0]["id"] == "c" + "a" * 12 and rows[1]["error"]["type"] == "validation_error"
        both = {"reads": [{"id": "c" + "a" * 12}, {"id": greeting["id"]}]}
        failed = await call(session, "invoke_dynamic", both)
        assert failed.is_error and failed.structured_content["type"] == "reads_failed"
        assert len(failed.structured_content["reads"]) == 2


BAD_REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    ("search_dynamic", {"limit": 0}, "limit"),
    ("search_dynamic", {"limit": 33}, "limit"),
    ("search_dynamic", {"kinds": ["widget"]}, "kind"),
    ("search_dynamic", {"detail": "everything"}, "detail"),
    ("search_dynamic", {"hostInstanceId": "nope-1"}, "list_host_instances"),
    ("invoke_dynamic", {"id": "not an id!"}, "not a capability id"),
    ("invoke_dynamic", {"id": "c" + "a" * 12, "reads": [{"id": "c" + "a" * 12}]}, "either"),
    ("invoke_dynamic", {"reads": [{"id": "c" + "a" * 12}] * 17}, "at most 16"),
    ("invoke_dynamic", {"id": "c" + "a" * 12, "arguments": [1]}, "expected an object"),
    ("invoke_dynamic", {}, "Pass id"),
]


async def test_bad_requests_get_validation_errors(daemon_client: Any) -> None:
    async with daemon_client() as session:
        for tool, args, fragment in BAD_REQUESTS:
            result = await call(session, tool, args)
            assert result.is_error, (tool, args)
            assert result.structured_content["type"] == "validation_error", (tool, args)
            assert fragment in result.structured_content["message"], (tool, args)
        unknown = await call(session, "invoke_dynamic", {"id": "c" + "b" * 12})
        assert unknown.structured_content["type"] == "stale"


async def test_a_tool_in_reads_is_refused_and_limits_are_not_clamped(hosts: Any, daemon_client: Any) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        result = await call(session, "invoke_dynamic", {"reads": [{"id": echo["id"]}]})
        assert result.structured_content["type"] == "validation_error"
        assert "tool" in result.structured_content["message"]
        listing = await structured(session, "search_dynamic", {"limit": 32})
        assert listing["count"] <= 32
        nothing = await structured(session, "search_dynamic", {"query": "zzqx frobnicate"})
        assert nothing["count"] == 0 and "guidance" in nothing


async def test_daemon_surface_is_fixed(daemon_client: Any) -> None:
    async with daemon_client() as session:
        tools = await session.list_tools()
        assert sorted(t.name for t in tools.tools) == [
            "invoke_dynamic",
            "launch_host",
            "list_host_instances",
            "list_machines",
            "read_file_info",
            "search_dynamic",
        ]
        assert all(t.output_schema is None for t in tools.tools)
        caps = session.discover_result.capabilities if session.discover_result else None
        assert caps is not None and caps.tools is not None and not caps.tools.list_changed


MAX_TOOLS_LIST_BYTES = 6144
"""What the daemon's whole fixed surface may cost an agent's context, whatever hosts run."""


async def test_the_tool_list_fits_in_6_kb_and_still_says_what_each_tool_is_for(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        listed = await raw(session, "tools/list", {})
        size = len(json.dumps(listed, separators=(",", ":"), ensure_ascii=False).encode())
        assert size <= MAX_TOOLS_LIST_BYTES, f"tools/list is {size} bytes"
        for tool in listed["tools"]:
            assert tool["title"] and len(tool["description"]) >= 250, tool["name"]
            assert all(spec.get("description") for spec in tool["inputSchema"]["properties"].values())
