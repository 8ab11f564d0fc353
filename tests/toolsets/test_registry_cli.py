"""The toolset registry and `cadmcp toolset add|remove|list`: per host/version files, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadmcp.host.toolsets import TOOLSETS_ENV, Registry, RegistryError, Scope
from cadmcp.host.toolsets.cli import main
from cadmcp.host.toolsets.registry import configured_sources
from tests.toolsets.conftest import tool_module, write


def test_add_list_remove_round_trip_per_host_and_version(
    tmp_path: Path, config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "walls"
    write(folder, "walls.py", tool_module("walls", ("count_walls", "Count walls.")))
    assert main(["add", str(folder), "--host", "DXF", "--version", "2026"]) == 0
    said = capsys.readouterr().out
    assert "1 module(s)" in said and "no host app is called" not in said
    assert main(["add", str(folder), "--host", "DFX"]) == 0  # a typo: added, and said
    assert "Note: no host app is called 'DFX' here (known: " in capsys.readouterr().out
    assert main(["remove", str(folder), "--host", "DFX"]) == 0
    capsys.readouterr()
    file = config_dir / "hosts" / "DXF" / "2026" / "toolsets.json"
    assert json.loads(file.read_text()) == {"toolsets": [str(folder)]}
    assert not (config_dir / "hosts" / "DXF" / "2025").exists()  # another version is untouched

    assert main(["list", "--host", "DXF", "--version", "2026", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["scope"] == "DXF 2026"
    assert rows[0]["toolsets"] == [{"path": str(folder), "status": "ok", "modules": ["walls.py"]}]

    assert main(["remove", str(folder), "--host", "DXF", "--version", "2026"]) == 0
    assert json.loads(file.read_text()) == {"toolsets": []}
    assert main(["remove", str(folder), "--host", "DXF", "--version", "2026"]) == 2
    assert "is not registered for DXF 2026" in capsys.readouterr().err


def test_a_host_name_in_another_case_is_the_hosts_own(
    tmp_path: Path, config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`toolset add PATH --host dxf` said "Added ... for dxf" into a registry no host reads (the DXF
    host reads hosts/DXF): the toolset never loaded."""
    folder = tmp_path / "walls"
    write(folder, "walls.py", tool_module("walls", ("count_walls", "Count walls.")))
    assert main(["add", str(folder), "--host", "dxf"]) == 0
    assert "for DXF (every version)" in capsys.readouterr().out
    registered = json.loads((config_dir / "hosts" / "DXF" / "toolsets.json").read_text())
    assert registered["toolsets"] == [str(folder)]
    assert [s.path for s in configured_sources("DXF", "1.4.5") if s.path == folder] == [folder]
    assert main(["remove", str(folder), "--host", "Dxf"]) == 0


def test_relative_path_is_refused_with_the_absolute_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config_dir: Path
) -> None:
    (tmp_path / "mine").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["add", "mine", "--host", "IFC"]) == 2
    err = capsys.readouterr().err
    assert "is relative; give an absolute path" in err and str(tmp_path / "mine") in err
    assert not config_dir.exists()


def test_missing_path_is_refused_on_add_and_reported_not_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config_dir: Path
) -> None:
    assert main(["add", str(tmp_path / "nope"), "--host", "IFC"]) == 2
    assert "does not exist" in capsys.readouterr().err

    folder = tmp_path / "later-deleted"
    folder.mkdir()
    assert main(["add", str(folder), "--host", "IFC"]) == 0
    folder.rmdir()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "IFC (every version)" in out and "MISSING" in out
    assert Registry(Scope("IFC")).entries() == [str(folder)]  # still there
    sources = configured_sources("IFC", "9", [])
    assert sources[0].error is not None and sources[0].error.code == "missing_path"
    assert main(["remove", str(folder), "--host", "IFC"]) == 0  # removable although missing


def test_scopes_are_read_most_specific_first_then_env_then_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders = {n: tmp_path / n for n in ("version", "app", "all", "env", "flag")}
    for f in folders.values():
        f.mkdir()
    Registry(Scope()).add(folders["all"])
    Registry(Scope("DXF")).add(folders["app"])
    Registry(Scope("DXF", "2026")).add(folders["version"])
    Registry(Scope("DXF", "2025")).add(tmp_path)  # another version: not read
    monkeypatch.setenv(TOOLSETS_ENV, str(folders["env"]))
    sources = configured_sources("DXF", "2026", [str(folders["flag"])])
    assert [s.path for s in sources] == [folders[n] for n in ("version", "app", "all", "env", "flag")]
    assert all(s.error is None for s in sources)


def test_duplicate_bad_scope_and_malformed_file_errors(tmp_path: Path, config_dir: Path) -> None:
    registry = Registry(Scope("DXF", "1"))
    registry.add(tmp_path)
    with pytest.raises(RegistryError, match="already registered"):
        registry.add(tmp_path)
    with pytest.raises(RegistryError, match="--version needs --host"):
        Scope(None, "1")
    with pytest.raises(RegistryError, match="not a usable name"):
        Scope("../etc")
    registry.file.write_text("{not json")
    with pytest.raises(RegistryError, match=r"not valid JSON.*fix it or delete"):
        registry.entries()
    sources = configured_sources("DXF", "1", [])
    assert sources[0].error is not None and sources[0].error.code == "malformed"


def test_relative_entry_in_env_is_an_error_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOLSETS_ENV, "relative/dir")
    (source,) = configured_sources("X", "1", [])
    assert source.error is not None and source.error.code == "relative_path"


def test_cadmcp_toolset_command_is_routed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cadmcp.cli import main

    assert main(["toolset", "add", str(tmp_path), "--host", "IFC", "--version", "1"]) == 0
    assert main(["toolset", "list", "--host", "IFC", "--version", "1", "--json"]) == 0
    assert str(tmp_path) in capsys.readouterr().out
