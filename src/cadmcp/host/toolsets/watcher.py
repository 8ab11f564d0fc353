"""Watching toolset folders for edits (watchfiles on a background thread).

The watcher only notices: it hands each batch of changed `.py` files to a callback, which
the toolset manager uses to post the reload to the application thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import watchfiles

log = logging.getLogger("cadmcp.host.toolsets")

DEBOUNCE_MS = 200


class PythonFileFilter(watchfiles.DefaultFilter):
    """`.py` files only (and not in `__pycache__`, `.git`, editor temp files...)."""

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        return path.endswith(".py") and super().__call__(change, path)


class ToolsetWatcher:
    """Calls `on_change(files)` with the `.py` files changed under `roots`, until `stop()`."""

    def __init__(self, roots: Iterable[Path], on_change: Callable[[set[Path]], None]) -> None:
        self.roots = sorted({r for r in roots if r.is_dir()})
        self._on_change = on_change
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.roots or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="cadmcp-toolset-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            for changes in watchfiles.watch(
                *self.roots,
                watch_filter=PythonFileFilter(),
                debounce=DEBOUNCE_MS,
                step=50,
                stop_event=self._stop,
                rust_timeout=500,
                raise_interrupt=False,
            ):
                files = {Path(path) for _, path in changes}
                try:
                    self._on_change(files)
                except Exception:  # a bad batch never ends the watching
                    log.exception("toolset reload failed for %s", sorted(map(str, files)))
        except Exception:
            log.exception("toolset watcher stopped; edits are no longer reloaded (restart the host)")
