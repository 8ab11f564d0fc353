"""Serving a FreeCAD window: the host started with ``--gui``, or a user's own session via the macro.

In FreeCAD's Python console (or from the installed macros)::

    from cadmcp.hosts.freecad import session
    session.start()      # serve this FreeCAD; again: restart
    session.status()     # 'cadmcp: serving FreeCAD 0.20.2 (pid 4242) on /run/user/1000/cadmcp/...'
    session.stop()

Every call runs on FreeCAD's Qt GUI thread (posted through Qt); the status bar and the report
view say whether cadmcp is serving, on which socket, or why it failed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import FreeCAD as App
import FreeCADGui as Gui
from PySide2 import QtWidgets

from cadmcp.host.builtins import fit_height
from cadmcp.hosts.freecad.qtloop import EventPump, QtPoster, StatusLabel
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from cadmcp.host.hosting import DocumentHost

__all__ = ["GuiBridge", "Session", "restart", "running", "start", "status", "stop"]

log = logging.getLogger("cadmcp.host.freecad")
VIEW_METHODS = {
    "isometric": "viewIsometric",
    "front": "viewFront",
    "rear": "viewRear",
    "top": "viewTop",
    "bottom": "viewBottom",
    "left": "viewLeft",
    "right": "viewRight",
}


class GuiBridge:
    """What the adapter needs from FreeCAD's GUI: documents' views, screenshots, a busy state."""

    def __init__(self, status: StatusLabel) -> None:
        self.pump = EventPump()
        self.status = status
        self.idle_text = ""

    def document(self, doc: Any) -> Any:
        try:
            return Gui.getDocument(doc.Name)
        except Exception:
            return None

    def view3d(self, doc: Any) -> Any:
        gui_doc = self.document(doc)
        if gui_doc is None:
            raise RuntimeError(f"FreeCAD has no window for document {doc.Name}")
        views = gui_doc.mdiViewsOfType("Gui::View3DInventor")
        if not views:
            raise RuntimeError(f"document {doc.Name} has no 3D view open")
        active = gui_doc.ActiveView
        return active if active in views else views[0]

    def activate(self, doc: Any) -> None:
        gui_doc = self.document(doc)
        if gui_doc is None:
            return
        views = gui_doc.mdiViewsOfType("Gui::View3DInventor")
        if views and gui_doc.ActiveView not in views:
            with contextlib.suppress(Exception):  # the window is closing
                Gui.getMainWindow().setActiveWindow(views[0])

    def saved(self, doc: Any) -> None:
        """After a save from Python: the window's document is unmodified (its title loses the '*').

        FreeCAD 0.20 keeps the window's flag set after ``App.Document.save`` (it is read-only in
        Python) and clears it only in the window's own save: Std_Save writes the active document
        once more, to the file just written, so no dialog opens.
        """
        gui_doc = self.document(doc)
        if gui_doc is None or not gui_doc.Modified or not doc.FileName:
            return
        active = Gui.ActiveDocument
        if active is not None and active.Document is doc:
            Gui.runCommand("Std_Save")

    def screenshot(
        self, doc: Any, width: int, height: int | None, view: str
    ) -> tuple[bytes, list[str], dict[str, Any] | None]:
        """The document's 3D view rendered off-screen at the size asked, the user's camera kept, with
        notes and the coverage of what the picture leaves out (:mod:`cadmcp.hosts.freecad.gui_view`)."""
        from cadmcp.hosts.freecad import gui_view

        v = self.view3d(doc)
        if height is None:
            try:
                w, h = v.getSize()
                aspect = h / w if w and h else 0.75
            except Exception:
                aspect = 0.75
            height = fit_height(width, aspect, 0.4, 1.25)
        camera = v.getCamera()
        handle, name = tempfile.mkstemp(prefix="cadmcp-shot-", suffix=".png")
        os.close(handle)
        try:
            if view != "current":
                getattr(v, VIEW_METHODS[view])()
                v.fitAll()
            notes: list[str] = []
            coverage: dict[str, Any] | None = None
            try:
                scene = gui_view.window_scene(doc)
                framed_out = gui_view.frame(scene, v.getCameraNode(), width / height, view == "current")
                notes, coverage = gui_view.coverage(scene, view, framed_out)
            except Exception as exc:
                notes = [
                    f"[UNCHECKED VIEW] What this picture leaves out could not be worked out "
                    f"({type(exc).__name__}: {echo(str(exc), 120)}); the model context lists the visible "
                    "objects."
                ]
            v.saveImage(name, width, height, "White")
            return Path(name).read_bytes(), notes, coverage
        finally:
            v.setCamera(camera)
            Path(name).unlink(missing_ok=True)

    def busy(self, busy: bool, what: str) -> None:
        """While a script runs: keep the window repainting and say so in the status bar."""
        if busy:
            self.status.show(f"cadmcp: running {what!r}…")
            self.pump.start()
        else:
            self.pump.stop()
            self.status.show(self.idle_text)


class Session:
    """One host runtime serving this FreeCAD window."""

    def __init__(self, exec_timeout: float | None = None, toolsets: list[str] | None = None) -> None:
        self.exec_timeout = exec_timeout
        self.toolsets = list(toolsets or [])
        self.status_label = StatusLabel()
        self.host: DocumentHost | None = None
        self.adapter: Any = None
        self.poster: QtPoster | None = None
        self.bridge: GuiBridge | None = None

    def start(self, files: list[Path] | None = None) -> Path:
        """Serve this FreeCAD; ``files`` (already checked) open once serving, the first one active."""
        from cadmcp import __version__
        from cadmcp.host import CallbackAppThread
        from cadmcp.host.builtins import build_server
        from cadmcp.host.hosting import DocumentHost
        from cadmcp.hosts.freecad import HOST_APP
        from cadmcp.hosts.freecad.adapter import FreeCADAdapter, freecad_version

        self.poster = QtPoster()
        bridge = self.bridge = GuiBridge(self.status_label)
        self.adapter = FreeCADAdapter(self.exec_timeout, gui=bridge)
        self.adapter.open_later(list(files or []))
        version = freecad_version()
        surface = build_server(self.adapter, __version__)
        app_thread = CallbackAppThread(self.poster.post)
        self.host = DocumentHost(HOST_APP, version, surface, toolsets=self.toolsets, app_thread=app_thread)
        endpoint = self.host.start()
        bridge.idle_text = f"cadmcp: serving FreeCAD {version} (pid {os.getpid()}) on {endpoint}"
        self.status_label.show(bridge.idle_text)
        App.Console.PrintMessage(bridge.idle_text + "\n")
        return endpoint

    def stop(self) -> None:
        host, self.host = self.host, None
        if host is not None:
            host.stop()
            App.Console.PrintMessage("cadmcp: stopped serving this FreeCAD\n")
        self.status_label.show("cadmcp: stopped")

    @property
    def serving(self) -> bool:
        return self.host is not None and self.host.runtime.endpoint is not None


_session: Session | None = None


def start(exec_timeout: float | None = None, toolsets: list[str] | None = None) -> str:
    """Serve this FreeCAD session (restart when already serving); returns the status line."""
    global _session
    if _session is not None:
        _session.stop()
    _session = Session(exec_timeout, toolsets)
    try:
        _session.start()
    except Exception as exc:
        text = f"cadmcp: could not start: {type(exc).__name__}: {exc}"
        _session.status_label.show(text, error=True)
        App.Console.PrintError(text + "\n")
        log.exception("cadmcp could not start")
        return text
    _quit_with_application()
    return status()


def stop() -> str:
    """Stop serving this FreeCAD session; returns the status line."""
    if _session is not None:
        _session.stop()
    return status()


def restart() -> str:
    return start(
        _session.exec_timeout if _session is not None else None,
        _session.toolsets if _session is not None else None,
    )


def running() -> bool:
    return _session is not None and _session.serving


def status() -> str:
    """What the status bar says between calls: serving (socket, pid), stopped, or why it failed."""
    if _session is None:
        return "cadmcp: not started"
    if _session.serving and _session.bridge is not None:
        return _session.bridge.idle_text
    return _session.status_label.text or "cadmcp: stopped"


_quit_hooked = False


def _quit_with_application() -> None:
    global _quit_hooked
    if _quit_hooked:
        return
    app = QtWidgets.QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(lambda: _session.stop() if _session is not None else None)
        _quit_hooked = True
