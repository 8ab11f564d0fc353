"""What has been drawn of a layout so far, kept between views of an unchanged drawing.

ezdxf's frontend draws a large drawing in tens of seconds. A view drawn in bounded time stops
at its deadline; what it drew (the recorded shapes of the first entities in drawing order) is
kept here, and the next view of the same layout at the same resolution goes on from there, so
asking again shows more, and the warm-up finishes it in the background. Shapes drawn in several
passes are the same, in the same order, as one pass draws: each pass covers the next run of
entities in the frontend's order.

A drawing made at a finer resolution serves a coarser view as well (its curves are flattened
more finely, its dashes are shorter than needed): a view framed on part of a layout draws the
whole layout at the window's resolution, and the default view after it, or a wider window, reuses
that drawing instead of drawing every entity again. Drawings more than :data:`FINEST` times finer
are not reused, as painting their extra vertices would cost more than it saves.

A kept drawing is valid only for the drawing as it was: any change (a script, undo, redo, a
save, a preview) bumps :attr:`ViewCache.revision`, and the entity count is checked too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Drawn", "ViewCache"]


@dataclass
class Drawn:
    """One layout drawn so far at one resolution: coverage, shapes and how far drawing got."""

    coverage: Any
    shapes: list[Any] = field(default_factory=list)
    done: int = 0
    """Top-level entities, in the frontend's order, drawn so far."""
    complete: bool = False


KEPT = 2
"""Drawings kept per document (a view framed on part of a layout draws it again more finely)."""

FINEST = 8.0
"""A kept drawing serves a view whose pixel is up to this many times its own pixel."""


class ViewCache:
    """The last few drawings of one document, by layout, resolution, layers and background."""

    def __init__(self) -> None:
        self.revision = 0
        self._drawn: dict[tuple[Any, ...], Drawn] = {}
        self._known: dict[tuple[Any, ...], Any] = {}

    def changed(self) -> None:
        """The drawing changed: what was drawn of it is stale."""
        self.revision += 1
        self._drawn.clear()
        self._known.clear()

    def get(self, key: tuple[Any, ...], pixel: float, new: Any) -> tuple[Drawn, float]:
        """A drawing under ``key`` fine enough for ``pixel`` (world units per pixel) and its own pixel:
        a kept one of the current revision (complete first, then the furthest drawn, then the
        coarsest), or a fresh one from ``new()`` at ``pixel``."""
        fits = [
            (kept, drawn)
            for kept, drawn in self._drawn.items()
            if kept[:-2] == key and kept[-1] == self.revision and pixel / FINEST <= kept[-2] <= pixel
        ]
        if fits:
            found, drawn = max(fits, key=lambda item: (item[1].complete, item[1].done, item[0][-2]))
            pixel = found[-2]
        else:
            found, drawn = (*key, pixel, self.revision), Drawn(new())
        self._drawn.pop(found, None)
        self._drawn[found] = drawn  # the most recent last
        while len(self._drawn) > KEPT:
            del self._drawn[next(iter(self._drawn))]
        return drawn, pixel

    def known(self, key: tuple[Any, ...], compute: Any) -> Any:
        """``compute()``, kept under ``key`` until the drawing changes (e.g. a sample of its extents)."""
        if key not in self._known:
            self._known[key] = compute()
        return self._known[key]
