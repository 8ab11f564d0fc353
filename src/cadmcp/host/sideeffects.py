"""Keeping a preview to the document: what a previewed script tries outside it is refused.

A preview (`dryRun`) runs the script in the document's transaction and rolls the document
back; files it wrote, programs it started and connections it made would stay, and under a
policy that asks before changes they would happen before the person answered. While a
preview's script runs, Python's audit events for writing or removing files, starting
programs and opening network connections are refused on that thread, and so is starting a
thread, whose own writes no audit of that thread would see (:class:`OutsideDocument`, an
`OSError`); the preview then says what the script tried, and
the script runs (unpreviewed) only if applied. A library writing from its own compiled code raises
no audit event for the write itself (IfcOpenShell's `file.write` is caught by the folder it makes
first; others may not be).
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

MAX_TRIED = 5

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = {
    "os.remove": "removes",
    "os.rename": "renames",
    "os.rmdir": "removes the folder",
    "os.mkdir": "makes the folder",
    "os.chmod": "changes the permissions of",
    "os.truncate": "truncates",
    "os.symlink": "links",
    "os.link": "links",
    "shutil.rmtree": "removes the folder tree",
}
_PROGRAMS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn"}
_NETWORK = {"socket.connect", "socket.sendto"}


class OutsideDocument(PermissionError):
    """What a previewed script tried outside the document (refused: a preview changes nothing)."""


class _Watch(threading.local):
    tried: list[str] | None = None


_watch = _Watch()
_installed = False
_install_lock = threading.Lock()


def _said(event: str, args: tuple[Any, ...]) -> str | None:
    """What the event does outside the document, or None when it does not (a read, a module's cache)."""
    if event == "open":
        path, mode, flags = (*args, None, None, None)[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if not writes or path is None or isinstance(path, int):
            return None
        name = os.fsdecode(path)
        if "__pycache__" in name:  # an import caching its bytecode (it goes on without the cache)
            return None
        return f"writes the file {name}"
    if event in _CHANGES:
        target = args[0] if args else ""
        name = os.fsdecode(target) if isinstance(target, str | bytes) else str(target)
        if event == "os.mkdir" and os.path.isdir(name):  # makedirs(exist_ok=True) before a write
            return f"writes into the folder {name}"
        return f"{_CHANGES[event]} {name}"
    if event in _PROGRAMS:
        program = args[0] if args else ""
        if isinstance(program, list | tuple):
            program = " ".join(str(p) for p in program[:3])
        return f"starts the program {program}".rstrip()
    if event in _NETWORK:
        return f"connects to {args[1] if len(args) > 1 else 'the network'}"
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    tried = _watch.tried
    if tried is None:
        return
    said = _said(event, args)
    if said is None:
        return
    if len(tried) < MAX_TRIED and said not in tried:
        tried.append(said)
    raise OutsideDocument(f"a preview changes nothing outside the document; this script {said}")


def _refusing_threads(start_new_thread: Callable[..., int]) -> Callable[..., int]:
    """`_thread.start_new_thread` that a preview's script may not call: what a thread of its own
    does (Python raises no audit event when one starts) would go on outside the watched thread."""

    def start_new(*args: Any, **kwargs: Any) -> int:
        tried = _watch.tried
        if tried is not None:
            said = "starts a thread (what a thread does, a preview cannot hold back)"
            if len(tried) < MAX_TRIED and said not in tried:
                tried.append(said)
            raise OutsideDocument(f"a preview changes nothing outside the document; this script {said}")
        return start_new_thread(*args, **kwargs)

    return start_new


def install() -> None:
    """Add the audit hook and the thread guard (once per process; each costs a thread-local look-up)."""
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_audit)
            guarded = _refusing_threads(_thread.start_new_thread)
            _thread.start_new_thread = guarded  # type: ignore[assignment]
            threading._start_new_thread = guarded  # type: ignore[attr-defined]  # Thread.start calls it
            _installed = True


def start(tried: list[str]) -> None:
    """Refuse from now on this thread (until :func:`stop`), for a run whose start and end are callbacks."""
    install()
    _watch.tried = tried


def stop() -> None:
    """Stop refusing on this thread."""
    _watch.tried = None


@contextlib.contextmanager
def unwatched() -> Iterator[None]:
    """cadmcp's own work inside a watched run (a script's watchdog thread): not refused."""
    tried, _watch.tried = _watch.tried, None
    try:
        yield
    finally:
        _watch.tried = tried
