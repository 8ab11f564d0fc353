"""Helpers shared by this toolset's modules (a `_` file: imported, not loaded as a toolset)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

import cadmcp.host

T = TypeVar("T")


def _documents() -> Any:
    """The DXF host's open documents (`cadmcp.host.current().application`)."""
    app = cadmcp.host.current().application
    if not (hasattr(app, "active") and hasattr(app, "transaction")):
        raise ToolError("This toolset needs the DXF host (cadmcp host dxf); this host has no DXF documents.")
    return app


def active_document() -> Any:
    """The DXF host's active document (`.doc` is the live ezdxf drawing, `.title` its name)."""
    return _documents().active


def undoable(entry: Any, name: str, change: Callable[[], T]) -> T:
    """Run `change()` on the active document as one named undo step (undone if it raises)."""
    documents = _documents()
    if documents.active is not entry:
        raise ToolError(f"{entry.title} is no longer the active document; run the tool again.")
    with documents.transaction(name):
        return change()
