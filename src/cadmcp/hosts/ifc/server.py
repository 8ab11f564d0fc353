"""The IFC host's built-in surface over an :class:`IfcAdapter`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cadmcp import __version__
from cadmcp.host.builtins import BuiltinSurface, build_server
from cadmcp.hosts.ifc.adapter import IfcAdapter
from cadmcp.hosts.ifc.documents import check_ifc_path

__all__ = ["create_adapter", "create_server"]


def create_adapter(
    paths: Sequence[str] = (), *, exec_timeout: float | None = None, defer_loading: bool = True
) -> IfcAdapter:
    """The adapter over ``paths`` (the first one active) or a new empty IFC4 project.

    The paths are checked at once (existence, type, size, IFC header) and a bad one raises
    :class:`DocumentError`; with ``defer_loading`` (the default) IfcOpenShell is imported and the
    models parsed on the first tool or resource call, so the host is ready sooner.
    """
    adapter = IfcAdapter(exec_timeout=exec_timeout)
    adapter.workspace.defer([check_ifc_path(Path(str(p))) for p in paths])
    if not defer_loading:
        adapter.workspace.documents  # noqa: B018  (loads now)
    return adapter


def create_server(
    paths: Sequence[str] = (), *, exec_timeout: float | None = None, defer_loading: bool = True
) -> BuiltinSurface:
    """The built-in surface over :func:`create_adapter` (its ``adapter`` is the :class:`IfcAdapter`)."""
    adapter = create_adapter(paths, exec_timeout=exec_timeout, defer_loading=defer_loading)
    return build_server(adapter, __version__)
