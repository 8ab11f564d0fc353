"""`cadmcp eval dump-catalog` against a real running DXF host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cadmcp.daemon.search import build_index_from_catalog
from cadmcp.daemon.search.dump import main

pytestmark = pytest.mark.slow
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"


def test_dump_writes_the_live_catalog_without_volatile_state(
    hosts: Any, runtime_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts.start("dxf", str(SAMPLE))
    out = tmp_path / "catalog.json"
    assert main(["--out", str(out), "--runtime-dir", str(runtime_dir)]) == 0
    assert "wrote 1 host(s)" in capsys.readouterr().out
    catalog = json.loads(out.read_text())
    (host,) = catalog["hosts"]
    assert host["hostApp"] == "DXF"
    assert {"execute_python_code", "view_screenshot"} <= {t["name"] for t in host["tools"]}
    assert "dxf://model/context" in {r["uri"] for r in host["resources"]}
    assert "io.cadmcp/hostState" not in host.get("_meta", {})  # the host sends it; a catalog drops it
    index = build_index_from_catalog(catalog)
    assert index.search("undo").hits[0].target == "navigate_history"


def test_dump_with_no_host_running_says_so(
    runtime_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path / "c.json"), "--runtime-dir", str(runtime_dir)]) == 1
    assert "no running host" in capsys.readouterr().err
