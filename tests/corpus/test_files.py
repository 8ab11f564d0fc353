"""Finding a corpus: files by extension under folders, in the order given, with clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from cadmcp.corpus.files import CorpusError, find


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def test_files_are_found_recursively_by_extension_in_the_order_of_the_paths(tmp_path: Path) -> None:
    a = _touch(tmp_path / "a" / "plan.DXF")
    _touch(tmp_path / "a" / "notes.txt")
    b = _touch(tmp_path / "b" / "deep" / "house.ifc")
    c = _touch(tmp_path / "b" / "part.FCStd")
    d = _touch(tmp_path / "b" / "site.dwg")
    found = find([tmp_path / "b", tmp_path / "a"])
    assert [(f.path, f.app) for f in found] == [
        (b.resolve(), "ifc"),
        (c.resolve(), "freecad"),
        (d.resolve(), "dxf"),
        (a.resolve(), "dxf"),
    ]


def test_a_file_given_twice_runs_once_and_apps_filter(tmp_path: Path) -> None:
    a = _touch(tmp_path / "plan.dxf")
    _touch(tmp_path / "house.ifc")
    found = find([a, tmp_path], apps=["dxf"])
    assert [f.path for f in found] == [a.resolve()]


def test_a_missing_path_and_an_empty_folder_say_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"does not exist; pass files or folders"):
        find([tmp_path / "nowhere"])
    with pytest.raises(CorpusError, match=r"No \.dxf, \.dwg, \.ifc or \.FCStd file"):
        find([tmp_path])
    with pytest.raises(CorpusError, match="Unknown application"):
        find([tmp_path], apps=["revit"])


def test_the_daemon_runs_with_a_private_runtime_and_a_script_limit_under_the_call_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cadmcp.corpus.runner import daemon_env

    monkeypatch.delenv("CADMCP_EXEC_TIMEOUT", raising=False)
    monkeypatch.setenv("CADMCP_LOG_DIR", "/home/someone/logs")
    env = daemon_env(tmp_path / "run", call_timeout=300)
    assert env["CADMCP_RUNTIME_DIR"] == str(tmp_path / "run") and env["CADMCP_EXEC_TIMEOUT"] == "270"
    # the run's call logs and kept documents are not the user's: its steps are not their checkpoints
    assert env["CADMCP_LOG_DIR"] == str(tmp_path / "log")
    assert env["CADMCP_RECOVERY_DIR"] == str(tmp_path / "recovered")
    assert daemon_env(tmp_path, call_timeout=45)["CADMCP_EXEC_TIMEOUT"] == "60"
    monkeypatch.setenv("CADMCP_EXEC_TIMEOUT", "20")
    assert daemon_env(tmp_path)["CADMCP_EXEC_TIMEOUT"] == "20"  # the user's own setting is kept
