"""Helpers shared by this toolset's modules (a `_` file: imported, not loaded as a toolset)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

import cadmcp.host

T = TypeVar("T")


def active_document() -> Any:
    """The IFC host's active document (`.file` is the live ifcopenshell model)."""
    app = cadmcp.host.current().application
    workspace = getattr(app, "workspace", None)
    if workspace is None:
        raise ToolError("This toolset needs the IFC host (cadmcp host ifc); this host has no IFC workspace.")
    return workspace.require_active()


def undoable(name: str, change: Callable[[], T]) -> T:
    """Run `change()` as one named undo step of the active document (rolled back if it raises)."""
    doc = active_document()
    doc.begin()
    try:
        result = change()
    except BaseException:
        doc.rollback()
        raise
    doc.commit(name)
    return result


def storey_of(element: Any) -> str:
    import ifcopenshell.util.element

    container = ifcopenshell.util.element.get_container(element)
    return (container.Name or container.GlobalId) if container is not None else "(not contained)"
