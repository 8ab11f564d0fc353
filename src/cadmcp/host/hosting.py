"""Starting a host: one runtime, its built-in surface, its toolsets, its app thread, its shutdown.

Every entry point starts its host here (`cadmcp host KEY`, FreeCAD headless and in its window,
the demo host, an adapter's own script)::

    host = DocumentHost("MyCAD", "2026", build_server(MyAdapter(paths), "1.0"), toolsets=extra)
    host.run()        # headless: this thread is the app thread until SIGINT/SIGTERM
    # or, where the application owns its thread (a GUI): host.start() ... host.stop()
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from cadmcp.applications import Application, StartRequest, resolve
from cadmcp.host.appthread import AppThread
from cadmcp.host.builtins.surface import BuiltinSurface, build_server
from cadmcp.host.runtime import HostRuntime
from cadmcp.host.toolsets import ToolsetManager, load_toolsets

__all__ = ["BAD_START", "DocumentHost", "serve_application"]

BAD_START = 2
"""The exit code of a host that could not start (a missing or unreadable document)."""


class DocumentHost:
    """One host's serving parts, started and stopped together.

    ``surface`` is a built-in surface (:func:`~cadmcp.host.builtins.build_server`) or a function
    making an MCP server for the runtime (the demo host's). The configured toolsets and
    ``toolsets`` load after it, on the thread that builds the host.
    """

    def __init__(
        self,
        app: str,
        version: str,
        surface: BuiltinSurface | Callable[[HostRuntime], MCPServer[Any]],
        *,
        toolsets: Sequence[str] = (),
        app_thread: AppThread | None = None,
        instructions: str | None = None,
        runtime_dir: Path | None = None,
    ) -> None:
        self.runtime = HostRuntime(
            app, version, app_thread=app_thread, instructions=instructions, runtime_dir=runtime_dir
        )
        if isinstance(surface, BuiltinSurface):
            surface.attach(self.runtime)
        else:
            self.runtime.add_server(surface(self.runtime))
        self.surface = surface if isinstance(surface, BuiltinSurface) else None
        self.toolsets: ToolsetManager = load_toolsets(self.runtime, toolsets)

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM with this thread as the application thread; unsaved changes
        are then kept as copies (`BuiltinSurface.keep_unsaved`)."""
        try:
            self.runtime.run()
        finally:
            self.toolsets.close()
            if self.surface is not None:
                self.surface.keep_unsaved()

    def start(self) -> Path:
        """Serve with the app thread given at construction (a GUI's); answers the endpoint."""
        return self.runtime.start()

    def stop(self) -> None:
        """Stop the toolsets' watcher and the runtime; safe from any thread."""
        self.toolsets.close()
        self.runtime.stop()


def serve_application(app: Application, request: StartRequest) -> int:
    """`cadmcp host KEY` for a document application: open its documents, serve until stopped.

    A document that is missing or that the adapter refuses at once ends the start with
    :data:`BAD_START` and a line on stderr saying why (no traceback). One that fails or warns
    as it is read, once the host serves, is said on stderr when a person runs it in a terminal.
    """
    shown = f"cadmcp host {app.key}"
    if app.adapter is None:
        raise ValueError(f"{app.name} has no adapter to serve")
    for path in request.files:
        if not os.path.exists(path):
            print(f"{shown}: {path} not found", file=sys.stderr)
            return BAD_START
    version = app.host_version()
    try:
        factory = resolve(app.adapter)
        adapter = factory(list(request.files), exec_timeout=request.exec_timeout)
    except Exception as exc:  # a document the host cannot open: say so, no traceback
        print(f"{shown}: {exc}", file=sys.stderr)
        return BAD_START
    host = DocumentHost(app.name, version, build_server(adapter, version), toolsets=request.toolsets)
    if sys.stderr.isatty():  # run by a person in a terminal: say when it serves, and how it stops
        host.runtime.after_ready(lambda: _say_ready(shown, host))
    host.run()
    return 0


def _say_ready(shown: str, host: DocumentHost) -> None:
    adapter = host.surface.adapter if host.surface else None
    for outcome in host.surface.requested() if host.surface else []:  # a file that did not open: why
        if not outcome.get("opened"):
            print(f"{shown}: {outcome.get('path')} was not opened: {outcome.get('problem')}", file=sys.stderr)
        for warning in outcome.get("warnings") or []:
            print(f"{shown}: {outcome.get('title')}: {warning}", file=sys.stderr)
    documents = ", ".join(d["title"] for d in adapter.documents()) if adapter else ""
    print(
        f"{shown}: ready{f' with {documents}' if documents else ''}, at {host.runtime.endpoint}. An AI "
        "client reaches it through `cadmcp daemon` (list_host_instances); Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )
