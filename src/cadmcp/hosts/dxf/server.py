"""The DXF host's MCP server: the built-in surface over a :class:`DxfAdapter`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer

from cadmcp.host.builtins import build_server
from cadmcp.hosts.dxf.adapter import DxfAdapter
from cadmcp.hosts.dxf.documents import DocumentSet

__all__ = ["create_server"]


def create_server(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> MCPServer[Any]:
    """Check ``paths`` and build the MCP server; the drawings are read on first use (first active;
    none → a new empty drawing), so the host is ready before ezdxf is even imported."""
    from cadmcp.hosts.dxf import HOST_VERSION

    documents = DocumentSet()
    for path in paths:
        documents.open_later(path)
    documents.blank_on_first_use()
    return build_server(DxfAdapter(documents, exec_timeout), HOST_VERSION)
