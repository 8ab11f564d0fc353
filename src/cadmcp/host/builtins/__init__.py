"""The built-in surface of document hosts, defined once over an application adapter.

An application (DXF, IFC, FreeCAD, a future Revit) implements :class:`DocumentAdapter`
and gets the same tools, resources, parameter schemas, error envelopes and history and
rollback semantics as every other host::

    from cadmcp.host.builtins import build_server
    from cadmcp.host.hosting import DocumentHost

    surface = build_server(MyAdapter(paths), version="1.0")
    DocumentHost("MyCAD", "2026", surface, toolsets=[]).run()   # serve until SIGINT/SIGTERM

The guide is docs/hosts/adapters.md.

The names load on first use: a module that needs only the adapter's types (a tessellation
process, a file reader) does not load the MCP SDK by importing this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cadmcp.lazy import lazy_attributes

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from cadmcp.host.builtins.adapter import (
        COMPLETE_OPTION,
        Closed,
        DocumentAdapter,
        DocumentInfo,
        Domain,
        HostError,
        HostProfile,
        NotFound,
        Opened,
        RecordedStep,
        RequestedDocument,
        Saved,
        ScreenshotOption,
        ScriptRun,
        Shot,
        UndoStack,
        requested_outcome,
        unsaved_changes,
    )
    from cadmcp.host.builtins.navigation import HistoryStack, navigate
    from cadmcp.host.builtins.surface import (
        MAX_IMAGE_SIDE,
        MIN_IMAGE_SIDE,
        WARM_UP_ENV,
        BuiltinSurface,
        build_server,
        fit_height,
    )
    from cadmcp.host.runtime import HostRuntime

_WHERE = {
    "COMPLETE_OPTION": "adapter",
    "Closed": "adapter",
    "DocumentAdapter": "adapter",
    "DocumentInfo": "adapter",
    "Domain": "adapter",
    "HostError": "adapter",
    "HostProfile": "adapter",
    "NotFound": "adapter",
    "Opened": "adapter",
    "RecordedStep": "adapter",
    "RequestedDocument": "adapter",
    "Saved": "adapter",
    "ScreenshotOption": "adapter",
    "ScriptRun": "adapter",
    "Shot": "adapter",
    "UndoStack": "adapter",
    "requested_outcome": "adapter",
    "unsaved_changes": "adapter",
    "HistoryStack": "navigation",
    "navigate": "navigation",
    "DOMAIN_META": "surface",
    "MAX_IMAGE_SIDE": "surface",
    "MIN_IMAGE_SIDE": "surface",
    "WARM_UP_ENV": "surface",
    "BuiltinSurface": "surface",
    "build_server": "surface",
    "fit_height": "surface",
}

__all__ = [
    "COMPLETE_OPTION",
    "MAX_IMAGE_SIDE",
    "MIN_IMAGE_SIDE",
    "WARM_UP_ENV",
    "BuiltinSurface",
    "Closed",
    "DocumentAdapter",
    "DocumentInfo",
    "Domain",
    "HistoryStack",
    "HostError",
    "HostProfile",
    "NotFound",
    "Opened",
    "RecordedStep",
    "RequestedDocument",
    "Saved",
    "ScreenshotOption",
    "ScriptRun",
    "Shot",
    "UndoStack",
    "attach",
    "build_server",
    "declare_domain",
    "fit_height",
    "navigate",
    "requested_outcome",
    "unsaved_changes",
]


__getattr__ = lazy_attributes(__name__, _WHERE)


def attach(
    runtime: HostRuntime, surface: BuiltinSurface | MCPServer[Any], *, warm_up: bool | None = None
) -> None:
    """Serve ``surface`` from ``runtime`` (:meth:`BuiltinSurface.attach`); a plain MCP server is
    only added to the catalog."""
    from cadmcp.host.builtins.surface import BuiltinSurface

    if isinstance(surface, BuiltinSurface):
        surface.attach(runtime, warm_up=warm_up)
    else:
        runtime.add_server(surface)


def declare_domain(runtime: HostRuntime, domain: dict[str, list[str]]) -> None:
    """Put the search vocabulary on the runtime's ``tools/list`` results (``_meta["io.cadmcp/domain"]``)."""
    from cadmcp.host.builtins.surface import DOMAIN_META

    runtime.set_list_meta(DOMAIN_META, domain)
