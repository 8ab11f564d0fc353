"""The cadmcp host runtime: what a CAD/BIM application embeds to serve its MCP catalog.

from cadmcp.host import HostRuntime
runtime = HostRuntime("MyCAD", "2026")
runtime.add_server(server)   # an MCP SDK MCPServer with your tools and resources
runtime.run()
"""

from cadmcp.host.appthread import AppThread, CallbackAppThread, QueueAppThread
from cadmcp.host.progress import report_progress
from cadmcp.host.runtime import HostRuntime, current

__all__ = ["AppThread", "CallbackAppThread", "HostRuntime", "QueueAppThread", "current", "report_progress"]
