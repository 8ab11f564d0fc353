"""The built-in surface of document hosts, defined once over an application adapter.

An application (DXF, IFC, FreeCAD, a future Revit) implements :class:`DocumentAdapter`
and gets the same tools, resources, parameter schemas, error envelopes and history and
rollback semantics as every other host::

    from cadmcp.host import HostRuntime
    from cadmcp.host.builtins import attach, build_server

    server = build_server(MyAdapter(paths), version="1.0")
    runtime = HostRuntime("MyCAD", "2026")
    attach(runtime, server)          # serve it, publish host state, warm up once ready
    runtime.run()

The guide is docs/hosts/adapters.md.
"""

from __future__ import annotations

import os
from typing import Any

from cadmcp.host.builtins.adapter import (
    DocumentAdapter,
    DocumentInfo,
    Domain,
    HostError,
    HostProfile,
    NotFound,
    Opened,
    RecordedStep,
    Saved,
    ScreenshotOption,
    ScriptRun,
    Shot,
    UndoStack,
)
from cadmcp.host.builtins.navigation import HistoryStack, navigate
from cadmcp.host.builtins.surface import (
    DOMAIN_META,
    MAX_IMAGE_SIDE,
    MIN_IMAGE_SIDE,
    BuiltinSurface,
    build_server,
    fit_height,
)

__all__ = [
    "MAX_IMAGE_SIDE",
    "MIN_IMAGE_SIDE",
    "WARM_UP_ENV",
    "BuiltinSurface",
    "DocumentAdapter",
    "DocumentInfo",
    "Domain",
    "HistoryStack",
    "HostError",
    "HostProfile",
    "NotFound",
    "Opened",
    "RecordedStep",
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
]

WARM_UP_ENV = "CADMCP_WARM_UP"
"""``0`` stops a host preparing its documents in the background once ready."""


def attach(runtime: Any, server: Any, *, warm_up: bool | None = None) -> None:
    """Serve ``server`` from ``runtime`` and wire what the built-in surface tells the runtime.

    Sets the toolsets' ``application``, registers the warm-up (unless ``CADMCP_WARM_UP=0``),
    declares the search domain vocabulary and publishes the host state (phase, documents).
    Works for any MCP server; the host-state parts apply to a built-in surface's server.
    """
    runtime.add_server(server)
    runtime.application = getattr(server, "application", None)
    surface: BuiltinSurface | None = getattr(server, "builtins", None)
    domain = getattr(server, "domain", None)
    if domain:
        declare_domain(runtime, domain)
    if surface is not None:
        surface.runtime = runtime
        surface.publish_state()
    if warm_up is None:
        warm_up = os.environ.get(WARM_UP_ENV, "1") != "0"
    steps = getattr(server, "warm_up", None)
    if warm_up and callable(steps):
        runtime.after_ready(steps)


def declare_domain(runtime: Any, domain: dict[str, list[str]]) -> None:
    """Put the search vocabulary on the runtime's ``tools/list`` results (``_meta["io.cadmcp/domain"]``)."""
    runtime.set_list_meta(DOMAIN_META, domain)
