"""Semantic ranking in a real daemon process, in front of a real DXF host."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.daemon.search.semantic import MODEL_ENV, SEMANTIC_ENV
from tests.core.helpers import structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"


async def test_daemon_finds_a_paraphrase_once_the_model_has_embedded_the_host(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("dxf", str(SAMPLE))
    async with daemon_client(env={SEMANTIC_ENV: "on"}) as session:
        await wait_for_hosts(session, 1)
        # the host's undo, or the daemon's own revert of the agent's last call: both take it back
        undo = {"navigate_history", "revert_calls"}
        firsts: list[str] = []
        seen: list[dict[str, Any]] = []
        said: list[str | None] = []  # what each answer says of its ranking
        with anyio.move_on_after(90):  # the model loads and embeds the catalog in the background
            while not firsts or firsts[-1] not in undo or said[-1] is not None:
                answer = await structured(session, "search_dynamic", {"query": "take back my last change"})
                seen = answer["items"]
                firsts.append(seen[0]["target"] if seen else "")
                said.append(answer.get("ranking"))
                await anyio.sleep(0.2)
        assert firsts[-1] in undo, [i["target"] for i in seen[:5]]
        # while the model reads the catalog, an answer says it ranks by words only; once it is done, none
        assert said[-1] is None, said
        assert said == sorted(said, key=lambda r: r is None), said  # said, then never again
        if firsts[0] not in undo:
            assert said[0] is not None and said[0].startswith("by words only so far"), said
        # lexically the request looks like a script run; the model knows it means undo
        assert firsts[0] in {"execute_python_code"} | undo
        assert {i["target"] for i in seen[:3]} >= undo, [i["target"] for i in seen[:5]]


def test_daemon_refuses_to_start_with_an_unusable_model(tmp_path: Path, runtime_dir: Path) -> None:
    env = {**os.environ, SEMANTIC_ENV: "on", MODEL_ENV: str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "cadmcp", "daemon"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "model.onnx" in proc.stderr and SEMANTIC_ENV in proc.stderr


def test_a_daemon_whose_client_leaves_while_the_model_works_exits_cleanly(
    hosts: Any, runtime_dir: Path
) -> None:
    """A one-shot client (the Inspector CLI, a script) closes stdin a moment after starting the
    daemon, while the model is still loading or embedding the hosts' catalogs in the background."""
    hosts.start("dxf", str(SAMPLE))
    hosts.start("demo")
    env = {**os.environ, SEMANTIC_ENV: "on", "CADMCP_RUNTIME_DIR": str(runtime_dir)}
    hello = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        '"capabilities":{},"clientInfo":{"name":"one-shot","version":"1"}}}\n'
    )
    for wait in (0.8, 1.2, 1.6, 2.0):
        proc = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "daemon"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(hello)
        proc.stdin.flush()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
        _, err = proc.communicate(timeout=60)  # closes stdin: the client is gone
        assert proc.returncode == 0 and "terminate called" not in err, (wait, proc.returncode, err[-500:])
