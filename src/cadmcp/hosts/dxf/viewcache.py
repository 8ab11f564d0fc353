"""What has been drawn of a layout so far, kept between views of an unchanged drawing.

ezdxf's frontend draws a large drawing in tens of seconds. A view drawn in bounded time stops
at its deadline; what it drew (the recorded shapes of the first entities in drawing order) is
kept here, and the next view of the same layout at the same resolution goes on from there, so
asking again shows more, and the warm-up finishes it in the background. Shapes drawn in several
passes are the same, in the same order, as one pass draws: each pass covers the next run of
entities in the frontend's order.

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


class ViewCache:
    """The last few drawings of one document, by layout, resolution, layers and background."""

    def __init__(self) -> None:
        self.revision = 0
        self._drawn: dict[tuple[Any, ...], Drawn] = {}

    def changed(self) -> None:
        """The drawing changed: what was drawn of it is stale."""
        self.revision += 1
        self._drawn.clear()

    def get(self, key: tuple[Any, ...], new: Any) -> Drawn:
        """The drawing kept under ``key`` (with the current revision), or a fresh one from ``new()``."""
        key = (*key, self.revision)
        drawn = self._drawn.pop(key, None) or Drawn(new())
        self._drawn[key] = drawn  # the most recent last
        while len(self._drawn) > KEPT:
            del self._drawn[next(iter(self._drawn))]
        return drawn
