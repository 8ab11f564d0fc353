"""The DXF reference host: live ezdxf drawings served over MCP (the AutoCAD analogue).

Public API used by the host runtime::

    from cadmcp.hosts.dxf import HOST_APP, HOST_VERSION, create_server
    server = create_server(["plan.dxf"], exec_timeout=None)  # the built-in surface

Importing this package is cheap; ezdxf and the MCP SDK load in :func:`create_server`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cadmcp import __version__

if TYPE_CHECKING:
    from cadmcp.host.builtins import BuiltinSurface, DocumentAdapter

__all__ = ["HOST_APP", "HOST_VERSION", "create_adapter", "create_server"]

HOST_APP = "DXF"
HOST_VERSION: str = __version__


def create_server(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> BuiltinSurface:
    """Open ``paths`` (first one active; none → a new empty drawing) and return the built-in surface.

    ``exec_timeout`` (seconds) stops runaway ``execute_python_code`` scripts; None uses the
    ``CADMCP_EXEC_TIMEOUT`` environment variable (default 60). A path that cannot be opened
    raises :class:`cadmcp.hosts.dxf.documents.DxfHostError` with a message saying why.
    Call it on the application thread.
    """
    from cadmcp.hosts.dxf.server import create_server as _create

    return _create(paths, exec_timeout=exec_timeout)


def create_adapter(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> DocumentAdapter:
    """The adapter behind :func:`create_server` (what the registry of applications starts)."""
    from cadmcp.hosts.dxf.server import create_adapter as _create

    return _create(paths, exec_timeout=exec_timeout)
