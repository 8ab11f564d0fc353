"""PEP 723 dependencies of toolset modules, installed with uv before the module loads.

A toolset module may start with an inline script block::

    # /// script
    # dependencies = ["shapely>=2"]
    # ///

The dependencies are installed once per dependency set and Python version into a cached
target directory (the same installer as `execute_python_code`, `cadmcp.host.scriptdeps`),
under `<cache>/toolset-deps`, where `<cache>` is `CADMCP_CACHE_DIR` or the user cache dir.
"""

from __future__ import annotations

from pathlib import Path

from cadmcp.host.scriptdeps import DependencyError, ensure_dependencies, parse_script_dependencies
from cadmcp.userdirs import cache_dir

__all__ = ["DependencyError", "deps_root", "install", "parse_script_dependencies"]


def deps_root() -> Path:
    """Where toolset dependency sets are installed."""
    return cache_dir() / "toolset-deps"


def install(source: str) -> tuple[list[str], Path | None]:
    """The module's declared dependencies and the directory to import them from (None if none).

    Raises `DependencyError` (with uv's message) when the block is invalid or the install fails.
    """
    deps = parse_script_dependencies(source)
    if not deps:
        return [], None
    return deps, ensure_dependencies(deps, root=deps_root())
