"""Helpers shared by this toolset's modules (a `_` file: imported, not loaded as a toolset)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

import cadmcp.host


def _freecad() -> Any:
    """The FreeCAD host's adapter (`cadmcp.host.current().application`)."""
    app = cadmcp.host.current().application
    if not (hasattr(app, "active_document") and hasattr(app, "transaction")):
        raise ToolError("This toolset needs the FreeCAD host (cadmcp host freecad); this host is another.")
    return app


def active_document() -> Any:
    """The active FreeCAD document (an App.Document)."""
    return _freecad().active_document()


def transaction(name: str) -> Any:
    """`with transaction("Set length"):` edits become one undo step, recomputed, aborted on error."""
    return _freecad().transaction(name)
