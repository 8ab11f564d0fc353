"""Reverting what an agent did, across a DXF and an IFC host, through a real daemon: by the agent
itself (the daemon's own list_checkpoints and revert_calls, found by search_dynamic and run by
invoke_dynamic) and by the person (`cadmcp policy checkpoints|revert`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from cadmcp.daemon.policy import control
from tests.core.helpers import call, find, find_target, structured, wait_for_hosts
from tests.policy.helpers import host_calls, host_on_copy, log_lines, policy_env, wait_host_calls

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]  # two hosts, two daemons

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
COUNT_DXF = "len(msp.query('CIRCLE')), len(msp.query('LINE'))"
COUNT_IFC = "len([w for w in model.by_type('IfcWall') if w.Name == 'Agent wall'])"
ADD_WALL = "api.root.create_entity(model, ifc_class='IfcWall', name='Agent wall')"


def _policy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cadmcp", "policy", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )


def _own_keys(meta: dict[str, Any]) -> set[str]:
    """`_meta` keys but the server identity each connection's protocol layer stamps itself."""
    return {k for k in meta if not k.startswith("io.modelcontextprotocol/")}


async def _own(session: Any, target: str, arguments: dict[str, Any]) -> Any:
    """Run one of the daemon's own capabilities the way an agent does: search, then invoke by id."""
    cap = await find_target(session, target, "cadmcp")
    return await call(session, "invoke_dynamic", {"id": cap["id"], "arguments": arguments})


async def _code(session: Any, cap: dict[str, Any], code: str) -> str:
    result = await call(session, "invoke_dynamic", {"id": cap["id"], "arguments": {"code": code}})
    assert not result.is_error, result
    return str(result.content[0].text)


async def test_revert_since_a_call_undoes_every_host_it_touched_and_stops_for_someone_elses_change(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path
) -> None:
    drawing, model = tmp_path / "plan.dxf", tmp_path / "house.ifc"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    shutil.copy(SAMPLES / "house.ifc", model)
    hosts.start("dxf", str(drawing))
    hosts.start("ifc", str(model))
    named = {"client_info": types.Implementation(name="claude-code", version="2.1")}
    async with daemon_client(**named) as agent, daemon_client(era="legacy") as colleague:
        await wait_for_hosts(agent, 2)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        ifc = await find_target(agent, "execute_python_code", "IFC")
        before_dxf = await _code(agent, dxf, COUNT_DXF)
        first = await call(
            agent, "invoke_dynamic", {"id": dxf["id"], "arguments": {"code": "msp.add_circle((0, 0), 5)"}}
        )
        assert _own_keys(first.meta) == {"io.cadmcp/checkpoint"}  # the host's _meta, nothing added
        assert first.meta["io.cadmcp/checkpoint"]["added"] == 1
        await _code(agent, ifc, ADD_WALL)
        await _code(agent, dxf, "msp.add_line((0, 0), (1, 1))")
        assert await _code(agent, ifc, COUNT_IFC) == "Result: 1"
        mine = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        calls = [c["callId"] for c in mine]
        k1, daemon_pid = calls[0], calls[0].split("-")[0]
        assert calls == [f"{daemon_pid}-{n}" for n in (1, 2, 3)]
        assert [c["host"].split()[0] for c in mine] == ["DXF", "IFC", "DXF"]
        assert mine[1]["document"].endswith("house.ifc") and mine[0]["target"] == "execute_python_code"
        assert {c["client"] for c in mine} == {"claude-code/2.1"}  # which agent made each change

        listed = await anyio.to_thread.run_sync(_policy, "checkpoints")
        assert [line.split()[0] for line in listed.stdout.splitlines()] == calls, listed.stdout
        assert "  claude-code/2.1, daemon pid " in listed.stdout.splitlines()[0], listed.stdout
        assert "IFC" in listed.stdout.splitlines()[1] and "house.ifc" in listed.stdout.splitlines()[1]

        door = control.socket_path(runtime_dir, int(daemon_pid))
        one = await control.ask(door, {"op": "revert", "callId": k1})
        assert not one["ok"] and "later agent calls changed" in one["error"] and calls[2] in one["error"]

        # a colleague changes the drawing: nothing is undone anywhere
        other = await find_target(colleague, "execute_python_code", "DXF")
        await _code(colleague, other, "msp.add_point((3, 3))")
        stopped = await control.ask(door, {"op": "revert", "callId": k1, "since": True})
        assert not stopped["ok"] and "someone changed" in stopped["error"] and "DXF" in stopped["error"]
        assert "their work stays" in stopped["error"]
        assert await _code(agent, ifc, COUNT_IFC) == "Result: 1"

        # once their change is undone, the agent's three calls go back on both hosts
        back = await find_target(colleague, "navigate_history", "DXF")
        assert not (
            await call(colleague, "invoke_dynamic", {"id": back["id"], "arguments": {"direction": "back"}})
        ).is_error
        done = await anyio.to_thread.run_sync(_policy, "revert", k1, "--since")
        assert done.returncode == 0, done.stderr
        assert "went back 2 step(s)" in done.stdout and "went back 1 step(s)" in done.stdout
        assert f"reverted {', '.join(calls)}" in done.stdout
        assert await _code(agent, dxf, COUNT_DXF) == before_dxf
        assert await _code(agent, ifc, COUNT_IFC) == "Result: 0"
        again = (await control.ask(door, {"op": "checkpoints"}))["checkpoints"]
        assert [c["callId"] for c in again if c["reverted"]] == calls
    audit = [line for line in log_lines("policy/revert") if line["file"].startswith(f"log_{daemon_pid}_")]
    assert [line["outcome"] for line in audit] == ["refused", "refused", "ok"]
    assert audit[-1]["reverted"] == calls and audit[1]["host"].startswith("DXF")


async def test_the_agent_reverts_its_own_calls_across_hosts_and_is_stopped_by_someone_elses_change(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing, model = tmp_path / "plan.dxf", tmp_path / "house.ifc"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    shutil.copy(SAMPLES / "house.ifc", model)
    dxf_host = hosts.start("dxf", str(drawing))
    hosts.start("ifc", str(model))
    async with daemon_client() as agent, daemon_client(era="legacy") as colleague:
        listing = await wait_for_hosts(agent, 2)  # the daemon's own catalog is no host instance
        assert {h["hostApp"] for h in listing["hosts"]} == {"DXF", "IFC"}
        dxf = await find_target(agent, "execute_python_code", "DXF")
        ifc = await find_target(agent, "execute_python_code", "IFC")
        before_dxf = await _code(agent, dxf, COUNT_DXF)
        await _code(agent, dxf, "msp.add_circle((0, 0), 5)")
        await _code(agent, ifc, ADD_WALL)
        found = await structured(agent, "search_dynamic", {"query": "undo everything I changed since a call"})
        assert any(i["target"] == "revert_calls" and i["hostApp"] == "cadmcp" for i in found["items"])
        mine = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        k1 = mine[0]["callId"]

        # a colleague changes the drawing: the agent's revert stops and undoes nothing anywhere
        other = await find_target(colleague, "execute_python_code", "DXF")
        await _code(colleague, other, "msp.add_point((3, 3))")
        stopped = await _own(agent, "revert_calls", {"callId": k1, "since": True})
        assert stopped.is_error and not stopped.structured_content["ok"]
        assert (
            "someone changed" in stopped.structured_content["error"]
            and "DXF" in stopped.structured_content["error"]
        )
        assert await _code(agent, ifc, COUNT_IFC) == "Result: 1"
        back = await find_target(colleague, "navigate_history", "DXF")
        await call(colleague, "invoke_dynamic", {"id": back["id"], "arguments": {"direction": "back"}})

        bad = await _own(agent, "revert_calls", {"callId": "not a call"})
        assert bad.is_error and "callId" in bad.content[0].text  # checked against its schema

        done = await _own(agent, "revert_calls", {"callId": k1, "since": True})
        assert not done.is_error, done
        assert done.structured_content["reverted"] == [c["callId"] for c in mine]
        assert sorted(u["host"].split()[0] for u in done.structured_content["undone"]) == ["DXF", "IFC"]
        assert await _code(agent, dxf, COUNT_DXF) == before_dxf
        assert await _code(agent, ifc, COUNT_IFC) == "Result: 0"
        again = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        ours = [c["reverted"] for c in again if c["daemonPid"] == mine[0]["daemonPid"]]
        assert ours == [True, True] and len(again) == 3  # the colleague's call is listed too
    undos = await wait_host_calls(dxf_host.pid, "navigate_history", 2)
    assert len(undos) == 2  # the colleague's undo, the revert


async def test_a_read_only_policy_denies_the_agent_a_revert(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "read-only"})
    async with daemon_client(env=env) as agent:
        await wait_for_hosts(agent, 1)
        listed = await _own(agent, "list_checkpoints", {})
        assert not listed.is_error and listed.structured_content["count"] == 0  # a read
        denied = await _own(agent, "revert_calls", {"callId": "1-1"})
        assert denied.structured_content["type"] == "policy_denied"
        assert denied.structured_content["capability"] == "revert_calls"


async def test_a_revert_is_a_change_on_every_host_it_goes_back_on_and_their_deny_rules_hold(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """A person who denied changes to DXF after the agent's call saw the agent undo it anyway with
    revert_calls (the daemon's own capability, under its own `cadmcp` rules)."""
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    host = hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"rules": []})
    config = Path(env["CADMCP_HOSTS_CONFIG"])
    async with daemon_client(env=env) as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        await _code(agent, dxf, "# Add a circle\nmsp.add_circle((0, 0), 5)")
        (made,) = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        rule = {"name": "hands off the plan", "decision": "deny", "hostApp": "DXF", "readOnly": False}
        config.write_text(json.dumps({"policy": {"rules": [rule]}}))
        probe = {"id": dxf["id"], "arguments": {"code": "1"}}
        with anyio.fail_after(30):
            while not (await call(agent, "invoke_dynamic", probe)).is_error:
                await anyio.sleep(0.2)  # the daemon reads the changed configuration
        denied = await _own(agent, "revert_calls", {"callId": made["callId"]})
        said = denied.structured_content
        assert denied.is_error and said["type"] == "policy_denied", said
        assert said["rule"] == "hands off the plan"
        assert said["hostApp"] == "DXF" and said["capability"] == "navigate_history"
        listed = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        assert [c["reverted"] for c in listed] == [False]
    assert host_calls(host.pid, "navigate_history") == []  # nothing reached the host


async def test_checkpoints_are_machine_wide_a_second_client_lists_and_reverts_the_firsts_calls(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    async with daemon_client() as first, daemon_client(era="legacy") as second:
        await wait_for_hosts(first, 1)
        await wait_for_hosts(second, 1)
        dxf_first = await find_target(first, "execute_python_code", "DXF")
        dxf_second = await find_target(second, "execute_python_code", "DXF")
        before = await _code(first, dxf_first, COUNT_DXF)
        await _code(first, dxf_first, "msp.add_circle((0, 0), 5)")
        made = (await _own(first, "list_checkpoints", {})).structured_content["checkpoints"]
        seen = (await _own(second, "list_checkpoints", {})).structured_content["checkpoints"]
        assert [c["callId"] for c in seen] == [c["callId"] for c in made] and len(made) == 1
        k1, first_pid = made[0]["callId"], made[0]["daemonPid"]

        # the second client changes the drawing after it: the first call cannot be reverted over it
        await _code(second, dxf_second, "msp.add_line((0, 0), (2, 2))")
        listed = (await _own(first, "list_checkpoints", {})).structured_content["checkpoints"]
        assert len(listed) == 2 and listed[1]["daemonPid"] != first_pid
        k2 = listed[1]["callId"]
        for asker in (first, second):  # from either daemon, with or without since
            for since in (False, True):
                stopped = await _own(asker, "revert_calls", {"callId": k1, "since": since})
                text = stopped.structured_content.get("error", "")
                assert stopped.is_error and "someone changed" in text and "their work stays" in text, text
                assert k2 in text and "another daemon" in text, text
        assert await _code(first, dxf_first, COUNT_DXF) == f"Result: {_plus(before, 1, 1)}"  # nothing undone

        # the first client reverts the second client's call, then the second reverts the first's
        theirs = await _own(first, "revert_calls", {"callId": k2})
        assert not theirs.is_error and theirs.structured_content["reverted"] == [k2], theirs
        mine = await _own(second, "revert_calls", {"callId": k1, "since": True})
        assert not mine.is_error and mine.structured_content["reverted"] == [k1], mine
        assert await _code(second, dxf_second, COUNT_DXF) == before
        for asker in (first, second):
            final = (await _own(asker, "list_checkpoints", {})).structured_content["checkpoints"]
            assert [(c["callId"], c["reverted"]) for c in final] == [(k1, True), (k2, True)]
        again = await _own(second, "revert_calls", {"callId": k2})
        assert again.is_error and "reverted already" in again.structured_content["error"]


async def test_a_revert_is_refused_where_someone_made_steps_of_the_same_names_since(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """The person, through their own client, undid the agent's last step and ran a script that
    began with the same line: the undo step names were as the agent had left them, and the agent's
    revert undid the person's work."""
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    same = "c = msp.add_circle((0, 0), 5)"
    async with daemon_client() as agent, daemon_client(era="legacy") as person:
        await wait_for_hosts(agent, 1)
        await wait_for_hosts(person, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        await _code(agent, dxf, "# agent line\nmsp.add_line((0, 0), (1, 1))")
        await _code(agent, dxf, same)
        first = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][0]["callId"]
        back = await find_target(person, "navigate_history", "DXF")
        assert not (
            await call(person, "invoke_dynamic", {"id": back["id"], "arguments": {"direction": "back"}})
        ).is_error
        theirs = await find_target(person, "execute_python_code", "DXF")
        await _code(person, theirs, f"{same}\ndoc.layers.add('PERSON_WORK')")
        stopped = await _own(agent, "revert_calls", {"callId": first, "since": True})
        text = stopped.structured_content.get("error", "")
        assert (
            stopped.is_error and "but are other steps (undone, and others of the same names made)" in text
        ), text
        assert "their work stays" in text
        assert await _code(agent, dxf, "'PERSON_WORK' in doc.layers") == "Result: True"


def _plus(counts: str, circles: int, lines: int) -> str:
    """`Result: (c, l)` with `circles` and `lines` more."""
    c, n = (int(x) for x in counts.removeprefix("Result: ").strip("()").split(","))
    return f"({c + circles}, {n + lines})"


def test_the_checkpoints_are_listed_with_no_daemon_running(
    runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The call logs keep the machine's checkpoints: `cadmcp policy checkpoints` lists them when no
    daemon runs, saying so, rather than "no agent change is recorded"."""
    import time

    from cadmcp.cli import main as cli_main
    from cadmcp.daemon.checkpoints import Checkpoint
    from cadmcp.userdirs import LOG_DIR_ENV
    from cadmcp.wire.calllog import CallLogFile

    logs = tmp_path / "logs"
    monkeypatch.setenv(LOG_DIR_ENV, str(logs))
    at = time.time()
    made = Checkpoint("4242-1", "i-1", "DXF 1.4.5 pid 77", "plan.dxf", 1, ("abc",), "add 50 circles", at)
    CallLogFile(logs, pid=4242).write(made.line())
    assert cli_main(["policy", "checkpoints"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("no daemon is running: the checkpoints its call logs hold"), said
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))  # when, to tell the calls apart
    assert f"4242-1  {when}  daemon pid 4242  DXF 1.4.5 pid 77  plan.dxf: add 50 circles" in said


async def test_a_reverted_call_redone_since_is_listed_live_again_and_can_be_reverted_again(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path
) -> None:
    """The person reverts two calls; the agent redoes them (navigate_history forward): the listing
    shows them live again, and reverting them again works (it said 'reverted already', and an
    earlier call's revert said 'someone changed' over the agent's own redone steps)."""
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)
        for code in ("msp.add_circle((0, 0), 5)", "msp.add_line((0, 0), (1, 1))"):
            await _code(agent, dxf, code)
        calls = [
            c["callId"] for c in (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        ]
        door = control.socket_path(runtime_dir, int(calls[0].split("-")[0]))
        assert (await control.ask(door, {"op": "revert", "callId": calls[0], "since": True}))["ok"]
        assert await _code(agent, dxf, COUNT_DXF) == before
        forward = await find_target(agent, "navigate_history", "DXF")
        redo = {"id": forward["id"], "arguments": {"direction": "forward", "steps": 2}}
        assert not (await call(agent, "invoke_dynamic", redo)).is_error
        assert await _code(agent, dxf, COUNT_DXF) != before
        # a page's frequent refresh asks no host: it keeps what the last look found (reverted)
        quick = (await control.ask(door, {"op": "checkpoints", "look": False}))["checkpoints"]
        assert [c["reverted"] for c in quick if c["callId"] in calls] == [True, True], quick
        listed = (await control.ask(door, {"op": "checkpoints"}))["checkpoints"]
        assert [c["reverted"] for c in listed if c["callId"] in calls] == [False, False], listed
        quick = (await control.ask(door, {"op": "checkpoints", "look": False}))["checkpoints"]
        assert [c["reverted"] for c in quick if c["callId"] in calls] == [False, False], quick
        again = await control.ask(door, {"op": "revert", "callId": calls[1]})
        assert again["ok"], again
        whole = await control.ask(door, {"op": "revert", "callId": calls[0]})
        assert whole["ok"], whole
        assert await _code(agent, dxf, COUNT_DXF) == before
        assert all(c["hostRunning"] for c in (await control.ask(door, {"op": "checkpoints"}))["checkpoints"])
        hosts.stop_all()  # the host is gone: its calls are listed as such, and cannot be reverted
        with anyio.fail_after(30):
            while any(
                c["hostRunning"] for c in (await control.ask(door, {"op": "checkpoints"}))["checkpoints"]
            ):
                await anyio.sleep(0.3)
        shown = await anyio.to_thread.run_sync(_policy, "checkpoints")
        assert "(its host is gone" not in shown.stdout and "are not listed (--gone)" in shown.stdout, shown
        every = await anyio.to_thread.run_sync(_policy, "checkpoints", "--gone")
        assert "(its host is gone: it cannot be reverted)" in every.stdout, every.stdout


async def test_a_call_already_undone_by_hand_reverts_to_nothing_more_not_to_someone_changed_it(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path
) -> None:
    """The dashboard's Undo (or navigate_history) took a call's step back; reverting that call then
    said "someone changed ... (its last steps are now []). Nothing was undone, so their work stays"."""
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)
        await _code(agent, dxf, "msp.add_circle((0, 0), 5)")
        call_id = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-1]["callId"]
        step = await find_target(agent, "navigate_history", "DXF")
        undo = {"id": step["id"], "arguments": {"direction": "back"}}
        assert not (await call(agent, "invoke_dynamic", undo)).is_error
        shown = await anyio.to_thread.run_sync(_policy, "revert", call_id)
        assert shown.returncode == 0, shown.stderr
        assert "was already back where it was before" in shown.stdout and "someone" not in shown.stdout
        assert await _code(agent, dxf, COUNT_DXF) == before  # nothing more was undone


async def test_a_revert_after_a_save_says_the_file_still_holds_the_reverted_steps(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path
) -> None:
    """The agent changes the drawing and saves it; the person reverts the change. The drawing goes
    back, but the file on disk still holds the change: the revert says so (the CLI, the answer),
    and so does an undo past the save; once saved again, nothing is said."""
    drawing = host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        save = await find_target(agent, "save_document", "DXF")
        step = await find_target(agent, "navigate_history", "DXF")
        await _code(agent, dxf, "msp.add_circle((0, 0), 5)")
        assert not (await call(agent, "invoke_dynamic", {"id": save["id"], "arguments": {}})).is_error
        call_id = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-1]["callId"]
        shown = await anyio.to_thread.run_sync(_policy, "revert", call_id)
        assert shown.returncode == 0, shown.stderr
        assert f"The file of {drawing} on disk still holds 1 step(s) now undone" in shown.stdout
        assert "save the document (the agent's save_document) to write it" in shown.stdout, shown.stdout
        assert "CIRCLE" in drawing.read_text()  # as said: the revert did not touch the file

        forward = {"id": step["id"], "arguments": {"direction": "forward"}}
        back = {"id": step["id"], "arguments": {"direction": "back"}}
        assert "savedFileHolds" not in (await call(agent, "invoke_dynamic", forward)).structured_content
        undo = (await call(agent, "invoke_dynamic", back)).structured_content
        assert len(undo["savedFileHolds"]) == 1 and "the file still holds them" in undo["message"], undo
        assert not (await call(agent, "invoke_dynamic", {"id": save["id"], "arguments": {}})).is_error
        redo = (await call(agent, "invoke_dynamic", forward)).structured_content
        undo = (await call(agent, "invoke_dynamic", back)).structured_content
        assert "savedFileHolds" not in redo and "savedFileHolds" not in undo, undo


async def test_a_revert_follows_its_document_saved_as_another_file(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """After the agent's save_document(filePath=copy.dxf), its revert answered that the original was
    "not the active document any more; activate it": it was the same document, renamed, with the
    agent's steps still in its history, and no longer open under the old name."""
    drawing = host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    copy = tmp_path / "copy.dxf"
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        save = await find_target(agent, "save_document", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)
        await _code(agent, dxf, "msp.add_circle((0, 0), 5)")
        await _code(agent, dxf, "msp.add_line((0, 0), (1, 1))")
        saved = await call(agent, "invoke_dynamic", {"id": save["id"], "arguments": {"filePath": str(copy)}})
        assert not saved.is_error and saved.structured_content["savedAs"] is True
        first = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][0]
        assert first["document"] == str(drawing)
        done = await _own(agent, "revert_calls", {"callId": first["callId"], "since": True})
        assert not done.is_error, done.structured_content
        (went,) = done.structured_content["undone"]
        assert went["steps"] == 2 and went["savedAs"] == str(copy)
        assert went["note"].startswith(f"The file of {copy} on disk still holds 2 step(s) now undone")
        assert await _code(agent, dxf, COUNT_DXF) == before


async def test_a_revert_since_spans_a_save_as_between_the_calls_and_names_the_file_to_activate(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """A save-as between the agent's own calls split them by file name: since the first, the revert
    took the second for someone else's change; and, another document active, it said to activate a
    file no longer open under that name."""
    drawing = host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    other = tmp_path / "other.dxf"
    shutil.copy(drawing, other)
    copies = [tmp_path / "c1.dxf", tmp_path / "c2.dxf"]
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        save = await find_target(agent, "save_document", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)

        async def save_as(path: Path) -> None:
            arguments = {"filePath": str(path)}
            assert not (
                await call(agent, "invoke_dynamic", {"id": save["id"], "arguments": arguments})
            ).is_error

        await _code(agent, dxf, "# one\nmsp.add_circle((0, 0), 5)")
        await save_as(copies[0])
        await _code(agent, dxf, "# two\nmsp.add_line((0, 0), (1, 1))")
        calls = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        assert [c["document"] for c in calls] == [str(drawing), str(copies[0])]
        done = await _own(agent, "revert_calls", {"callId": calls[0]["callId"], "since": True})
        assert not done.is_error, done.structured_content
        assert [u["steps"] for u in done.structured_content["undone"]] == [2]
        assert await _code(agent, dxf, COUNT_DXF) == before

        await _code(agent, dxf, "# three\nmsp.add_circle((0, 0), 7)")
        await save_as(copies[1])
        opened = await find_target(agent, "open_document", "DXF")
        assert not (
            await call(agent, "invoke_dynamic", {"id": opened["id"], "arguments": {"filePath": str(other)}})
        ).is_error
        third = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-1]
        stopped = await _own(agent, "revert_calls", {"callId": third["callId"]})
        text = stopped.structured_content.get("error", "")
        assert stopped.is_error and f"{copies[0]} (saved as {copies[1]} since) is not the active" in text, (
            text
        )
        assert f"activate {copies[1]}, then revert again" in text


async def test_calls_whose_later_ones_were_undone_by_hand_are_reverted_up_to_where_the_stack_stands(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """The person pressed Undo on the agent's second step: a revert since the first answered that
    someone changed the drawing, and a revert of the first alone said to revert since it instead."""
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        step = await find_target(agent, "navigate_history", "DXF")
        back = {"id": step["id"], "arguments": {"direction": "back"}}
        before = await _code(agent, dxf, COUNT_DXF)
        for since in (True, False):
            await _code(agent, dxf, "# one\nmsp.add_circle((0, 0), 5)")
            await _code(agent, dxf, "# two\nmsp.add_line((0, 0), (1, 1))")
            calls = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-2:]
            assert not (await call(agent, "invoke_dynamic", back)).is_error  # the person's Undo of "two"
            done = await _own(agent, "revert_calls", {"callId": calls[0]["callId"], "since": since})
            assert not done.is_error, done.structured_content
            (went,) = done.structured_content["undone"]
            assert went["steps"] == 1, went
            if since:
                assert (
                    went["undoneByHand"] == [calls[1]["callId"]] and "undone by hand already" in went["note"]
                )
            assert await _code(agent, dxf, COUNT_DXF) == before


async def test_the_person_reverts_and_saves_in_one_command(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """A revert put the drawing back but its file kept the agent's change, and the person had no way
    to save it but asking the agent."""
    drawing = host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        save = await find_target(agent, "save_document", "DXF")
        marker = "msp.add_text('AGENT-WAS-HERE')"
        await _code(agent, dxf, marker)
        assert not (await call(agent, "invoke_dynamic", {"id": save["id"], "arguments": {}})).is_error
        assert "AGENT-WAS-HERE" in drawing.read_text()
        call_id = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-1]["callId"]
        done = await anyio.to_thread.run_sync(_policy, "revert", call_id, "--save")
        assert done.returncode == 0, done.stderr
        assert (
            f"  Saved: Saved floorplan.dxf to {drawing}." in done.stdout and "still holds" not in done.stdout
        ), done.stdout
        assert "AGENT-WAS-HERE" not in drawing.read_text()


async def test_a_call_reverted_to_nothing_between_others_does_not_send_the_revert_in_circles(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """Steps a, b, c; the person undid b and c; reverting b alone went back nothing (and marked it
    reverted); then a since answered "someone changed it between a and c; revert since c first", and
    since c, "someone changed it since c"."""
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        step = await find_target(agent, "navigate_history", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)
        for n in range(3):
            await _code(agent, dxf, f"# step {n}\nmsp.add_circle((0, 0), {n + 1})")
        a, b, c = [
            x["callId"] for x in (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        ]
        back = {"id": step["id"], "arguments": {"direction": "back", "steps": 2}}
        assert not (await call(agent, "invoke_dynamic", back)).is_error  # the person's Undo, twice
        nothing = await _own(agent, "revert_calls", {"callId": b})
        assert not nothing.is_error and nothing.structured_content["undone"][0]["steps"] == 0
        done = await _own(agent, "revert_calls", {"callId": a, "since": True})
        assert not done.is_error, done.structured_content
        (went,) = done.structured_content["undone"]
        assert went["steps"] == 1 and went["undoneByHand"] == [c], went
        assert await _code(agent, dxf, COUNT_DXF) == before


async def test_a_person_asked_to_allow_the_agents_revert_sees_which_calls_it_would_undo(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """Under confirm-changes, the agent's revert_calls is asked about; the question names each call
    the revert would undo (id, host, document, step), not only the id the agent passed."""
    drawing = host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    env = policy_env(tmp_path, {"profile": "confirm-changes", "previewChanges": False})
    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        await _code(agent, dxf, "# Add a circle\nmsp.add_circle((0, 0), 5)")
        await _code(agent, dxf, "# Add a line\nmsp.add_line((0, 0), (1, 1))")
        calls = [
            c["callId"] for c in (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        ]
        del asked[:]
        done = await _own(agent, "revert_calls", {"callId": calls[0], "since": True})
        assert not done.is_error, done
        assert len(asked) == 1 and "It would undo 2 agent call(s), on every host they changed:" in asked[0]
        for call_id, step in zip(calls, ("Add a circle", "Add a line"), strict=True):
            assert f"  {call_id} at " in asked[0] and f"{drawing}: {step} (1 step(s))" in asked[0], asked[0]
        del asked[:]
        again = await _own(agent, "revert_calls", {"callId": calls[1]})
        assert again.is_error and "It would undo nothing: " in asked[0] and "reverted already" in asked[0]


async def _listed(agent: Any, **arguments: Any) -> dict[str, Any]:
    return (await _own(agent, "list_checkpoints", arguments)).structured_content


async def test_calls_on_hosts_no_longer_running_are_counted_not_listed_unless_asked(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """A trial's list_checkpoints held 24 calls after 40 minutes, most of them on hosts long closed
    that no revert can reach. They are counted (and listed with gone=true)."""
    kept, closed = tmp_path / "kept.dxf", tmp_path / "closed.dxf"
    for path in (kept, closed):
        shutil.copy(SAMPLES / "floorplan.dxf", path)
    hosts.start("dxf", str(kept))
    going = hosts.start("dxf", str(closed))
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 2)
        for found in await find(agent, "execute_python_code", limit=8):
            if found["target"] == "execute_python_code":
                await _code(agent, found, "msp.add_circle((0, 0), 5)")
        both = await _listed(agent)
        assert both["count"] == 2 and "notRunning" not in both, both
        going.terminate()
        going.wait(10)
        with anyio.fail_after(30):
            while "notRunning" not in (
                listed := (await _own(agent, "list_checkpoints", {})).structured_content
            ):
                await anyio.sleep(0.2)
        assert listed["notRunning"] == 1 and "gone=true lists them" in listed["note"], listed
        assert [c["document"] for c in listed["checkpoints"]] == [str(kept)], listed
        every = await _listed(agent, gone=True)
        assert sorted((c["document"], c["hostRunning"]) for c in every["checkpoints"]) == [
            (str(closed), False),
            (str(kept), True),
        ], every


async def test_a_revert_past_what_the_history_keeps_is_refused_and_undoes_nothing(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FreeCAD keeps 20 steps: 23 calls reverted "went back 23 step(s)", every one listed reverted,
    while the first three had fallen off the history and the document was not back where it began."""
    monkeypatch.setenv("CADMCP_UNDO_DEPTH", "3")
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)
        for radius in range(1, 6):
            await _code(agent, dxf, f"msp.add_circle((0, 0), {radius})")
        made = await _code(agent, dxf, COUNT_DXF)
        ids = [
            c["callId"] for c in (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        ]
        refused = await _own(agent, "revert_calls", {"callId": ids[-5], "since": True})
        said = json.dumps(refused.structured_content)
        assert refused.structured_content["ok"] is False, said
        assert "keeps 3 undo step(s), fewer than the 5" in said and f"Revert since {ids[-3]}" in said, said
        assert await _code(agent, dxf, COUNT_DXF) == made  # nothing was undone
        went = await _own(agent, "revert_calls", {"callId": ids[-3], "since": True})
        assert went.structured_content["ok"] is True, went.structured_content
        assert await _code(agent, dxf, COUNT_DXF) != before  # the first two calls' circles stay


async def test_a_call_reverted_without_save_is_saved_by_a_second_revert_with_it(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """`revert CALL --save` after a revert without it answered "reverted already", so the person's
    only way to write the reverted drawing was asking the agent; once the drawing changed again,
    saving it would write the new change too, so it is refused then."""
    drawing = host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        save = await find_target(agent, "save_document", "DXF")
        await _code(agent, dxf, "msp.add_text('AGENT-WAS-HERE')")
        assert not (await call(agent, "invoke_dynamic", {"id": save["id"], "arguments": {}})).is_error
        call_id = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-1]["callId"]
        first = await anyio.to_thread.run_sync(_policy, "revert", call_id)
        assert first.returncode == 0 and "still holds" in first.stdout, first.stdout
        assert "AGENT-WAS-HERE" in drawing.read_text()
        done = await anyio.to_thread.run_sync(_policy, "revert", call_id, "--save")
        assert done.returncode == 0, done.stderr
        assert "was reverted already; Saved: Saved floorplan.dxf" in done.stdout, done.stdout
        assert "went back" not in done.stdout and "AGENT-WAS-HERE" not in drawing.read_text()
        await _code(agent, dxf, "msp.add_text('LATER')")
        refused = await anyio.to_thread.run_sync(_policy, "revert", call_id, "--save")
        assert refused.returncode == 1 and "changed since" in refused.stderr, refused.stderr
        assert "LATER" not in drawing.read_text()


async def test_revert_since_passes_over_a_call_the_person_undid_before_another_was_made(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """C1, C2, the person's Undo of C2, then C3: "revert since C1" said C1's steps "fell off" a
    history that keeps 64, and its advice went in circles ("revert since C2", then "someone changed
    it between C2 and C3"). The steps on the stack are C3's and C1's: both are undone, C2 is named
    as undone by hand."""
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        step = await find_target(agent, "navigate_history", "DXF")
        before = await _code(agent, dxf, COUNT_DXF)
        await _code(agent, dxf, "# one\nmsp.add_circle((0, 0), 5)")
        await _code(agent, dxf, "# two\nmsp.add_circle((0, 0), 7)")
        back = {"id": step["id"], "arguments": {"direction": "back"}}
        assert not (await call(agent, "invoke_dynamic", back)).is_error  # the person's Undo of "two"
        await _code(agent, dxf, "# three\nmsp.add_line((0, 0), (1, 1))")
        c1, c2, c3 = [
            c["callId"] for c in (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        ][-3:]
        done = await _own(agent, "revert_calls", {"callId": c1, "since": True})
        assert not done.is_error, done.structured_content
        (went,) = done.structured_content["undone"]
        assert went["steps"] == 2 and went["undoneByHand"] == [c2], went
        assert done.structured_content["reverted"] == [c1, c2, c3]
        assert await _code(agent, dxf, COUNT_DXF) == before


async def test_a_reverted_call_stays_reverted_when_the_agent_runs_the_same_code_again(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """The agent's call was reverted, then it ran the same code again: the new step has the old
    one's name, so the reverted call was taken for redone and listed as not reverted, with its
    Revert buttons back, while the drawing held the change once."""
    host_on_copy(hosts, tmp_path, "floorplan.dxf", "dxf")
    async with daemon_client() as agent:
        await wait_for_hosts(agent, 1)
        dxf = await find_target(agent, "execute_python_code", "DXF")
        same = "# mark\nmsp.add_circle((0, 0), 5)"
        await _code(agent, dxf, same)
        first = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"][-1]["callId"]
        assert not (await _own(agent, "revert_calls", {"callId": first})).is_error
        await _code(agent, dxf, same)
        listed = (await _own(agent, "list_checkpoints", {})).structured_content["checkpoints"]
        by_id = {c["callId"]: c for c in listed}
        assert by_id[first]["reverted"] is True, by_id[first]
        assert [c["reverted"] for c in listed[-1:]] == [False]
