"""Semantic ranking in a real daemon process, in front of a real DXF host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.daemon.search.semantic import MODEL_ENV, SEMANTIC_ENV
from tests.core.helpers import find, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"


async def test_daemon_finds_a_paraphrase_once_the_model_has_embedded_the_host(
    hosts: Any, daemon_client: Any
) -> None:
    hosts.start("dxf", str(SAMPLE))
    async with daemon_client(env={SEMANTIC_ENV: "on"}) as session:
        await wait_for_hosts(session, 1)
        firsts: list[str] = []
        with anyio.fail_after(90):  # the model loads and embeds the catalog in the background
            while not firsts or firsts[-1] != "navigate_history":
                items = await find(session, "take back my last change")
                firsts.append(items[0]["target"] if items else "")
                await anyio.sleep(0.2)
        # lexically the request looks like a script run; the model knows it means undo
        assert firsts[0] in ("execute_python_code", "navigate_history")


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
