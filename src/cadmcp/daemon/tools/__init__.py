"""The daemon's fixed tool surface: one module per tool (definition, argument check, handler).

Every capability of every host is reached through these few tools; the list never changes
(`listChanged` is false), so an agent's context stays small however many hosts run.
"""

from __future__ import annotations

from cadmcp.daemon.tools import (
    invoke_dynamic,
    launch_host,
    list_host_instances,
    list_machines,
    read_file_info,
    search_dynamic,
)
from cadmcp.daemon.tools.base import DaemonTool, Services, ToolCall, structured

__all__ = ["BY_NAME", "TOOLS", "DaemonTool", "Services", "ToolCall", "structured"]

TOOLS: tuple[DaemonTool, ...] = (
    search_dynamic.TOOL,
    invoke_dynamic.TOOL,
    list_host_instances.TOOL,
    launch_host.TOOL,
    read_file_info.TOOL,
    list_machines.TOOL,
)
"""In the order `tools/list` gives them."""
BY_NAME = {tool.name: tool for tool in TOOLS}
