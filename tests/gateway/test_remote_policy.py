"""The person's policy on the machine that owns a host applies to calls from other machines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.wire.endpoints import RUNTIME_DIR_ENV
from tests.core.helpers import call, find_target
from tests.gateway.conftest import SAMPLES, wait_machine

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _approvals(runtime: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, RUNTIME_DIR_ENV: str(runtime)}
    return subprocess.run(
        [sys.executable, "-m", "cadmcp", "policy", *args], capture_output=True, text=True, timeout=60, env=env
    )


async def test_a_remote_change_is_denied_by_the_owning_machines_rule_and_a_confirm_waits_for_its_person(
    nats_server: Any, machines: Any, tmp_path: Path
) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    bravo.config.write_text(
        json.dumps(
            {
                "hosts": {},
                "policy": {
                    "rules": [
                        {
                            "name": "no remote echo",
                            "decision": "deny",
                            "caller": "remote",
                            "capability": "echo",
                        },
                        {
                            "name": "remote swatches",
                            "decision": "confirm",
                            "caller": "remote",
                            "readOnly": False,
                        },
                    ]
                },
            }
        )
    )
    demo = bravo.host("demo")
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    bravo.host("dxf", str(drawing))
    bravo.serve(CADMCP_GATEWAY=server.url)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 2)
        echo = await find_target(session, "echo")
        denied = await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "remote"}})
        body = denied.structured_content
        assert denied.is_error and body["type"] == "policy_denied", body
        assert body["rule"] == "no remote echo" and body["machineId"] == "bravo-render"
        assert "Nothing ran" in body["message"] and "remote caller" in body["message"]
        shown = await anyio.to_thread.run_sync(_approvals, alpha.runtime, "show", "echo")
        assert shown.returncode == 0 and shown.stdout.startswith("from the running daemon pid"), shown
        here, there = shown.stdout.split("machine bravo (bravo-render), by its own policy", 1)
        assert "allow    machine bravo, Demo 1.0" in here  # this machine's (default) policy for it
        assert "deny     Demo 1.0 pid" in there and "rule 'no remote echo'" in there  # bravo's, asked there
        status = await find_target(session, "demo://status")
        assert not (await call(session, "invoke_dynamic", {"id": status["id"]})).is_error  # reads go on

        swatch = await find_target(session, "render_swatch")
        results: list[Any] = []
        heard: list[str] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            heard.append(message or "")

        async def run() -> None:
            request = {"id": swatch["id"], "arguments": {"size": 4}}
            results.append(await call(session, "invoke_dynamic", request, progress_callback=progress))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(30):
                while (
                    "["
                    not in (
                        listed := await anyio.to_thread.run_sync(_approvals, bravo.runtime, "approvals")
                    ).stdout
                ):
                    await anyio.sleep(0.2)
            assert "Allow render_swatch on Demo 1.0" in listed.stdout
            assert "Asked by the machine alpha-ws through the gateway" in listed.stdout
            approval_id = listed.stdout.split("]", 1)[0].lstrip("[")
            answered = await anyio.to_thread.run_sync(
                _approvals, bravo.runtime, "answer", approval_id, "accept"
            )
            assert answered.returncode == 0, answered.stderr
            assert "accepted; the call ran: " in answered.stdout, answered.stdout  # what it did, as locally
        assert not results[0].is_error and results[0].content[0].type == "image"
        # the agent heard why its call waited (it heard nothing, the whole time, before)
        assert any("Waiting for the person at 'bravo' to approve render_swatch" in m for m in heard), heard

        # a script is previewed on its machine, and the yes there applies exactly the preview
        code = await find_target(session, "execute_python_code", "DXF")
        script = {"code": "msp.add_circle((0, 0), 300)"}
        async with anyio.create_task_group() as tg:

            async def run_code() -> None:
                results.append(await call(session, "invoke_dynamic", {"id": code["id"], "arguments": script}))

            tg.start_soon(run_code)
            with anyio.fail_after(60):
                while (
                    "["
                    not in (
                        listed := await anyio.to_thread.run_sync(_approvals, bravo.runtime, "approvals")
                    ).stdout
                ):
                    await anyio.sleep(0.2)
            assert "creates 1 (1 CIRCLE)" in listed.stdout and "Preview (run in the document" in listed.stdout
            approval_id = listed.stdout.split("]", 1)[0].lstrip("[")
            answered = await anyio.to_thread.run_sync(
                _approvals, bravo.runtime, "answer", approval_id, "accept"
            )
            assert answered.returncode == 0, answered.stderr
        assert not results[1].is_error and "[UNDO STEP]" in results[1].content[0].text
        # the change is bravo's person's to see and revert too, not only the calling machine's
        kept = await anyio.to_thread.run_sync(_approvals, bravo.runtime, "checkpoints")
        line = next((x for x in kept.stdout.splitlines() if "on alpha-ws" in x), None)
        assert line is not None and "msp.add_circle" in line, kept.stdout
        here = await anyio.to_thread.run_sync(_approvals, alpha.runtime, "checkpoints")
        assert "on the machine 'bravo'" in here.stdout, here.stdout  # the caller's list says where
        reverted = await anyio.to_thread.run_sync(_approvals, bravo.runtime, "revert", line.split()[0])
        assert reverted.returncode == 0 and "went back 1 step(s)" in reverted.stdout, reverted
    host_lines = [line for line in bravo.log_lines(demo.pid) if line["method"] == "tools/call"]
    assert [line["target"] for line in host_lines] == ["render_swatch"]  # echo never reached the host
    decisions = [line for line in bravo.log_text().splitlines() if " policy/decision " in line]
    assert any(
        " denied " in d and 'rule="no remote echo"' in d and "caller=remote:alpha-ws" in d for d in decisions
    )
    assert any(" confirmed " in d and 'how="approval queue"' in d for d in decisions)
