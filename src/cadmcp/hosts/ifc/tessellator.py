"""Tessellation in a process of its own, streamed per product into the host's geometry cache.

IfcOpenShell's geometry iterator holds the GIL while it builds a shape, so tessellating a large
model inside the host makes every call wait. A :class:`ShapeWorker` runs
``python -m cadmcp.hosts.ifc.tessellator`` on the model's file as it is on disk: the worker
reads it with the host's own loader (same step ids), tessellates every drawable product with
the iterator's own threads, the classes that shape a building's picture first, and writes one
frame per product to its stdout. A reader thread in the host keeps what arrives; the geometry
cache takes it on the application thread and draws from it.

The worker's shapes are of the file as opened: the cache tells the worker which products an
edit touched (:meth:`ShapeWorker.ignore`), and their shapes from the worker are dropped. The
worker stops itself when the host goes (its stdin closes, or the kernel's parent-death
signal), and the host stops it on exit.

Frame: 4 bytes little-endian header length, the JSON header, then ``header["bytes"]`` bytes of
float32 triangles (``(n, 3, 3)`` world coordinates in metres).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["WORKER_MB_ENV", "ShapeWorker", "main", "worker_wanted"]

WORKER_MB_ENV = "CADMCP_SHAPE_WORKER_MB"
"""Models of at least this many MB on disk are tessellated in a worker process (``off``: never)."""
DEFAULT_WORKER_MB = 1.0
RATE_AFTER_S = 1.0
"""Seconds of sending before the worker's rate is told (a shorter span says little of the rest)."""
_running: weakref.WeakSet[ShapeWorker] = weakref.WeakSet()


def worker_wanted(path: Path) -> bool:
    """Whether the model at ``path`` is large enough to be tessellated in a worker process."""
    raw = (os.environ.get(WORKER_MB_ENV) or "").strip().lower()
    if raw in ("off", "never", "no"):
        return False
    try:
        threshold = float(raw) if raw else DEFAULT_WORKER_MB
    except ValueError:
        threshold = DEFAULT_WORKER_MB
    try:
        return path.stat().st_size >= threshold * 1e6
    except OSError:
        return False


class ShapeWorker:
    """A worker process tessellating one model file, and what it has sent so far."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = path
        self.started = time.monotonic()
        self.ids: list[int] = []
        """Every product the worker tessellates, in its order (known once it read the file)."""
        self.stamp: list[int] | None = None
        """The file's size and mtime when the worker read it."""
        self.error: str | None = None
        self.finished = False
        self.delivered = 0
        self.listed_at: float | None = None
        """When the worker had read the file and listed the products it tessellates."""
        self._meshes: dict[int, tuple[str, str | None, np.ndarray]] = {}
        self._failed: dict[int, str] = {}
        self._ignored: set[int] = set()
        self._expected: set[int] | None = None
        """Products still to come (None: the worker has not read the file yet, so all of them)."""
        self._cond = threading.Condition()
        package_root = str(Path(__file__).resolve().parents[3])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cadmcp.hosts.ifc.tessellator"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        request = {"path": str(path), "threads": threads or os.cpu_count() or 1, "parent": os.getpid()}
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            pass  # it died at once: the reader sees the end
        _running.add(self)
        self._reader = threading.Thread(target=self._read, name="cadmcp-shape-worker", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    # -- the host's side -------------------------------------------------------------------------
    def take(self) -> tuple[dict[int, tuple[str, str | None, np.ndarray]], dict[int, str]]:
        """The shapes and failures received since the last call (ignored products left out)."""
        with self._cond:
            meshes, failed = self._meshes, self._failed
            self._meshes, self._failed = {}, {}
        return meshes, failed

    def ignore(self, ids: Iterable[int]) -> None:
        """Drop the worker's shapes of ``ids`` (an edit touched them), now and when they arrive."""
        with self._cond:
            for step_id in ids:
                self._ignored.add(step_id)
                self._meshes.pop(step_id, None)
                self._failed.pop(step_id, None)

    def will_send(self, step_id: int) -> bool:
        """Whether the worker is still to send a usable shape of ``step_id``."""
        with self._cond:
            if self.finished or step_id in self._ignored:
                return False
            return self._expected is None or step_id in self._expected

    def wait(self, ids: set[int], deadline: float | None, tick: float = 0.5) -> bool:
        """Block until the worker sent every one of ``ids`` (True), it ended, ``deadline``
        (monotonic) passed or ``tick`` seconds went by (False: call again to go on waiting)."""
        until = time.monotonic() + tick if deadline is None else min(deadline, time.monotonic() + tick)
        with self._cond:
            while not self.finished and (self._expected is None or ids & self._expected):
                left = until - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    @property
    def reading(self) -> bool:
        """True until the worker has read the file and said what it will send."""
        with self._cond:
            return self._expected is None and not self.finished

    @property
    def rate(self) -> float:
        """Products sent per second since the worker began to send them (its reading of the file
        before is no part of it), or 0 while that is too short to tell."""
        if self.listed_at is None:
            return 0.0
        spent = time.monotonic() - self.listed_at
        return self.delivered / spent if spent >= RATE_AFTER_S and self.delivered else 0.0

    def stop(self) -> None:
        """End the worker process (if it still runs) and forget it."""
        _running.discard(self)
        with contextlib.suppress(OSError):
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(timeout=5)
        with self._cond:
            self.finished = True
            self._expected = set()
            self._cond.notify_all()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()

    # -- reading the worker's frames -------------------------------------------------------------
    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while (header := _read_frame(stream)) is not None:
                head, payload = header
                self._received(head, payload)
        except (OSError, ValueError):
            pass
        code = self.process.poll()
        if code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.process.wait(timeout=2)
        with self._cond:
            if (self._expected is None or self._expected) and self.error is None and not self.finished:
                self.error = f"the tessellation process stopped early (exit code {code})"
            self.finished = True
            self._expected = set()
            self._cond.notify_all()
        _running.discard(self)

    def _received(self, head: dict[str, Any], payload: bytes) -> None:
        with self._cond:
            if "ids" in head:
                self.ids = [int(i) for i in head["ids"]]
                self.listed_at = time.monotonic()
                self._expected = set(self.ids)
                self.stamp = head.get("stamp")
            elif "error" in head:
                self.error = str(head["error"])[:300]
                self._expected = set()
            elif "end" in head:
                self.finished = True
                self._expected = set()
            else:
                step_id = int(head["id"])
                if self._expected is not None:
                    self._expected.discard(step_id)
                self.delivered += 1
                if step_id not in self._ignored:
                    triangles = np.frombuffer(payload, dtype=np.float32).reshape(-1, 3, 3)
                    self._meshes[step_id] = (head["class"], head.get("type"), triangles)
                    if head.get("failed"):
                        self._failed[step_id] = str(head["failed"])
            self._cond.notify_all()


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> tuple[dict[str, Any], bytes] | None:
    raw = _read_exact(stream, 4)
    if raw is None:
        return None
    body = _read_exact(stream, int.from_bytes(raw, "little"))
    if body is None:
        return None
    head = json.loads(body)
    payload = _read_exact(stream, int(head.get("bytes", 0))) if head.get("bytes") else b""
    if payload is None:
        return None
    return head, payload


def _write_frame(stream: IO[bytes], head: dict[str, Any], payload: bytes = b"") -> None:
    if payload:
        head = {**head, "bytes": len(payload)}
    body = json.dumps(head).encode()
    stream.write(len(body).to_bytes(4, "little") + body + payload)


@atexit.register
def _stop_all() -> None:
    for worker in list(_running):
        worker.stop()


# -- the worker process --------------------------------------------------------------------------
def _follow_parent(parent: int) -> None:
    """Exit when the host goes: the kernel's parent-death signal, and stdin closing."""
    if sys.platform.startswith("linux") and os.getppid() == parent:
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the host went before the signal was set
        os._exit(0)

    def watch() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> int:
    """Tessellate the model named on stdin; frames on stdout (see the module's docstring)."""
    request = json.loads(sys.stdin.buffer.readline() or b"{}")
    _follow_parent(int(request.get("parent", os.getppid())))
    out = sys.stdout.buffer
    from cadmcp.hosts.ifc import shapes
    from cadmcp.hosts.ifc.documents import load_model, stamp

    path = Path(request["path"])
    try:
        before = stamp(path)
        model, _, _ = load_model(path)
        if stamp(path) != before:
            raise ValueError(f"{path.name} changed on disk while it was read")
    except Exception as exc:
        _write_frame(out, {"error": f"the tessellation process could not read the model: {exc}"})
        out.flush()
        return 1
    elements = shapes.draw_order(shapes.drawable_elements(model))
    elements += [e for e in model.by_type("IfcSpace") if e.Representation is not None]
    _write_frame(out, {"ids": [e.id() for e in elements], "stamp": before})
    out.flush()
    sent: set[int] = set()

    def send(element: Any, triangles: np.ndarray, failed: str | None = None) -> None:
        head: dict[str, Any] = {
            "id": element.id(),
            "class": element.is_a(),
            "type": _predefined(element),
        }
        if failed:
            head["failed"] = failed
        _write_frame(out, head, np.ascontiguousarray(triangles, dtype=np.float32).tobytes())
        sent.add(element.id())

    first = [e for e in elements if shapes.draws_first(e)]
    rest = [e for e in elements if not shapes.draws_first(e)]
    threads = max(1, int(request.get("threads", 1)))
    for group in (first, rest):
        if group:
            for element, shape in shapes.iterate_shapes(model, group, threads):
                triangles, failed = shapes.triangles_of(element, shape.geometry)
                send(element, triangles, failed)
            out.flush()
    for element in elements:  # what the iterator skipped: alone, to learn why
        if element.id() not in sent:
            triangles, failed = shapes.shape_alone(element)
            send(element, triangles, failed)
    _write_frame(out, {"end": True})
    out.flush()
    return 0


def _predefined(element: Any) -> str | None:
    value = getattr(element, "PredefinedType", None)
    return None if value is None else str(value)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # not sys.exit: the thread reading stdin would block the interpreter's shutdown
