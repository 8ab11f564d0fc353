"""Foreign hosts through a real daemon: third-party MCP servers from the registries, and small
generated servers for the catalog shapes the daemon must bound, refuse or flag."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cadmcp.applications import CONFIG_ENV
from tests.conftest import require_component
from tests.foreign.servers import npm_command, python_command

SHAPES = Path(__file__).with_name("shapes.py")


@pytest.fixture
def everything() -> list[str]:
    """The command line of @modelcontextprotocol/server-everything (its transport argument left off)."""
    command = npm_command("everything")
    require_component("mcp-servers", command if isinstance(command, str) else None)
    assert not isinstance(command, str)
    return [command[0], *command[1]]


@pytest.fixture
def no_virtualenv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH without any virtual environment's `bin` (`./dev` puts the project's first): `host add`
    stores a command found there by its full path, which tests of the entries as written do not
    want. The test of that storing sets its own PATH."""
    kept = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if not (Path(p).parent / "pyvenv.cfg").is_file()
    ]
    monkeypatch.setenv("PATH", os.pathsep.join(kept) or os.defpath)


def python_server(module: str, *args: str, **more: Any) -> dict[str, Any]:
    """A host entry for a Python reference server (a dev dependency) run by this interpreter."""
    command, argv = python_command(module, *args)
    return {"server": {"command": command, "args": argv, **more}}


def shape_server(shape: str) -> dict[str, Any]:
    return {"server": {"command": sys.executable, "args": [str(SHAPES), shape]}}


def config_env(tmp_path: Path, hosts: dict[str, Any], **sections: Any) -> dict[str, str]:
    """The daemon's and the proxies' environment: a configuration file with these hosts."""
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"hosts": hosts, **sections}))
    return {CONFIG_ENV: str(path)}
