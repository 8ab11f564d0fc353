"""The IFC host's MCP server: the built-in surface over an :class:`IfcAdapter`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from cadmcp import __version__
from cadmcp.host.builtins import build_server
from cadmcp.hosts.ifc.adapter import IfcAdapter
from cadmcp.hosts.ifc.documents import check_ifc_path

__all__ = ["create_server"]


def create_server(
    paths: Sequence[str] = (), *, exec_timeout: float | None = None, defer_loading: bool = True
) -> MCPServer:
    """Serve the built-ins over ``paths`` (the first one active) or a new empty IFC4 project.

    The paths are checked at once (existence, type, size, IFC header) and a bad one raises
    :class:`DocumentError`; with ``defer_loading`` (the default) IfcOpenShell is imported and the
    models parsed on the first tool or resource call, so the host is ready sooner.
    """
    adapter = IfcAdapter(exec_timeout=exec_timeout)
    adapter.workspace.defer([check_ifc_path(Path(str(p))) for p in paths])
    if not defer_loading:
        adapter.workspace.documents  # noqa: B018  (loads now)
    server = build_server(adapter, __version__)
    server.ifc_host = adapter  # type: ignore[attr-defined]  # for tests and the bench
    return server
