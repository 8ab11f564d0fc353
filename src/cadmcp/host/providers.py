"""Providers: the MCP SDK servers whose capabilities a host serves.

A host's built-in tools and every loaded toolset are ordinary MCP SDK servers
(`MCPServer`, or a low-level `Server`). The runtime calls their request handlers
in-process. Plain (sync) functions of an `MCPServer` are re-bound so they run on the
application thread, one at a time; async functions keep running on the I/O loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared._callable_inspection import is_async_callable

from cadmcp.host.appthread import Dispatcher

_BOUND_MARK = "__cadmcp_app_thread__"


@dataclass(eq=False)
class Provider:
    """One server contributing capabilities to the host catalog.

    `origin` names where it came from ("builtin", or a toolset module path) and appears in
    conflict reports; lower `priority` wins a name clash.
    """

    name: str
    server: MCPServer[Any] | Server[Any]
    origin: str = "builtin"
    priority: int = 0

    @property
    def lowlevel(self) -> Server[Any]:
        """The low-level server whose request handlers the runtime calls."""
        if isinstance(self.server, MCPServer):
            return self.server._lowlevel_server  # the SDK exposes no public accessor
        return self.server


def _app_thread_wrapper(fn: Callable[..., Any], dispatcher: Dispatcher) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def run_on_app_thread(*args: Any, **kwargs: Any) -> Any:
        return await dispatcher.call(fn, *args, **kwargs)

    setattr(run_on_app_thread, _BOUND_MARK, True)
    return run_on_app_thread


def bind_to_app_thread(server: MCPServer[Any] | Server[Any], dispatcher: Dispatcher) -> None:
    """Make every sync tool, resource and template function of `server` run on the app thread.

    Idempotent: call it again after the server gained new functions.
    """
    if not isinstance(server, MCPServer):
        return  # low-level handlers are async; they use `cadmcp.host.run_on_app_thread`
    for tool in server._tool_manager.list_tools():
        if not tool.is_async and not getattr(tool.fn, _BOUND_MARK, False):
            tool.fn = _app_thread_wrapper(tool.fn, dispatcher)
            tool.is_async = True
    manager = server._resource_manager
    for item in [*manager.list_resources(), *manager.list_templates()]:
        fn = getattr(item, "fn", None)
        if fn is not None and not is_async_callable(fn) and not getattr(fn, _BOUND_MARK, False):
            item.fn = _app_thread_wrapper(fn, dispatcher)
