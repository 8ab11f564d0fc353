"""`cadmcp eval corpus` end to end: generated DXF, IFC and FreeCAD files through a real daemon,
real hosts and a real MCP SDK client; every step runs and the dumps compare exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import ezdxf
import pytest

from cadmcp.corpus.files import find
from cadmcp.corpus.runner import FileResult, Settings, run_all
from cadmcp.hosts.ifc.modelgen import build_house
from tests.conftest import require_component

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(600)


def _dxf(path: Path) -> Path:
    doc = ezdxf.new("R2013", setup=True)
    block = doc.blocks.new("DOOR")
    block.add_arc((0, 0), 900, 0, 90)
    msp = doc.modelspace()
    msp.add_lwpolyline([(0, 0), (6000, 0), (6000, 4000), (0, 4000)], close=True)
    msp.add_blockref("DOOR", (1000, 0))
    msp.add_linear_dim(base=(0, -600), p1=(0, 0), p2=(6000, 0)).render()
    doc.saveas(path)
    return path


def _files(tmp_path: Path, freecad: bool) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    _dxf(folder / "plan.dxf")
    build_house().write(str(folder / "house.ifc"))
    if freecad:
        shutil.copyfile(ROOT / "samples" / "bracket.FCStd", folder / "bracket.FCStd")
    return folder


def _assert_exact(result: FileResult) -> None:
    assert result.launched and result.opened, result
    assert result.pictures and all(p.ok and not p.blank for p in result.pictures), result.pictures
    assert result.changed, result.change_error
    assert result.undo_exact, result.undo_diff
    assert result.reopen_exact, result.reopen_diff
    assert result.failures() == []


def test_generated_drawing_model_and_part_pass_every_step(tmp_path: Path, runtime_dir: Path) -> None:
    has_freecad = shutil.which("freecadcmd") is not None
    if not has_freecad:
        require_component("freecad", "FreeCAD is not installed (bash .ci/deps/freecad.sh)")
    folder = _files(tmp_path, has_freecad)
    seen: list[str] = []
    results = run_all(
        find([folder]), Settings(launch_timeout=120, call_timeout=180, jobs=2), lambda r: seen.append(r.path)
    )
    assert sorted(seen) == sorted(r.path for r in results)
    assert {r.app for r in results} == {"dxf", "ifc", "freecad"}
    for result in results:
        _assert_exact(result)
    dxf = next(r for r in results if r.app == "dxf")
    assert "added LINE" in (dxf.change or "")
    assert dxf.timings["launch_host"] > 0 and dxf.seconds > 0


def test_a_dwg_drawing_runs_as_a_dxf_host_document_and_is_saved_as_dxf(
    tmp_path: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "hosts" / "dxf"))
    from dwg_helpers import require_reader, write_pair

    from cadmcp.hosts.dxf.dwg import READER_ENV

    monkeypatch.setenv(READER_ENV, str(require_reader()))
    folder = tmp_path / "models"
    folder.mkdir()
    dwg, _twin = write_pair(tmp_path)
    shutil.copyfile(dwg, folder / "plan.dwg")
    files = find([folder])
    assert [(f.path.name, f.app) for f in files] == [("plan.dwg", "dxf")]
    (result,) = run_all(files, Settings(launch_timeout=120, call_timeout=180))
    _assert_exact(result)
    assert "added LINE" in (result.change or "")


def test_the_command_prints_a_row_per_file_totals_and_json(tmp_path: Path, runtime_dir: Path) -> None:
    """A whole drawing is rated ok; a copy cut short (at a group's start) opens, but rated 'warn'."""
    folder = tmp_path / "models"
    folder.mkdir()
    lines = _dxf(folder / "plan.dxf").read_text().splitlines(keepends=True)
    (folder / "cut.dxf").write_text("".join(lines[: len(lines) * 3 // 4 // 2 * 2]))
    out = tmp_path / "corpus.json"
    run = subprocess.run(
        [sys.executable, "-m", "cadmcp", "eval", "corpus", str(folder), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("app ")
    rows = {line.split()[1]: line for line in lines[1:3]}
    assert rows["plan.dxf"].split()[3] == "ok" and rows["plan.dxf"].rstrip().endswith("-")
    assert rows["cut.dxf"].split()[3] == "warn" and "warned: " in rows["cut.dxf"], rows
    assert "cut short" in rows["cut.dxf"]
    assert any(line.split() == ["opened,", "warned", "1", "1"] for line in lines), run.stdout
    data = json.loads(out.read_text())
    assert data["totals"]["dxf"]["undo_exact"] == 2 and data["totals"]["dxf"]["warned"] == 1
    assert data["classes"] == {}
    (cut,) = [f for f in data["files"] if f["path"].endswith("cut.dxf")]
    assert any("cut short" in w for w in cut["warnings"])
    logs = Path(os.environ["CADMCP_LOG_DIR"])  # the user's: the run logged into a folder of its own
    assert not any("plan.dxf" in f.read_text(errors="replace") for f in logs.rglob("*.log")), logs


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nowhere/at/all"], "does not exist"),
        (["--jobs", "0", "."], "--jobs must be 1-8"),
        (["--call-timeout", "0", "."], "--call-timeout must be 1-3600"),
    ],
)
def test_bad_arguments_are_refused_with_what_to_pass(args: list[str], message: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cadmcp", "eval", "corpus", *args], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr
