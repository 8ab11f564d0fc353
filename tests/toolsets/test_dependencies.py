"""PEP 723 dependencies of a toolset module are installed with uv before it loads."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from cadmcp.userdirs import CACHE_DIR_ENV
from tests.toolsets.conftest import write

pytestmark = pytest.mark.anyio

TOML_TOOLSET = '''
# /// script
# dependencies = ["tomli-w==1.2.0"]
# ///
"""Writes TOML with a package the host does not have."""
import tomli_w
from mcp.server.mcpserver import MCPServer

server = MCPServer("toml")

@server.tool()
def to_toml(key: str, value: int) -> str:
    """Render one key as TOML."""
    return tomli_w.dumps({key: value})

@server.tool()
def lazy_version() -> str:
    """Import the dependency only when called."""
    import tomli_w as again
    return again.__name__
'''


@pytest.mark.slow
async def test_missing_dependency_is_installed_then_the_toolset_runs(
    inproc_host: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert importlib.util.find_spec("tomli_w") is None, "the test needs tomli-w to be absent"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    folder = tmp_path / "toml"
    write(folder, "toml_tools.py", TOML_TOOLSET)
    host = inproc_host([folder])
    async with host.client() as session:
        result = await session.call_tool("to_toml", {"key": "walls", "value": 12})
        assert not result.is_error, result
        assert result.content[0].text == "walls = 12\n"
        lazy = await session.call_tool("lazy_version", {})
        assert lazy.content[0].text == "tomli_w"
    (module,) = host.manager.state()[0]["modules"]
    assert module["dependencies"] == ["tomli-w==1.2.0"]
    assert list((tmp_path / "cache" / "toolset-deps").glob("*/tomli_w"))


async def test_unresolvable_dependency_is_reported(
    inproc_host: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    folder = tmp_path / "bad"
    write(folder, "bad_deps.py", '# /// script\n# dependencies = "not a list"\n# ///\nx = 1\n')
    host = inproc_host([folder])
    (module,) = host.manager.state()[0]["modules"]
    assert module["status"] == "error" and module["error"]["kind"] == "dependency"
    assert "dependencies = [" in module["error"]["message"]
