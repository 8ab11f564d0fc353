"""FreeCAD's Qt GUI thread as the application thread, and a window that stays alive during calls.

:class:`QtPoster` is the ``post(fn)`` behind the runtime's ``CallbackAppThread``: a job posted
from the MCP I/O thread becomes a queued Qt event and runs on the GUI thread, one job per event,
so the window repaints between jobs. A job that is running is never re-entered: FreeCAD's own
progress bar and :class:`EventPump` process events during long work, and jobs posted meanwhile
wait for the running one to finish.

:class:`EventPump` keeps the window repainting and its timers running while a script runs on
the GUI thread: a ``SIGALRM`` interval timer interrupts the script between bytecodes (also
inside ``time.sleep``) and processes pending events except user input, which waits until the
call ends so the user cannot edit the document in the middle of the agent's transaction.
"""

from __future__ import annotations

import collections
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from PySide2 import QtCore, QtWidgets

__all__ = ["EventPump", "QtPoster", "StatusLabel", "on_gui_thread"]

PUMP_INTERVAL_S = 0.05
PUMP_BUDGET_MS = 20


def on_gui_thread() -> bool:
    """Whether the calling thread is the thread of the Qt application (FreeCAD's GUI thread)."""
    app = QtWidgets.QApplication.instance()
    return app is not None and QtCore.QThread.currentThread() == app.thread()


class QtPoster(QtCore.QObject):
    """``post(job)`` from any thread; the job runs on the thread this object was created on."""

    wake = QtCore.Signal()

    def __init__(self) -> None:
        super().__init__()
        self._jobs: collections.deque[Callable[[], None]] = collections.deque()
        self._busy = False
        self.wake.connect(self._run_one, QtCore.Qt.QueuedConnection)

    def post(self, job: Callable[[], None]) -> None:
        self._jobs.append(job)
        self.wake.emit()

    @QtCore.Slot()
    def _run_one(self) -> None:
        if self._busy or not self._jobs:
            return  # re-entered from inside a running job: the job's end wakes us again
        self._busy = True
        try:
            self._jobs.popleft()()
        finally:
            self._busy = False
            if self._jobs:
                self.wake.emit()


class EventPump:
    """Process the GUI's pending events every 50 ms while code runs on the GUI thread."""

    def __init__(self) -> None:
        self._running = False
        self._inside = False
        self._previous: Any = None

    def _tick(self, _signum: int, _frame: Any) -> None:
        if self._inside:
            return
        self._inside = True
        try:
            QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ExcludeUserInputEvents, PUMP_BUDGET_MS)
        finally:
            self._inside = False

    def start(self) -> None:
        if self._running or threading.current_thread() is not threading.main_thread():
            return  # signals are delivered to the main thread only
        self._previous = signal.signal(signal.SIGALRM, self._tick)
        signal.setitimer(signal.ITIMER_REAL, PUMP_INTERVAL_S, PUMP_INTERVAL_S)
        self._running = True

    def stop(self) -> None:
        if not self._running:
            return
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, self._previous or signal.SIG_DFL)
        self._running = False

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self.start()
        try:
            yield
        finally:
            self.stop()


class StatusLabel:
    """A permanent label in FreeCAD's status bar saying what cadmcp is doing."""

    def __init__(self) -> None:
        self._label: Any = None

    def show(self, text: str, error: bool = False) -> None:
        with contextlib.suppress(Exception):  # no main window (closing): nothing to show
            if self._label is None:
                import FreeCADGui

                bar = FreeCADGui.getMainWindow().statusBar()
                self._label = QtWidgets.QLabel()
                self._label.setObjectName("cadmcpStatus")
                bar.addPermanentWidget(self._label)
            self._label.setText(text)
            self._label.setStyleSheet("color: #b00020;" if error else "")
            self._label.setToolTip(text)

    @property
    def text(self) -> str:
        return self._label.text() if self._label is not None else ""
