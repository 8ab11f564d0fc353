"""Tessellated element geometry in world coordinates, cached per element and invalidated by edits."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import ifcopenshell
import numpy as np

from cadmcp.host.progress import report_progress
from cadmcp.hosts.ifc.documents import IfcDocument
from cadmcp.hosts.ifc.shapes import (
    BATCH,
    NO_TRIANGLES,
    draw_order,
    has_body,
    iterate_shapes,
    shape_alone,
    triangles_of,
)

if TYPE_CHECKING:
    from cadmcp.hosts.ifc.tessellator import ShapeWorker

MAX_INVALIDATION_WALK = 20_000


@dataclass(frozen=True)
class Mesh:
    """One element's triangles, ``(n, 3, 3)`` float32 world coordinates in metres."""

    element_id: int
    ifc_class: str
    predefined_type: str | None
    triangles: np.ndarray

    @property
    def empty(self) -> bool:
        return len(self.triangles) == 0


class GeometryCache:
    """Meshes of one document's elements by step id; call :meth:`invalidate` with touched ids on edits.

    Within :meth:`budget` tessellation stops at the deadline: elements not reached are left
    uncached and listed in :attr:`unfinished`, so a view can be drawn in bounded time and say what
    it still lacks. With a :attr:`worker` (a process tessellating the file as opened), the cache
    waits for its shapes instead of building them in the host, and builds only what the worker
    will not send (edited since, or the worker ended).
    """

    def __init__(
        self, doc: IfcDocument, worker: ShapeWorker | None = None, disk_stamp: list[int] | None = None
    ) -> None:
        self.doc = doc
        self.disk_stamp = disk_stamp
        """The file's size and mtime when the host read it: the worker's shapes are used only if it
        read the same."""
        self.meshes: dict[int, Mesh] = {}
        self.failed: dict[int, str] = {}
        """Elements whose shape IfcOpenShell could not build, by step id, with the reason."""
        self.unfinished: dict[int, str] = {}
        """Elements a budgeted call did not reach, by step id, with their class."""
        self.worker = worker
        self._budget: float | None = None
        self._deadline: float | None = None
        self._build = True
        self.rate = 0.0
        """Elements tessellated per second in the last budgeted call (for a time estimate)."""
        doc.listeners.append(lambda _doc, touched: self.invalidate(touched))

    @contextlib.contextmanager
    def budget(self, seconds: float, build: bool = True) -> Iterator[None]:
        """Tessellate for at most ``seconds`` inside the block, counted from the first :meth:`meshes_for`
        (what is not reached: :attr:`unfinished`); with a worker and ``build=False``, only wait for
        its shapes that long."""
        self.unfinished = {}
        self._budget, self._deadline, self._build = seconds, None, build
        try:
            yield
        finally:
            self._budget, self._deadline, self._build = None, None, True

    def _late(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    def collect(self) -> None:
        """Take the shapes the worker sent since the last call (on the application thread)."""
        worker = self.worker
        if worker is None:
            return
        if worker.stamp is not None and worker.stamp != self.disk_stamp:  # it read another file
            self.stop()
            return
        ended = worker.finished  # before taking: nothing arrives after the end
        meshes, failed = worker.take()
        for step_id, (ifc_class, predefined, triangles) in meshes.items():
            self.meshes.setdefault(step_id, Mesh(step_id, ifc_class, predefined, triangles))
        for step_id, reason in failed.items():
            self.failed.setdefault(step_id, reason)
        if ended:
            self.worker = None
            worker.stop()

    @property
    def preparing(self) -> bool:
        """Whether a worker process is still tessellating this document."""
        return self.worker is not None and not self.worker.finished

    def stop(self) -> None:
        """Stop the worker (the document is closed or its views forgotten)."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def _from_worker(self, missing: list[ifcopenshell.entity_instance]) -> None:
        """Wait for the worker's shapes of ``missing`` (until the budget's deadline, if any)."""
        worker = self.worker
        if worker is None:
            return
        wanted = {e.id() for e in missing if worker.will_send(e.id())}
        total, started = len(wanted), time.monotonic()
        while wanted:
            arrived = worker.wait(wanted, self._deadline)
            self.collect()
            wanted -= self.meshes.keys()
            if arrived or self._late() or self.worker is None:
                break
            done = total - len(wanted)
            report_progress(done / max(total, 1), f"tessellating: {done}/{total} elements ready")
        spent = time.monotonic() - started
        self.rate = worker.rate if spent > 0 else self.rate

    def meshes_for(self, elements: list[ifcopenshell.entity_instance]) -> list[Mesh]:
        """Meshes of ``elements``, tessellating the ones not cached yet (until a :meth:`budget` ends)."""
        if self._budget is not None and self._deadline is None:  # the budget counts from here
            self._deadline = time.monotonic() + self._budget
        self.collect()
        missing = [e for e in elements if e.id() not in self.meshes]
        if missing and self.worker is not None and self._deadline is not None:
            if self._build:
                self._build_beside_worker(missing)
            else:  # the warm-up: wait for the worker, never hold the host
                self._from_worker(missing)
            self.collect()
            self.unfinished.update((e.id(), e.is_a()) for e in missing if e.id() not in self.meshes)
            return [self.meshes[e.id()] for e in elements if e.id() in self.meshes]
        if missing and self.worker is not None and len(missing) > 1:
            # no deadline: what the worker will send is waited for (one element alone, e.g. for its
            # bounding box, is built here at once); the rest is built here
            self._from_worker(missing)
            missing = [e for e in missing if e.id() not in self.meshes]
        if missing and self._deadline is None:
            self._tessellate(missing)
        elif missing:
            started, before = time.monotonic(), len(self.meshes)
            self._tessellate_until(draw_order(missing))
            self.unfinished.update((e.id(), e.is_a()) for e in missing if e.id() not in self.meshes)
            spent = time.monotonic() - started
            if spent > 0 and self.worker is None:
                self.rate = (len(self.meshes) - before) / spent
        return [self.meshes[e.id()] for e in elements if e.id() in self.meshes]

    def _build_beside_worker(self, missing: list[ifcopenshell.entity_instance]) -> None:
        """A view's share of the work while the worker runs, until the deadline: build here while the
        worker is still reading the file (taking what it sent between batches); once it sends, wait
        for its shapes and build here only what it will not send (edited since). Both building in
        draw order would build the same elements twice, and the worker, with its own threads and no
        calls to answer, builds several times faster than the host."""

        def sending() -> bool:
            return self.worker is None or not self.worker.reading

        self._tessellate_until(draw_order(missing), stop=sending)
        self.collect()  # what it sent is no longer expected from it: not to be built here again
        missing = [e for e in missing if e.id() not in self.meshes]
        worker = self.worker
        own = [e for e in missing if worker is None or not worker.will_send(e.id())]
        if own:
            self._tessellate_until(draw_order(own))
        if self.worker is not None and len(own) < len(missing):
            self._from_worker(missing)

    def _tessellate_until(
        self, ordered: list[ifcopenshell.entity_instance], stop: Callable[[], bool] | None = None
    ) -> None:
        """Tessellate ``ordered`` a batch at a time until the deadline (or ``stop()`` says so)."""
        for start in range(0, len(ordered), BATCH):
            if self._late() or (stop is not None and stop()):
                return
            self.collect()
            batch = [e for e in ordered[start : start + BATCH] if e.id() not in self.meshes]
            if batch:
                self._tessellate(batch)

    def _tessellate(self, elements: list[ifcopenshell.entity_instance]) -> None:
        finished = True
        step = max(1, len(elements) // 20)  # about every 5%
        for done, (element, shape) in enumerate(iterate_shapes(self.doc.file, elements), start=1):
            self._store(element, *triangles_of(element, shape.geometry))
            if done % step == 0:
                report_progress(done / len(elements), f"tessellating {done}/{len(elements)} elements")
            if self._late():  # before the iterator's next step: it builds the next shape
                finished = False
                break
        if not finished:  # the deadline came: what the iterator did not reach stays uncached
            return
        tried = False
        for element in elements:
            # the iterator skips what it cannot build: ask for each such element alone, to learn why
            if element.id() not in self.meshes and has_body(element):
                if tried and self._late():
                    return  # not reached: left for the next call (not marked as failed or empty)
                tried = True
                self._store(element, *shape_alone(element))
            # no geometry (or it failed): remember that, don't retry every render
            self.meshes.setdefault(element.id(), Mesh(element.id(), element.is_a(), None, NO_TRIANGLES))

    def _store(
        self, element: ifcopenshell.entity_instance, triangles: np.ndarray, failed: str | None
    ) -> None:
        predefined = getattr(element, "PredefinedType", None)
        self.meshes[element.id()] = Mesh(element.id(), element.is_a(), predefined, triangles)
        if failed:
            self.failed[element.id()] = failed

    def bounding_box(self, element: ifcopenshell.entity_instance) -> dict[str, list[float]] | None:
        """World-space axis-aligned bounds of an element's geometry, or None without geometry."""
        meshes = self.meshes_for([element])
        if not meshes or meshes[0].empty:
            return None
        points = meshes[0].triangles.reshape(-1, 3)
        return {
            "min": [round(float(v), 4) for v in points.min(axis=0)],
            "max": [round(float(v), 4) for v in points.max(axis=0)],
        }

    def invalidate(self, touched: set[int]) -> None:
        """Forget meshes of products whose geometry may depend on the ``touched`` entities."""
        if not self.meshes and self.worker is None:
            self.failed.clear()
            return
        f = self.doc.file
        stale: set[int] = set()
        seen: set[int] = set()
        queue = list(touched)
        while queue:
            step_id = queue.pop()
            if step_id in seen:
                continue
            seen.add(step_id)
            if len(seen) > MAX_INVALIDATION_WALK:
                self.meshes.clear()
                self.failed.clear()
                self.stop()  # its shapes of the file as opened may all be stale now
                return
            try:
                entity = f.by_id(step_id)
            except RuntimeError:  # deleted
                stale.add(step_id)
                continue
            if entity.is_a("IfcProduct"):
                stale.add(step_id)
                if entity.is_a("IfcOpeningElement"):
                    queue += [rel.RelatingBuildingElement.id() for rel in entity.VoidsElements]
                continue
            if entity.is_a("IfcRelVoidsElement"):
                queue += [entity.RelatingBuildingElement.id(), entity.RelatedOpeningElement.id()]
                continue
            if entity.is_a("IfcRelationship"):
                continue
            queue += [inverse.id() for inverse in f.get_inverse(entity)]
        if self.worker is not None:
            self.worker.ignore(stale)
        for step_id in stale:
            self.meshes.pop(step_id, None)
            self.failed.pop(step_id, None)
