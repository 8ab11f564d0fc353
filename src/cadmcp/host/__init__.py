"""The cadmcp host runtime: what a CAD/BIM application embeds to serve its MCP catalog.

from cadmcp.host import HostRuntime
runtime = HostRuntime("MyCAD", "2026")
runtime.add_server(server)   # an MCP SDK MCPServer with your tools and resources
runtime.run()

The names load on first use: a process that needs one small module of the runtime (the
tessellation worker, the daemon) does not pay for the MCP SDK by importing the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cadmcp.lazy import lazy_attributes

if TYPE_CHECKING:
    from cadmcp.host.appthread import AppThread, CallbackAppThread, QueueAppThread
    from cadmcp.host.progress import report_progress
    from cadmcp.host.runtime import HostRuntime, current

_WHERE = {
    "AppThread": "appthread",
    "CallbackAppThread": "appthread",
    "QueueAppThread": "appthread",
    "report_progress": "progress",
    "HostRuntime": "runtime",
    "current": "runtime",
}

__all__ = ["AppThread", "CallbackAppThread", "HostRuntime", "QueueAppThread", "current", "report_progress"]


__getattr__ = lazy_attributes(__name__, _WHERE)
