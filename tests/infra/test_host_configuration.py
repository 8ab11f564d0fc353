"""A host configuration with mistakes in it: a wrong entry costs only itself, a key nothing reads
is named with the key meant, and a file that does not parse names its line while the daemon
starts on a stated fallback policy."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from cadmcp import applications
from cadmcp.applications import CONFIG_ENV, FOREIGN, UnreadableConfig
from cadmcp.cli import main as cli_main
from cadmcp.daemon.launching import configured_hosts
from cadmcp.daemon.policy import load_policy
from cadmcp.daemon.policy.rules import Subject
from tests.core.helpers import call, structured
from tests.foreign.conftest import python_server

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"

WITH_MISTAKES = """# my hosts
[hosts.Typo.server]
comand = "mcp-server-time"

[hosts.Negative.server]
command = "mcp-server-time"
callTimeoutSeconds = -5

[hosts.Fine.server]
command = "mcp-server-time"
callTimeout = 5
enviroment = { TZ = "UTC" }
"""

CUT_OFF = """[policy]
profile = "read-only
"""


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def test_a_wrong_entry_is_only_itself_unusable_and_says_what_to_fix_in_the_files_own_format(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _toml(tmp_path, WITH_MISTAKES)
    with caplog.at_level(logging.WARNING, "cadmcp.applications"):
        typo, negative, fine = configured_hosts(path)  # the daemon's view: no config_error for all
    assert fine.problem is None and fine.kind == FOREIGN and fine.server is not None
    assert typo.problem is not None and negative.problem is not None
    assert "hosts.Typo.server needs exactly one of command (stdio) or url" in typo.problem
    assert "hosts.Typo.server.comand is not a known key (did you mean command?)" in typo.problem
    assert "callTimeoutSeconds must be a number of seconds between 0.1 and 3600" in negative.problem
    for app in (typo, negative):  # the example is a TOML server table of that entry, not JSON
        assert f'[hosts.{app.name}.server]\ncommand = "mcp-server-time"' in app.problem
        assert '{"hosts"' not in app.problem and str(path) in app.problem
        assert app.launch_command()[-2:] == ("host", app.name)  # `cadmcp host NAME` says the problem
    warned = [r.getMessage() for r in caplog.records]
    assert [m for m in warned if m.startswith("The entry ")] == [typo.problem, negative.problem]
    names = [a.name for a in applications.applications(path)]
    assert names[:3] == ["Typo", "Negative", "Fine"] and {"DXF", "IFC", "Demo"} <= set(names)


def test_keys_nothing_reads_are_named_with_the_key_meant_and_the_entry_still_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "hosts.json"
    server = {"command": "mcp-server-time", "callTimeout": 5, "enviroment": {"TZ": "UTC"}}
    path.write_text(json.dumps({"hosts": {"Time": {"server": server, "Version": "1"}}, "polcy": {}}))
    with caplog.at_level(logging.WARNING, "cadmcp.applications"):
        (app,) = applications.configured(path)
    assert app.problem is None and app.server is not None and app.server.call_timeout == 120.0
    assert len(app.ignored) == 3 and any("did you mean env?" in n for n in app.ignored)  # said at launch
    text = caplog.text
    assert "hosts.Time.server.callTimeout is not a known key (did you mean callTimeoutSeconds?)" in text
    assert "hosts.Time.server.enviroment is not a known key (did you mean env?)" in text
    assert "hosts.Time.Version is not a known key (did you mean version?)" in text
    assert "polcy is not a known key (did you mean policy?)" in text


def test_a_json_file_gets_a_json_example_of_the_entrys_kind(tmp_path: Path) -> None:
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"hosts": {"Time": {"server": {"url": "ftp://x"}}, "Cad": {"comand": "x"}}}))
    time_app, cad = applications.configured(path, warn=False)
    assert time_app.problem is not None and cad.problem is not None
    assert 'for example:\n{"hosts": {"Time": {"server": {"command": "mcp-server-time"' in time_app.problem
    assert 'for example:\n{"hosts": {"Cad": {"command": ["mycad", "--cadmcp", "{filePath}"]' in cad.problem
    assert "hosts.Cad.comand is not a known key (did you mean command?)" in cad.problem
    _toml(tmp_path, "hosts = 5\n")
    example = r'for example:\n\[hosts\.MyCAD\]\ncommand = \["mycad"'
    with pytest.raises(applications.ConfigError, match=example):
        applications.configured(tmp_path / "hosts.toml")


def test_a_toml_syntax_error_names_the_line_and_the_policy_falls_back_to_confirming_changes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _toml(tmp_path, CUT_OFF)
    with pytest.raises(UnreadableConfig) as caught:
        applications.configured(path)
    message = str(caught.value)
    assert f"The host configuration {path} cannot be used: it has a TOML syntax error" in message
    assert re.search(r"at line 2, column \d+", message) and "no host can be launched" in message
    with caplog.at_level(logging.WARNING, "cadmcp.policy"):
        policy = load_policy(path, env={})  # no config_error: the daemon starts
    assert policy.profile == "confirm-changes" and str(path) in policy.source
    assert "Meanwhile the policy is the confirm-changes profile" in caplog.text and message in caplog.text
    change = policy.decide(Subject("execute_python_code", read_only=False))
    assert change.verdict == "confirm" and "TOML syntax error" in change.why and "line 2" in change.why
    assert policy.decide(Subject("get_layers", read_only=True)).verdict == "allow"


def test_host_add_refuses_a_bad_timeout_and_writes_through_a_hidden_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _toml(tmp_path, '[hosts.Git.server]\ncommand = "mcp-server-git"\n')
    monkeypatch.setenv(CONFIG_ENV, str(path))
    with pytest.raises(SystemExit, match=re.escape("--call-timeout must be 0.1 to 3600 seconds")):
        cli_main(["host", "add", "Time", "--call-timeout", "0", "--", "mcp-server-time"])
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        replaced.append((Path(src).name, str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    assert cli_main(["host", "add", "Time", "--call-timeout", "30", "--", "mcp-server-time"]) == 0
    ((tmp_name, target),) = replaced
    assert target == str(path) and tmp_name.startswith(".hosts.toml.") and tmp_name.endswith(".tmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hosts.toml"]  # nothing left beside it
    assert "Time" in capsys.readouterr().out


def test_cadmcp_host_list_and_start_say_what_is_wrong_and_host_add_force_fixes_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], runtime_dir: Path
) -> None:
    path = _toml(tmp_path, WITH_MISTAKES)
    monkeypatch.setenv(CONFIG_ENV, str(path))
    assert cli_main(["host", "list"]) == 0
    out = capsys.readouterr().out
    assert "  Typo: cannot start  [not running]" in out and "did you mean command?" in out
    assert "  Fine: mcp-server-time  [not running]" in out
    assert (
        "    ignored: hosts.Fine.server.callTimeout is not a known key (did you mean callTimeoutSeconds?)"
        in out
    )
    assert cli_main(["host", "Typo"]) == 2  # what launch_host runs for it
    assert "hosts.Typo.server needs exactly one of command" in capsys.readouterr().err
    assert cli_main(["host", "add", "Typo", "--force", "--", "mcp-server-time"]) == 0
    assert applications.find("Typo", applications.configured(path, warn=False)).problem is None  # type: ignore[union-attr]
    assert "# my hosts" in path.read_text()


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_wrong_entry_leaves_the_dxf_host_and_the_other_servers_launchable(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    time_server = python_server("mcp_server_time", "--local-timezone", "UTC")["server"]
    args = ", ".join(json.dumps(a) for a in time_server["args"])
    infra_env.config = _toml(
        tmp_path,
        WITH_MISTAKES + f"\n[hosts.Time.server]\ncommand = {json.dumps(time_server['command'])}\n"
        f"args = [{args}]\narg = []\n",
    )
    plan = shutil.copy(SAMPLE, tmp_path / "plan.dxf")
    async with infra_daemon() as session:
        dxf = await call(session, "launch_host", {"filePath": str(plan), "timeoutSeconds": 90})
        assert not dxf.is_error and dxf.structured_content["hostApp"] == "DXF", dxf
        started = await call(session, "launch_host", {"hostApp": "Time", "timeoutSeconds": 90})
        assert not started.is_error and started.structured_content["phase"] == "ready", started
        said = "hosts.Time.server.arg is not a known key (did you mean args?)"
        assert started.structured_content["configIgnored"] == [said], started
        assert said in started.structured_content["warning"]
        for name, words in (
            ("Typo", "hosts.Typo.server needs exactly one of command (stdio) or url"),
            ("Negative", "hosts.Negative.server.callTimeoutSeconds must be a number of seconds"),
        ):
            failed = await call(session, "launch_host", {"hostApp": name, "timeoutSeconds": 90})
            body = failed.structured_content
            assert failed.is_error and body["type"] == "config_error" and words in body["message"], body
            assert f"[hosts.{name}.server]\ncommand =" in body["message"], body
        listing = await structured(session, "list_host_instances")
        assert {h["hostApp"] for h in listing["hosts"]} == {"DXF", "Time"}
    log = infra_env.stderr.read_text()
    assert "The entry Typo of the host configuration" in log and "did you mean command?" in log
    assert "hosts.Fine.server.callTimeout is not a known key (did you mean callTimeoutSeconds?)" in log


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_toml_syntax_error_keeps_the_daemon_up_and_every_launch_says_where_it_is(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    infra_env.config = _toml(tmp_path, CUT_OFF)
    async with infra_daemon() as session:
        assert (await structured(session, "list_host_instances"))["hosts"] == []
        failed = await call(session, "launch_host", {"hostApp": "DXF"})
        body = failed.structured_content
        assert failed.is_error and body["type"] == "config_error", body
        assert f"{infra_env.config} cannot be used: it has a TOML syntax error" in body["message"]
        assert re.search(r"at line 2, column \d+", body["message"]), body
    log = infra_env.stderr.read_text()
    assert "TOML syntax error" in log and re.search(r"at line 2, column \d+", log)
    assert "Meanwhile the policy is the confirm-changes profile" in log
