"""The IFC reference host: live IFC models through IfcOpenShell (the Revit/BIM analogue).

Public API for the host runtime::

    from cadmcp.hosts.ifc import HOST_APP, HOST_VERSION, create_server
    server = create_server(["house.ifc"], exec_timeout=60)   # the built-in surface

Importing this package is cheap; IfcOpenShell and the MCP SDK load in :func:`create_server`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cadmcp import __version__

if TYPE_CHECKING:
    from cadmcp.host.builtins import BuiltinSurface, DocumentAdapter

HOST_APP = "IFC"
HOST_VERSION: str = __version__
"""The adapter's version (IfcOpenShell's is in ``ifc://version`` and the server description)."""


def create_server(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> BuiltinSurface:
    """Open ``paths`` (first one active; none: a new empty IFC4 project) and return the built-in surface.

    ``exec_timeout`` (seconds) stops runaway ``execute_python_code`` scripts; None reads
    ``CADMCP_EXEC_TIMEOUT`` (default 60). Call it on the application thread. Paths are checked
    at once (a missing, non-IFC or unreadable file raises ``DocumentError`` with a clear
    message); IfcOpenShell is imported and the models parsed on the first tool or resource call
    (also on the application thread), so the host is ready before the model is loaded.
    """
    from cadmcp.hosts.ifc.server import create_server as _create

    return _create(paths, exec_timeout=exec_timeout)


__all__ = ["HOST_APP", "HOST_VERSION", "create_adapter", "create_server"]


def create_adapter(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> DocumentAdapter:
    """The adapter behind :func:`create_server` (what the registry of applications starts)."""
    from cadmcp.hosts.ifc.server import create_adapter as _create

    return _create(paths, exec_timeout=exec_timeout)
