"""Someone else's MCP server as a cadmcp host (docs/hosts/foreign.md).

A configured ``mcp`` application (:data:`cadmcp.applications.FOREIGN`) runs as a small proxy
process (`cadmcp host NAME`): it starts or reaches the server, lists its catalog, and serves it
on a cadmcp endpoint like any host, so the daemon's ids, stale rules, policy, tasks, logs and
gateway apply to it unchanged.
"""

from cadmcp.foreign.proxy import ForeignHost, serve

__all__ = ["ForeignHost", "serve"]
