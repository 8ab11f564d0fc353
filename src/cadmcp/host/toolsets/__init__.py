"""Python toolsets: tools written as plain MCP SDK modules, loaded into a host and hot-reloaded.

A toolset is a folder of `.py` files (or one file); each module defines a module-level
`MCPServer` whose tools, resources and templates the host serves. Configure paths per host
app and version with `cadmcp toolset add PATH --host APP --version V`, or for one run with
`--toolset PATH` / `CADMCP_TOOLSETS`. Host start-up code calls::

    from cadmcp.host.toolsets import load_toolsets
    manager = load_toolsets(runtime, extra=args.toolset)   # after adding the built-ins

See docs/toolsets.md.
"""

from cadmcp.host.toolsets.manager import COLLISION_RULE, REPORT_URI, ToolsetManager, load_toolsets
from cadmcp.host.toolsets.registry import TOOLSETS_ENV, Registry, RegistryError, Scope
from cadmcp.userdirs import CONFIG_DIR_ENV, config_dir

__all__ = [
    "COLLISION_RULE",
    "CONFIG_DIR_ENV",
    "REPORT_URI",
    "TOOLSETS_ENV",
    "Registry",
    "RegistryError",
    "Scope",
    "ToolsetManager",
    "config_dir",
    "load_toolsets",
]
