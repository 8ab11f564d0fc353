"""Helpers shared by this toolset's modules (a `_` file: imported, not loaded as a toolset)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

import cadmcp.host

T = TypeVar("T")


def active_document() -> Any:
    """The DXF host's active document (`.doc` is the live ezdxf drawing, `.title` its name)."""
    app = cadmcp.host.current().application
    documents = getattr(app, "documents", None)
    if documents is None:
        raise ToolError("This toolset needs the DXF host (cadmcp host dxf); this host has no DXF documents.")
    return documents.active


def undoable(entry: Any, name: str, change: Callable[[], T]) -> T:
    """Run `change()` as one named undo step of `entry` (undone if it raises)."""
    from cadmcp.host.history import Step
    from cadmcp.hosts.dxf.execution import run_tracked

    result, changes = run_tracked(entry, change)
    if not changes.is_empty:
        entry.history.record(Step(name, changes.undo, changes.redo))
        entry.modified = True
    return result
