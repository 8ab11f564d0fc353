"""The policy through a real daemon, real demo hosts and real SDK clients of both protocol eras."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from cadmcp.daemon.launching import CONFIG_ENV
from cadmcp.daemon.policy.gate import APPROVAL_KEY
from tests.core.helpers import call, find_target, wait_for_hosts
from tests.policy.helpers import host_calls, log_lines, policy_env, wait_host_calls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ACCEPT = types.ElicitResult(action="accept", content={"approve": True})
ANSWERS = {
    "accept": ACCEPT,
    "decline": types.ElicitResult(action="decline"),
    "cancel": types.ElicitResult(action="cancel"),
    "accept-but-no": types.ElicitResult(action="accept", content={"approve": False}),
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cadmcp", *args], capture_output=True, text=True, timeout=60, env=os.environ
    )


async def _waiting_approval(timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """`cadmcp policy approvals` once a confirmation waits in the queue (its id in the first brackets)."""
    with anyio.fail_after(timeout):
        while (
            "no confirmation is waiting"
            in (listed := await anyio.to_thread.run_sync(_cli, "policy", "approvals")).stdout
        ):
            await anyio.sleep(0.2)
    return listed


async def _wait_log(method: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
    with anyio.fail_after(timeout):
        while len(lines := log_lines(method)) < count:
            await anyio.sleep(0.1)
    return lines


async def test_a_read_only_policy_denies_changes_with_the_rule_and_nothing_reaches_the_host(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    demo = hosts.start("demo")
    env = policy_env(tmp_path, {"profile": "read-only"})
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        denied = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "hi"}})
        assert denied.is_error
        body = denied.structured_content
        assert body["type"] == "policy_denied" and body["decision"] == "deny"
        assert body["rule"] == "changes" and body["ruleFrom"] == "profile read-only"
        assert (
            body["capability"] == "echo" and body["hostApp"] == "Demo" and body["executionStarted"] is False
        )
        assert "Nothing ran" in body["message"] and "cadmcp policy show echo" in body["message"]
        status = await find_target(session, "demo://status")
        read = await call(session, "invoke_dynamic", {"id": status["id"]})
        assert not read.is_error  # resources are reads
        batch = await call(session, "invoke_dynamic", {"reads": [{"id": status["id"]}]})
        assert not batch.is_error
    assert host_calls(demo.pid, "echo") == []  # the host never saw the call
    decisions = await _wait_log("policy/decision", 3)
    denial = next(d for d in decisions if d["outcome"] == "denied")
    assert denial["rule"] == "changes" and denial["target"] == "echo" and denial["args"] == {"text": "hi"}
    assert denial["caller"] == "local" and denial["host"] == "Demo/1.0"


async def test_an_edit_of_the_policy_holds_in_the_running_daemon(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """The person tightens the policy while the agent works: the next call follows the file as it
    is now, and `cadmcp policy show` says so (it kept the profile the daemon started with)."""
    hosts.start("demo")
    env = policy_env(tmp_path, {"profile": "trusted"})
    config = Path(env[CONFIG_ENV])
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        ran = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "before"}})
        assert not ran.is_error
        config.write_text('{"policy": {"profile": "read-only"}}')
        with anyio.fail_after(10):  # the file is looked at again at most a second after it changed
            while not (
                denied := await call(
                    session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "after"}}
                )
            ).is_error:
                await anyio.sleep(0.3)
        assert denied.structured_content["ruleFrom"] == "profile read-only"
        shown = _cli("policy", "show", "echo")
        assert "read-only" in shown.stdout and "trusted" not in shown.stdout, shown.stdout
        config.write_text('{"policy": {"profile": "read-only", "rules": [{"name": "x"}]}}')  # not valid
        with anyio.fail_after(10):
            while "fallback" not in (shown := _cli("policy", "show")).stdout:
                await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "again"}})
                await anyio.sleep(0.3)


@pytest.mark.parametrize("answer", ["accept", "decline", "cancel", "accept-but-no"])
async def test_a_2026_client_is_asked_in_an_input_round_and_only_yes_runs(
    hosts: Any, daemon_client: Any, tmp_path: Path, answer: str
) -> None:
    demo = hosts.start("demo")
    env = policy_env(tmp_path, {"profile": "confirm-changes"})

    async def unused(context: Any, params: Any) -> types.ElicitResult:  # declares elicitation
        raise AssertionError("the daemon asks 2026-07-28 clients in an input round, not by request")

    async with daemon_client(env=env, elicitation_callback=unused) as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        args = {"id": echo["id"], "arguments": {"text": "hello there"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        asked = first.input_requests[APPROVAL_KEY]
        message = asked.params.message
        assert message.startswith("Allow echo on Demo 1.0 (machine ")
        assert '"text":"hello there"' in message and "rule 'changes'" in message
        assert host_calls(demo.pid, "echo") == []  # asking ran nothing
        done = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses={APPROVAL_KEY: ANSWERS[answer]},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult)
        if answer == "accept":
            assert not done.is_error and done.content[0].text == "hello there"
        else:
            body = done.structured_content
            assert done.is_error and body["type"] == "not_confirmed"
            assert body["answer"] == ("decline" if answer != "cancel" else "cancel")
            assert "Nothing ran" in body["message"]
        replayed = await session.call_tool(  # a yes cannot be replayed
            "invoke_dynamic",
            args,
            input_responses={APPROVAL_KEY: ACCEPT},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert replayed.structured_content["reason"] == "request_state_used"
    expected = 1 if answer == "accept" else 0
    assert len(await wait_host_calls(demo.pid, "echo", expected)) == expected
    decision = (await _wait_log("policy/decision"))[-1]
    assert decision["how"] == "input_required" and decision["answeredBy"] == "client"
    assert decision["outcome"] == ("confirmed" if answer == "accept" else "refused")
    assert decision["askedAt"] <= decision["answeredAt"]


async def test_a_confirmed_call_keeps_its_yes_through_the_hosts_own_input_rounds(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    hosts.start("demo")
    env = policy_env(tmp_path, {"profile": "confirm-changes"})

    async def unused(context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("not asked by request")

    async with daemon_client(env=env, elicitation_callback=unused) as session:
        await wait_for_hosts(session, 1)
        item = await find_target(session, "delete_item")
        args = {"id": item["id"], "arguments": {"item": "beta"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        assert list(first.input_requests) == [APPROVAL_KEY]
        second = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses={APPROVAL_KEY: ACCEPT},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, types.InputRequiredResult) and list(second.input_requests) == ["confirm"]
        done = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses={"confirm": types.ElicitResult(action="accept", content={"confirm": True})},
            request_state=second.request_state,
            allow_input_required=True,
        )
        assert not done.is_error and done.structured_content["deleted"] is True
        assert done.structured_content["state"] == "pending:beta"


@pytest.mark.parametrize("answer", ["accept", "decline", "cancel"])
async def test_a_2025_client_that_declares_elicitation_is_asked_by_elicitation(
    hosts: Any, daemon_client: Any, tmp_path: Path, answer: str
) -> None:
    demo = hosts.start("demo")
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return ANSWERS[answer]

    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as session:
        assert session.protocol_version == "2025-11-25"
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        result = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x1"}})
        if answer == "accept":
            assert not result.is_error and result.content[0].text == "x1"
        else:
            assert result.is_error and result.structured_content["type"] == "not_confirmed"
            assert result.structured_content["answer"] == answer
    assert len(asked) == 1 and asked[0].startswith("Allow echo on Demo 1.0")
    expected = 1 if answer == "accept" else 0
    assert len(await wait_host_calls(demo.pid, "echo", expected)) == expected
    decision = (await _wait_log("policy/decision"))[-1]
    assert decision["how"] == "elicitation" and decision["answer"] == answer


async def test_a_client_that_cannot_be_asked_waits_for_the_approval_queue(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    demo = hosts.start("demo")
    policy = {
        "profile": "trusted",
        "rules": [{"name": "scripts", "decision": "confirm", "capability": "echo", "reason": "review first"}],
    }
    async with daemon_client(era="legacy", env=policy_env(tmp_path, policy)) as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        results: list[Any] = []

        async def run(text: str) -> None:
            results.append(
                await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": text}})
            )

        for text, verdict in (("queued yes", "accept"), ("queued no", "decline")):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, text)
                listed = await _waiting_approval()
                assert "Allow echo on Demo 1.0" in listed.stdout and text in listed.stdout
                assert "rule 'scripts'" in listed.stdout and "review first" in listed.stdout
                approval_id = listed.stdout.split("]", 1)[0].lstrip("[")
                answered = await anyio.to_thread.run_sync(_cli, "policy", "answer", approval_id, verdict)
                assert answered.returncode == 0, answered.stderr
                said = {  # the person hears what became of the call, not only their own answer
                    "accept": f"{approval_id}: accepted; the call ran: {text}",
                    "decline": f"{approval_id}: declined; nothing ran",
                }[verdict]
                assert answered.stdout.strip() == said, answered.stdout
            again = await anyio.to_thread.run_sync(_cli, "policy", "answer", approval_id, "decline")
            assert again.returncode == 1, again.stderr  # answered once only, and told what happened
            assert f"Confirmation {approval_id!r} was settled already: {verdict}" in again.stderr
            assert (
                "by cadmcp policy answer at " in again.stderr
                and "Your answer changed nothing" in again.stderr
            )
            if verdict == "accept":
                assert f"; the call ran: {text}." in again.stderr, again.stderr
        assert results[0].content[0].text == "queued yes"
        assert results[1].structured_content["type"] == "not_confirmed"
        assert results[1].structured_content["answeredBy"] == "cadmcp policy answer"
    assert [c["args"]["text"] for c in await wait_host_calls(demo.pid, "echo", 1)] == ["queued yes"]
    decisions = await _wait_log("policy/decision", 2)
    assert [(d["how"], d["answer"]) for d in decisions] == [
        ("approval queue", "accept"),
        ("approval queue", "decline"),
    ]


async def test_an_unanswered_confirmation_is_a_no(hosts: Any, daemon_client: Any, tmp_path: Path) -> None:
    demo = hosts.start("demo")
    env = policy_env(tmp_path, {"profile": "confirm-changes", "confirmTimeoutSeconds": 1})
    async with daemon_client(era="legacy", env=env) as session:  # no elicitation: the queue
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        result = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "late"}})
        assert result.structured_content["type"] == "not_confirmed"
        assert result.structured_content["answer"] == "timeout"
        assert "no answer counts as no" in result.structured_content["message"]
        assert "`cadmcp policy approvals`" in result.structured_content["message"]  # where to answer
    async with daemon_client(env=env, elicitation_callback=lambda *a: None) as session:  # a late 2026 answer
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        args = {"id": echo["id"], "arguments": {"text": "late"}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        await anyio.sleep(1.5)
        late = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses={APPROVAL_KEY: ACCEPT},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert late.structured_content["answer"] == "timeout"
    assert host_calls(demo.pid, "echo") == []


async def test_policy_show_prints_the_deciding_rule_for_running_hosts(hosts: Any, tmp_path: Path) -> None:
    hosts.start("demo")
    env = policy_env(
        tmp_path,
        {"profile": "read-only", "rules": [{"name": "echo ok", "decision": "allow", "capability": "echo"}]},
    )
    os.environ.update(env)
    try:
        shown = await anyio.to_thread.run_sync(_cli, "policy", "show", "e*")
        everything = await anyio.to_thread.run_sync(_cli, "policy", "show")
    finally:
        for key in env:
            os.environ.pop(key)
    assert shown.returncode == 0, shown.stderr
    assert "policy: profile read-only from" in shown.stdout
    assert "allow    Demo 1.0 pid" in shown.stdout and "echo (tool, change, destructive)" in shown.stdout
    assert "rule 'echo ok'" in shown.stdout
    assert "deny     Demo 1.0" in everything.stdout and "demo://status (resource, read)" in everything.stdout


async def test_policy_show_answers_from_the_running_daemon_and_says_so(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    hosts.start("demo")
    env = policy_env(tmp_path, {"profile": "read-only"})
    # the CLI reads another file than the daemon runs with (editing the daemon's own file raced its
    # reload, which looks once a second): the live answer must be the daemon's, not the CLI's file
    other = tmp_path / "other.json"
    other.write_text('{"policy": {"profile": "confirm-changes"}}')
    env_cli = {**env, CONFIG_ENV: str(other)}
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        os.environ.update(env_cli)
        try:
            live = await anyio.to_thread.run_sync(_cli, "policy", "show", "*")
        finally:
            for key in env_cli:
                os.environ.pop(key)
    assert live.returncode == 0, live.stderr
    first, *rest = live.stdout.splitlines()
    assert first.startswith("from the running daemon pid ") and "live configuration" in first
    assert "policy: profile read-only from" in rest[0]  # what the daemon runs with, not the file now
    assert any(line.startswith("deny     Demo 1.0 pid") and "echo" in line for line in rest)
    assert any("cadmcp 0.1.0 pid" in line and "revert_calls" in line for line in rest)
    assert any(line.startswith("allow    cadmcp") and "list_checkpoints" in line for line in rest)
    os.environ.update(env_cli)
    try:
        local = await anyio.to_thread.run_sync(_cli, "policy", "show", "echo")
    finally:
        for key in env_cli:
            os.environ.pop(key)
    assert local.stdout.startswith("no daemon runs: read from the configuration file")
    assert "policy: profile confirm-changes from" in local.stdout and "confirm  Demo 1.0" in local.stdout


async def test_an_approval_entry_says_what_its_pictures_cannot_show(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """gdsestimating's cw750-details.dxf: most of the drawing on frozen layers, and a change the
    view cannot show. The agent's preview said so ([HIDDEN], [SAME PICTURES]); the person approving
    from the pictures in the queue was told only that they were there."""
    import ezdxf

    drawing = tmp_path / "details.dxf"
    doc = ezdxf.new("R2018")
    doc.layers.add("FG-DIM").freeze()
    doc.modelspace().add_lwpolyline([(0, 0), (100, 0), (100, 60), (0, 60)], close=True)
    for n in range(6):
        doc.modelspace().add_line((n * 10, 0), (n * 10, 60), dxfattribs={"layer": "FG-DIM"})
    doc.saveas(drawing)
    hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    async with daemon_client(era="legacy", env=env) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        arguments = {"code": "doc.layers.add('FURNITURE-OLD')"}
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, session, "invoke_dynamic", {"id": code["id"], "arguments": arguments})
            listed = await _waiting_approval()
            said = " ".join(listed.stdout.split())
            assert "the pictures: The before- and after-pictures are the same" in said, listed.stdout
            assert "the pictures: [HIDDEN]" in said and "FG-DIM" in said, listed.stdout
            approval_id = listed.stdout.split("]", 1)[0].lstrip("[")
            await anyio.to_thread.run_sync(_cli, "policy", "answer", approval_id, "decline")


async def test_a_host_killed_while_its_call_waits_for_approval_withdraws_the_question(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """A host killed (-9) while the person decided: the entry stayed in the queue until its time ran
    out, and a yes answered "The call may have partly run; check the model state" with
    executionStarted true, though nothing had been sent. Now the question goes when the host does,
    and the call says that nothing ran, with no answer from anyone."""
    demo = hosts.start("demo")
    policy = {"profile": "trusted", "rules": [{"name": "ask", "decision": "confirm", "capability": "echo"}]}
    async with daemon_client(era="legacy", env=policy_env(tmp_path, policy)) as session:
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        results: list[Any] = []

        async def run() -> None:
            arguments = {"id": echo["id"], "arguments": {"text": "too late"}}
            results.append(await call(session, "invoke_dynamic", arguments))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            listed = await _waiting_approval()
            demo.kill()
            demo.wait()
            with anyio.fail_after(30):  # answered with nobody answering the question
                while not results:
                    await anyio.sleep(0.2)
        answer = results[0].structured_content
        assert (
            answer.get("executionStarted") is not True and "may have partly run" not in answer["message"]
        ), answer
        assert "went away before the call could be sent" in answer["message"], answer
        assert "nothing ran" in answer["message"].lower(), answer
        assert (
            "no confirmation is waiting"
            in (await anyio.to_thread.run_sync(_cli, "policy", "approvals")).stdout
        )
        approval_id = listed.stdout.split("]", 1)[0].lstrip("[")
        late = await anyio.to_thread.run_sync(_cli, "policy", "answer", approval_id, "accept")
        assert late.returncode == 1 and "was settled already: withdrawn at " in late.stderr, late.stderr
        assert "nothing ran" in late.stderr


async def test_under_confirm_changes_a_script_acting_outside_the_document_waits_for_the_yes(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """The preview ran the script before the person was asked: a file it wrote (even one a deny rule
    covered) was written before the answer and stayed after a no."""
    import ezdxf

    drawing = tmp_path / "plan.dxf"
    ezdxf.new("R2018").saveas(drawing)
    marker = tmp_path / "written.txt"
    hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    async with daemon_client(era="legacy", env=env) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        script = f"msp.add_line((0, 0), (1, 1))\nopen({str(marker)!r}, 'w').write('x')"
        for verdict in ("decline", "accept"):
            results: list[Any] = []

            async def run(into: list[Any] = results) -> None:
                arguments = {"id": code["id"], "arguments": {"code": script}}
                into.append(await call(session, "invoke_dynamic", arguments))

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                listed = await _waiting_approval()
                said = " ".join(listed.stdout.split())
                assert f"No preview: the script writes the file {marker}" in said, listed.stdout
                assert not marker.exists()  # nothing happened before the answer
                approval_id = listed.stdout.split("]", 1)[0].lstrip("[")
                await anyio.to_thread.run_sync(_cli, "policy", "answer", approval_id, verdict)
            assert marker.exists() == (verdict == "accept"), results
        count = await call(session, "invoke_dynamic", {"id": code["id"], "arguments": {"code": "len(msp)"}})
        assert "Result: 1" in count.content[0].text  # the line of the yes only


async def test_opening_and_switching_documents_are_reads_a_document_rule_does_not_trap_the_agent(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """Under the read-only profile the agent could not open a second drawing to read it, and a
    `document` rule on the client's files held it in the client drawing once it was active
    (`activate_document` counted as a change of that document). Opening and switching change only
    which document is active: they run, and the rules still hold for changes in each document."""
    import ezdxf

    client, own = tmp_path / "client" / "plan.dxf", tmp_path / "own.dxf"
    client.parent.mkdir()
    for path in (client, own):
        ezdxf.new("R2018").saveas(path)
    hosts.start("dxf", str(client))
    rules = [
        {"name": "client files", "decision": "deny", "document": f"{client.parent}/**", "readOnly": False}
    ]
    env = policy_env(tmp_path, {"profile": "read-only", "rules": rules})
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        script = {"id": code["id"], "arguments": {"code": "msp.add_line((0, 0), (1, 1))"}}
        denied = await call(session, "invoke_dynamic", script)
        assert denied.is_error and denied.structured_content["rule"] == "client files"
        opener = await find_target(session, "open_document", "DXF")
        opened = await call(
            session, "invoke_dynamic", {"id": opener["id"], "arguments": {"filePath": str(own)}}
        )
        assert not opened.is_error, opened.content
        denied = await call(session, "invoke_dynamic", script)  # the profile still refuses changes
        assert denied.is_error and denied.structured_content["rule"] == "changes"
        switch = await find_target(session, "activate_document", "DXF")
        back = await call(
            session, "invoke_dynamic", {"id": switch["id"], "arguments": {"document": str(client)}}
        )
        assert not back.is_error, back.content
        assert (await call(session, "invoke_dynamic", script)).structured_content["rule"] == "client files"
        away = await call(
            session, "invoke_dynamic", {"id": switch["id"], "arguments": {"document": "own.dxf"}}
        )
        assert not away.is_error, away.content
    decisions = await _wait_log("policy/decision", 6)
    ran = [d["target"] for d in decisions if d["outcome"] != "denied"]
    assert ran.count("activate_document") == 2 and "open_document" in ran, decisions


async def test_a_document_rule_looks_at_the_document_a_call_opens_or_switches_to(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """A rule denying everything on a folder let the agent open a file there (the rule looked at the
    document active before), then held it there: even switching away was refused."""
    import ezdxf

    secret, own = tmp_path / "secret" / "s.dxf", tmp_path / "own.dxf"
    secret.parent.mkdir()
    for path in (secret, own):
        ezdxf.new("R2018").saveas(path)
    rules = [{"name": "secret files", "decision": "deny", "document": f"{secret.parent}/**"}]
    hosts.start("dxf", str(secret), str(own))  # the person opened both; the secret one is active
    async with daemon_client(env=policy_env(tmp_path, {"rules": rules})) as session:
        (host,) = (await wait_for_hosts(session, 1))["hosts"]
        assert host["state"]["activeDocument"] == "s.dxf", host["state"]
        switch = await find_target(session, "activate_document", "DXF")
        away = await call(
            session, "invoke_dynamic", {"id": switch["id"], "arguments": {"document": "own.dxf"}}
        )
        assert not away.is_error, away.content  # leaving the secret file is no call on it
        back = await call(session, "invoke_dynamic", {"id": switch["id"], "arguments": {"document": "s.dxf"}})
        assert back.is_error and back.structured_content["rule"] == "secret files", back.content
        opener = await find_target(session, "open_document", "DXF")
        opened = await call(
            session, "invoke_dynamic", {"id": opener["id"], "arguments": {"filePath": str(secret)}}
        )
        assert opened.is_error and opened.structured_content["rule"] == "secret files", opened.content
        assert str(secret) in opened.structured_content["document"]
