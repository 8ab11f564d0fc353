"""The DXF host's built-in surface over a :class:`DxfAdapter`."""

from __future__ import annotations

from collections.abc import Sequence

from cadmcp.host.builtins import BuiltinSurface, build_server
from cadmcp.hosts.dxf.adapter import DxfAdapter
from cadmcp.hosts.dxf.documents import DocumentSet

__all__ = ["create_adapter", "create_server"]


def create_adapter(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> DxfAdapter:
    """Check ``paths`` and make the adapter; the drawings are read on first use (first active;
    none → a new empty drawing), so the host is ready before ezdxf is even imported."""
    documents = DocumentSet()
    for path in paths:
        documents.open_later(path)
    documents.blank_on_first_use()
    return DxfAdapter(documents, exec_timeout)


def create_server(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> BuiltinSurface:
    """The built-in surface over :func:`create_adapter` (``paths``, ``exec_timeout``)."""
    from cadmcp.hosts.dxf import HOST_VERSION

    return build_server(create_adapter(paths, exec_timeout=exec_timeout), HOST_VERSION)
