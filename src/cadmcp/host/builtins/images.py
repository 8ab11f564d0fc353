"""Image sizes shared by the screenshot tool and the renderers that draw for it."""

from __future__ import annotations

__all__ = ["MAX_IMAGE_SIDE", "MIN_IMAGE_SIDE", "fit_height"]

MIN_IMAGE_SIDE = 64
MAX_IMAGE_SIDE = 4096


def fit_height(width: int, aspect: float, low: float = 0.0, high: float = float("inf")) -> int:
    """A height for ``width`` following ``aspect`` (height / width), kept within the image limits."""
    height = round(width * min(max(aspect, low), high))
    return int(min(max(height, MIN_IMAGE_SIDE), MAX_IMAGE_SIDE))
