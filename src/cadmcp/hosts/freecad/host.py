"""The FreeCAD host process, inside FreeCAD: headless (``freecadcmd``) or with the window.

Started by :mod:`cadmcp.hosts.freecad.bootstrap` once cadmcp is importable. Headless, the main
thread becomes the application thread (``HostRuntime.run``); with the GUI, FreeCAD's Qt GUI
thread is, and this function returns so FreeCAD's event loop keeps running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import FreeCAD as App

from cadmcp import __version__
from cadmcp.host.builtins import HostError
from cadmcp.host.builtins.paths import check_document_path
from cadmcp.hosts.freecad import HOST_APP, IMPORT_SUFFIXES, SUFFIXES

__all__ = ["adapter_version", "check_start_paths", "main"]

BAD_START = 2
_keep: list[Any] = []
"""Objects that must live as long as the GUI host (Qt timers, the session)."""


def adapter_version() -> str:
    return __version__


def check_start_paths(files: list[str]) -> list[Path]:
    """The documents to open at start-up, checked now so a bad one fails the start at once."""
    from cadmcp.hosts.freecad.adapter import MEMORY_FACTOR
    from cadmcp.hosts.freecad.fcstd import read_declared

    paths = []
    for raw in files:
        path = check_document_path(raw, kind="an .FCStd document", memory_factor=MEMORY_FACTOR)
        if path.suffix.lower() in SUFFIXES:
            read_declared(path)
        elif path.suffix.lower() not in IMPORT_SUFFIXES:
            raise HostError(
                f"{path.name} is not a file FreeCAD opens: pass .FCStd or {', '.join(IMPORT_SUFFIXES)}."
            )
        paths.append(path)
    return paths


def use_python_for_scripts() -> None:
    """Let PEP 723 installs target FreeCAD's interpreter (``CADMCP_SCRIPT_PYTHON``).

    FreeCAD sets ``sys.executable`` to its own binary (``/usr/bin/freecadcmd``), which uv cannot
    install for; the interpreter FreeCAD embeds is ``<prefix>/bin/python3.X``.
    """
    from cadmcp.host.scriptdeps import SCRIPT_PYTHON_ENV

    if os.environ.get(SCRIPT_PYTHON_ENV) or Path(sys.executable).name.lower().startswith("python"):
        return
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys.base_prefix) / "bin" / f"python{version}", Path(f"/usr/bin/python{version}")):
        if candidate.exists():
            os.environ[SCRIPT_PYTHON_ENV] = str(candidate)
            return


def main(request: dict[str, Any]) -> None:
    """Start the host described by ``request`` (files, exec_timeout, toolsets, verbose)."""
    import logging

    logging.basicConfig(
        level=logging.INFO if request.get("verbose") else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    use_python_for_scripts()
    try:
        paths = check_start_paths(list(request.get("files") or []))
    except HostError as exc:
        sys.stderr.write(f"cadmcp host freecad: {exc}\n")
        sys.stderr.flush()
        os._exit(BAD_START)
    if App.GuiUp:
        start_gui(request, paths)
    else:
        run_headless(request, paths)


def run_headless(request: dict[str, Any], paths: list[Path]) -> None:
    """Serve until SIGINT/SIGTERM with this (the main) thread as the application thread."""
    from cadmcp.host.builtins import build_server
    from cadmcp.host.hosting import DocumentHost
    from cadmcp.hosts.freecad.adapter import FreeCADAdapter, freecad_version

    adapter = FreeCADAdapter(request.get("exec_timeout"))
    adapter.open_later(paths)
    surface = build_server(adapter, adapter_version())
    DocumentHost(HOST_APP, freecad_version(), surface, toolsets=list(request.get("toolsets") or [])).run()


def start_gui(request: dict[str, Any], paths: list[Path]) -> None:
    """Serve FreeCAD's window from its GUI thread; SIGTERM/SIGINT stop the host and FreeCAD."""
    from PySide2 import QtCore

    from cadmcp.hosts.freecad.session import Session

    session = Session(request.get("exec_timeout"), list(request.get("toolsets") or []))
    session.start(paths)
    stopping = {"asked": False}

    def shutdown() -> None:
        with contextlib.suppress(Exception):
            session.stop()
        os._exit(0)  # FreeCAD would ask about unsaved documents: a signal means stop now

    def on_signal(_signum: int, _frame: Any) -> None:
        if stopping["asked"]:
            os._exit(0)  # a second signal: no more waiting
        stopping["asked"] = True
        QtCore.QTimer.singleShot(0, shutdown)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    # Python runs signal handlers only between bytecodes: tick so they run while Qt waits
    heartbeat = QtCore.QTimer()
    heartbeat.timeout.connect(lambda: None)
    heartbeat.start(200)
    _keep.extend([session, heartbeat])
