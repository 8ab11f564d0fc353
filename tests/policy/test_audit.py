"""The audit trail: every decision of the person's policy is one call-log line naming the rule,
who answered, how and when, and the preview they saw, with secrets masked as in every line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from cadmcp.daemon.policy import control
from cadmcp.userdirs import LOG_DIR_ENV
from tests.core.helpers import call, find_target, wait_for_hosts
from tests.policy.helpers import log_lines, policy_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SECRET = "hunter2-very-secret"
POLICY = {
    "profile": "confirm-changes",
    "rules": [
        {"name": "no crashes", "decision": "deny", "capability": "crash", "reason": "never"},
        {"name": "sign-ins", "decision": "confirm", "capability": "sign_in", "reason": "a person signs in"},
    ],
}


async def _answer_from_the_queue(runtime_dir: Path, answer: str) -> None:
    with anyio.fail_after(30):
        while not (doors := control.doors(runtime_dir)) or not (
            pending := (await control.ask(doors[0], {"op": "list"}))["pending"]
        ):
            await anyio.sleep(0.1)
    request = {"op": "answer", "approvalId": pending[0]["approvalId"], "answer": answer, "by": "the reviewer"}
    await control.ask(doors[0], request)


async def test_every_decision_is_in_the_call_log_with_its_rule_answer_and_preview_masked(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path
) -> None:
    hosts.start("demo")
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, POLICY)

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    async with daemon_client(era="legacy", env=env) as queued:  # cannot be asked: the approval queue
        await wait_for_hosts(queued, 2)
        sign_in = await find_target(queued, "sign_in")
        arguments = {"user": "ana", "password": SECRET}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answer_from_the_queue, runtime_dir, "decline")
            refused = await call(queued, "invoke_dynamic", {"id": sign_in["id"], "arguments": arguments})
        assert refused.structured_content["answeredBy"] == "the reviewer"
        crash = await find_target(queued, "crash")
        assert (await call(queued, "invoke_dynamic", {"id": crash["id"]})).structured_content["type"] == (
            "policy_denied"
        )
        status = await find_target(queued, "demo://status")
        assert not (await call(queued, "invoke_dynamic", {"id": status["id"]})).is_error
    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as asked:
        await wait_for_hosts(asked, 2)
        code = await find_target(asked, "execute_python_code", "DXF")
        script = f"token = {SECRET!r}\nmsp.add_line((0, 0), (5, 5))"
        applied = await call(asked, "invoke_dynamic", {"id": code["id"], "arguments": {"code": script}})
        assert not applied.is_error, applied

    with anyio.fail_after(10):
        while len(decisions := log_lines("policy/decision")) < 4:
            await anyio.sleep(0.1)
    by_target = {d["target"]: d for d in decisions}
    queue = by_target["sign_in"]
    assert queue["outcome"] == "refused" and queue["decision"] == "confirm"
    assert queue["rule"] == "sign-ins" and queue["ruleFrom"].endswith("hosts.json")
    assert (
        queue["answer"] == "decline"
        and queue["answeredBy"] == "the reviewer"
        and queue["how"] == "approval queue"
    )
    assert queue["askedAt"] <= queue["answeredAt"] and queue["waitedMs"] >= 0
    assert queue["args"] == {"user": "ana", "password": "***"}
    assert queue["caller"] == "local" and queue["host"] == "Demo/1.0" and queue["machine"]
    denied = by_target["crash"]
    assert denied["outcome"] == "denied" and denied["rule"] == "no crashes" and "answer" not in denied
    assert (
        by_target["demo://status"]["outcome"] == "allowed" and by_target["demo://status"]["rule"] == "reads"
    )
    client = by_target["execute_python_code"]
    assert (
        client["outcome"] == "confirmed"
        and client["how"] == "elicitation"
        and client["answeredBy"] == "client"
    )
    assert client["preview"]["created"] == 1 and client["preview"]["pictures"] == 2
    assert client["preview"]["previewed"].count(":") == 1
    assert client["document"].endswith("plan.dxf")
    checkpoint = log_lines("policy/checkpoint")
    assert len(checkpoint) == 1 and checkpoint[0]["target"] == "execute_python_code"
    logs = "".join(p.read_text() for p in Path(os.environ[LOG_DIR_ENV]).glob("*.log"))
    assert SECRET not in logs  # in no line of any process: arguments, code, steps
