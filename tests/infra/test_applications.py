"""The registry of applications: what the CLI and launch_host start, and a fourth application
added as docs/hosts/adapters.md says (samples/adapters/notes_host.py, launched by extension)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cadmcp import applications
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.launching import builtin_hosts, configured_hosts
from cadmcp.walkthrough import SAMPLES
from tests.core.helpers import call, find_target, structured

NOTES_HOST = Path(__file__).resolve().parents[2] / "samples" / "adapters" / "notes_host.py"


def test_launch_host_the_cli_and_the_walkthrough_read_the_one_registry() -> None:
    assert builtin_hosts() == list(applications.BUILTIN)
    for app in applications.BUILTIN:
        assert app.command_for(app.host_version())[3:5] == ["host", app.key]  # python -m cadmcp host KEY
    assert SAMPLES == {"dxf": "floorplan.dxf", "ifc": "house.ifc"}
    root = Path(__file__).resolve().parents[2] / "samples"
    assert all((root / app.sample).is_file() for app in applications.BUILTIN if app.sample)


def test_a_configured_adapter_is_a_document_application(tmp_path: Path) -> None:
    config = tmp_path / "hosts.json"
    config.write_text(
        json.dumps({"hosts": {"Notes": {"adapter": "notes_host.py:open_notebooks", "extensions": ["JSON"]}}})
    )
    (app,) = applications.configured(config)
    assert app.kind == applications.DOCUMENT and app.extensions == (".json",) and app.version == "1.0"
    assert app.adapter == f"{tmp_path / 'notes_host.py'}:open_notebooks"  # relative to the file
    (configured,) = configured_hosts(config)
    assert configured.command_for("1.0", ["/x/a.json"])[-3:] == ["host", "Notes", "/x/a.json"]
    config.write_text(json.dumps({"hosts": {"Notes": {"adapter": "no-colon", "extensions": [".json"]}}}))
    (wrong,) = configured_hosts(config)  # only this entry is wrong: it cannot start, saying why
    assert wrong.problem is not None and "file.py:factory" in wrong.problem
    assert wrong.extensions == (".json",)  # a .json file is not sent to another host meanwhile
    config.write_text("{not json")
    with pytest.raises(DaemonError) as refused:
        configured_hosts(config)
    assert refused.value.type == "config_error" and "JSON syntax error" in refused.value.message


def test_cadmcp_host_names_the_applications_it_knows(tmp_path: Path) -> None:
    (tmp_path / "hosts.json").write_text(json.dumps({"hosts": {"Notes": {"adapter": "n.py:f"}}}))
    run = subprocess.run(
        [sys.executable, "-m", "cadmcp", "host", "rhino"],
        capture_output=True,
        text=True,
        env={"CADMCP_HOSTS_CONFIG": str(tmp_path / "hosts.json"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert run.returncode == 2
    assert "no application 'rhino'" in run.stderr and "dxf" in run.stderr and "freecad" in run.stderr
    assert "Notes" in run.stderr


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_notes_sample_registered_in_the_config_is_launched_by_extension(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    infra_env.configure_hosts(
        {"Notes": {"adapter": f"{NOTES_HOST}:open_notebooks", "extensions": [".json"], "version": "1.0"}}
    )
    book = tmp_path / "ideas.json"
    book.write_text(json.dumps({"notes": {"Groceries": "milk", "Empty": ""}}))
    async with infra_daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(book)})
        assert launched["hostApp"] == "Notes" and launched["version"] == "1.0"
        assert launched["phase"] == "ready" and launched["source"] == str(infra_env.config)
        mine = {"hostInstanceId": launched["hostInstanceId"]}
        context = await find_target(session, "notes://model/context", **mine)
        run = await find_target(session, "execute_python_code", **mine)
        code = {"code": "notes['Ideas'] = 'more'", "description": "add a note"}
        changed = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": code})
        assert not changed.is_error, changed
        read = await call(session, "invoke_dynamic", {"id": context["id"]})
        assert json.loads(read.content[0].resource.text)["notes"] == ["Empty", "Groceries", "Ideas"]
