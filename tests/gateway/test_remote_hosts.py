"""Hosts on another machine, through a real nats-server: listed, searched, invoked like local ones."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import sys
from typing import Any

import mcp_types as types
import pytest

from tests.core.helpers import call, find, find_target, structured
from tests.gateway.conftest import SAMPLES, wait_machine, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _without_stamp(result: Any) -> dict[str, Any]:
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped.pop("_meta", None)
    return dumped


async def test_a_machine_sees_another_machines_hosts_and_uses_them(nats_server: Any, machines: Any) -> None:
    # a small max payload, so catalogs and screenshots travel in chunks
    server = nats_server(max_payload=16 * 1024)
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    charlie = machines("charlie-bim", "charlie")
    bravo.host("dxf", str(SAMPLES / "floorplan.dxf"))
    bravo.host("demo")
    charlie.host("ifc", str(SAMPLES / "house.ifc"))
    bravo.serve(CADMCP_GATEWAY=server.url)
    charlie.serve(CADMCP_GATEWAY=server.url)
    async with (
        alpha.client(CADMCP_GATEWAY=server.url) as session,
        bravo.client(CADMCP_GATEWAY=server.url) as on_bravo,
    ):
        await wait_machine(session, "charlie-bim", 1)
        seen = await wait_machine(session, "bravo-render", 2)
        assert seen["name"] == "bravo" and [a.split()[0] for a in seen["hostApps"]] == ["DXF", "Demo"]
        assert isinstance(seen["latencyMs"], float) or seen["latencyMs"] is None
        listing = await structured(session, "list_machines")
        assert [m["machineId"] for m in listing["machines"]] == ["alpha-ws", "bravo-render", "charlie-bim"]
        assert listing["machines"][0]["local"] is True
        assert listing["gateway"]["state"] == "connected"
        assert listing["gateway"]["url"] == server.url

        # search covers the other machine's hosts, and says which machine each capability is on
        swatch = await find_target(session, "render_swatch")
        assert swatch["machineId"] == "bravo-render" and swatch["machine"] == "bravo"
        only_alpha = await structured(session, "search_dynamic", {"query": "swatch", "machineId": "alpha-ws"})
        assert only_alpha["count"] == 0
        by_own_name = await structured(session, "search_dynamic", {"query": "swatch", "machineId": "alpha"})
        assert by_own_name["count"] == 0  # this machine by the name list_machines gives it: no error
        by_name = await find(session, "screenshot", machineId="bravo")
        assert by_name and all(i["machineId"] == "bravo-render" for i in by_name)

        # one search spans every machine: the same tool on two machines, each item saying where
        screenshots = await find(session, "view screenshot")
        where = {(i["hostApp"], i["machineId"]) for i in screenshots if i["target"] == "view_screenshot"}
        assert where == {("DXF", "bravo-render"), ("IFC", "charlie-bim")}
        context = await find_target(session, "ifc://model/context")
        read = await call(session, "invoke_dynamic", {"id": context["id"]})
        assert not read.is_error and read.content[0].type == "resource"
        model = json.loads(read.content[0].resource.text)
        assert model["title"] == "house.ifc" and model["elementCounts"].get("IfcWall", 0) > 0

        # ids are the same on both machines: the capability is the same
        await wait_machine(on_bravo, "bravo-render", 2)  # bravo's own client sees its hosts locally
        local_swatch = await find_target(on_bravo, "render_swatch")
        assert local_swatch["id"] == swatch["id"]

        # results pass through untouched, images included, even when chunked over the max payload
        shot = await find_target(session, "view_screenshot", host_app="DXF")
        remote = await call(session, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 900}})
        local = await call(on_bravo, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 900}})
        assert not remote.is_error, remote
        image = remote.content[0]
        assert image.type == "image" and image.mime_type == "image/png"
        png = base64.b64decode(image.data)
        assert png.startswith(b"\x89PNG") and len(png) > 16 * 1024  # larger than one message
        assert _without_stamp(remote) == _without_stamp(local)

        small = await call(session, "invoke_dynamic", {"id": swatch["id"], "arguments": {"size": 4}})
        assert _without_stamp(small) == _without_stamp(
            await call(on_bravo, "invoke_dynamic", {"id": swatch["id"], "arguments": {"size": 4}})
        )
        measured = await call(
            session,
            "invoke_dynamic",
            {
                "id": (await find_target(session, "measure_distance"))["id"],
                "arguments": {"x1": 0, "y1": 0, "x2": 3, "y2": 4},
            },
        )
        assert measured.structured_content["distance"] == 5.0

        # a host error stays the host's answer, saying which machine it comes from (a path in it,
        # "File not found: '/home/alice/plan.dxf'", is that machine's)
        fail = await find_target(session, "fail")
        failed = await call(session, "invoke_dynamic", {"id": fail["id"], "arguments": {"message": "nope"}})
        assert failed.is_error and failed.content[0].text == "On the machine 'bravo': nope"

        # batch reads, a template and a resource, from the other machine
        status = await find_target(session, "demo://status")
        greeting = await find_target(session, "demo://greeting/{name}")
        batch = await structured(
            session,
            "invoke_dynamic",
            {"reads": [{"id": status["id"]}, {"id": greeting["id"], "arguments": {"name": "Ada"}}]},
        )
        assert [r["ok"] for r in batch["reads"]] == [True, True]

        # a multi-round call keeps the protocol's fields; the host's state rides sealed
        item = await find_target(session, "delete_item")
        args = {"id": item["id"], "arguments": {"item": "beta"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state and "pending:beta" not in first.request_state
        answer = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}
        done = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult) and not done.is_error
        assert done.structured_content == {"item": "beta", "deleted": True, "state": "pending:beta"}

        # list_host_instances narrowed to a machine
        on_b = await structured(session, "list_host_instances", {"machineId": "bravo-render"})
        assert sorted(h["hostApp"] for h in on_b["hosts"]) == ["DXF", "Demo"]
        assert all(h["machineId"] == "bravo-render" and h["machine"] == "bravo" for h in on_b["hosts"])

        # the hosts' own state (phase, documents) travels with their presence
        async def dxf_ready() -> dict[str, Any] | None:
            listing = await structured(session, "list_host_instances", {"machineId": "bravo-render"})
            dxf = next(h for h in listing["hosts"] if h["hostApp"] == "DXF")
            return dxf if dxf.get("state", {}).get("phase") == "ready" else None

        dxf = await wait_until(dxf_ready, 20)
        local_view = await structured(on_bravo, "list_host_instances", {"machineId": "bravo-render"})
        assert dxf["state"] == next(h["state"] for h in local_view["hosts"] if h["pid"] == dxf["pid"])

    # a 2025-11-25 client cannot receive input_required: its daemon asks it, then retries over NATS
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with alpha.client(
        CADMCP_GATEWAY=server.url, era="legacy", session_kwargs={"elicitation_callback": elicit}
    ) as legacy:
        await wait_machine(legacy, "bravo-render", 2)
        item = await find_target(legacy, "delete_item")
        done = await call(legacy, "invoke_dynamic", {"id": item["id"], "arguments": {"item": "gamma"}})
        assert not done.is_error and done.structured_content["deleted"] is True
        assert asked == ["Delete gamma?"]

    # call logs on both machines name the other side
    alpha_lines = [line for line in alpha.log_lines() if line.get("target") == "invoke_dynamic"]
    singles = [line for line in alpha_lines if "hostTargets" not in line]
    batches = [line for line in alpha_lines if "hostTargets" in line]
    assert sorted(line["machine"] for line in singles) == ["bravo-render"] * 7 + ["charlie-bim"]
    assert [t["machine"] for t in batches[0]["hostTargets"]] == ["bravo-render", "bravo-render"]
    served = [line for line in bravo.log_lines() if line.get("via") == "gateway"]
    by_target = {line["target"]: line for line in served}
    assert by_target["view_screenshot"]["callerMachine"] == "alpha-ws"
    assert by_target["view_screenshot"]["caller"] == "alpha"
    assert by_target["view_screenshot"]["result"]["content"][0]["type"] == "image"
    assert "data" not in by_target["view_screenshot"]["result"]["content"][0]  # binary as length only
    assert by_target["demo://status"]["method"] == "resources/read"
    assert by_target["demo://status"]["outcome"] == "ok"


async def test_launch_host_on_another_machine_runs_that_machines_launch_command(
    nats_server: Any, machines: Any
) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    command = [
        sys.executable,
        "-m",
        "cadmcp",
        "host",
        "demo",
        "--app",
        "Custom",
        "--app-version",
        "{version}",
    ]
    bravo.config.write_text(json.dumps({"hosts": {"Custom": {"command": command, "version": "7"}}}))
    launched_pid = 0
    bravo.serve(CADMCP_GATEWAY=server.url)
    try:
        async with alpha.client(CADMCP_GATEWAY=server.url) as session:
            await wait_machine(session, "bravo-render", 0)
            here = await call(session, "launch_host", {"hostApp": "Custom"})
            assert here.structured_content["type"] == "unknown_host_app"  # only bravo configures it
            said = here.structured_content
            assert said["machines"] == ["bravo-render"], said  # and this machine says where it is
            assert "The other machine(s) 'bravo' (bravo-render) start it" in said["message"]
            assert "machineId 'bravo'" in said["message"]
            listed = {m["machineId"]: m for m in (await structured(session, "list_machines"))["machines"]}
            assert "Custom" in listed["bravo-render"]["launchable"], listed["bravo-render"]

            there = await structured(session, "launch_host", {"hostApp": "Custom", "machineId": "bravo"})
            launched_pid = there["pid"]
            assert (
                there["machineId"] == "bravo-render"
                and there["hostApp"] == "Custom"
                and there["version"] == "7"
            )
            assert there["searchable"] is True and there["detached"] is True
            echo = await find_target(session, "echo", host_app="Custom")
            assert echo["machineId"] == "bravo-render" and echo["hostInstanceId"] == there["hostInstanceId"]
            said = await call(
                session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "launched"}}
            )
            assert said.content[0].text == "launched"

            unknown = await call(session, "launch_host", {"hostApp": "Custom", "machineId": "nowhere"})
            assert unknown.structured_content["type"] == "unknown_machine"
            assert (
                "known: bravo (bravo-render)" in unknown.structured_content["message"]
            )  # names, not ids alone
            # an error of bravo's said what to fix ("add it with cadmcp host add") without saying where
            missing = await call(session, "launch_host", {"hostApp": "Missing", "machineId": "bravo"})
            said = missing.structured_content
            assert said["type"] == "unknown_host_app" and said["machineId"] == "bravo-render", said
            assert said["message"].startswith("On the machine 'bravo': ") and "do it there" in said["message"]
    finally:
        if launched_pid:
            with contextlib.suppress(OSError):
                os.kill(launched_pid, signal.SIGTERM)
    launches = [line for line in bravo.log_lines() if line.get("target") == "launch_host"]
    assert launches and launches[0]["callerMachine"] == "alpha-ws"


async def test_a_remote_hosts_progress_reaches_the_caller(nats_server: Any, machines: Any) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    bravo.host("dxf", str(SAMPLES / "floorplan.dxf"))
    bravo.serve(CADMCP_GATEWAY=server.url)
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        script = await find_target(session, "execute_python_code")
        assert script["machineId"] == "bravo-render"
        code = (
            "import time\nfor i in range(3):\n    progress(i / 3, f'storey {i}')\n    time.sleep(0.2)\n'ok'"
        )
        result = await session.call_tool(
            "invoke_dynamic", {"id": script["id"], "arguments": {"code": code}}, progress_callback=on_progress
        )
    assert result.content[0].text == "Result: 'ok'"
    assert seen == [(i / 3, f"storey {i}") for i in range(3)]
