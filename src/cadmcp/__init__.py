"""cadmcp: one MCP endpoint for AI agents working inside live CAD/BIM applications."""

__version__ = "0.1.0"
