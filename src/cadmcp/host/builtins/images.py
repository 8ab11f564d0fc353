"""Image sizes and the time budget shared by the screenshot tool and the renderers that draw for it."""

from __future__ import annotations

__all__ = [
    "DEFAULT_VIEW_BUDGET_S",
    "MAX_IMAGE_SIDE",
    "MIN_IMAGE_SIDE",
    "VIEW_BUDGET_ENV",
    "fit_height",
    "view_budget",
]

MIN_IMAGE_SIDE = 64
MAX_IMAGE_SIDE = 4096
VIEW_BUDGET_ENV = "CADMCP_SCREENSHOT_BUDGET"
DEFAULT_VIEW_BUDGET_S = 1.0
"""Seconds a view spends preparing what is not ready yet (drawing, tessellating); the rest is named."""


def fit_height(width: int, aspect: float, low: float = 0.0, high: float = float("inf")) -> int:
    """A height for ``width`` following ``aspect`` (height / width), kept within the image limits."""
    height = round(width * min(max(aspect, low), high))
    return int(min(max(height, MIN_IMAGE_SIDE), MAX_IMAGE_SIDE))


def view_budget() -> float:
    """Seconds a view may spend preparing geometry (``CADMCP_SCREENSHOT_BUDGET``, default 1)."""
    import os

    try:
        value = float(os.environ.get(VIEW_BUDGET_ENV) or DEFAULT_VIEW_BUDGET_S)
    except ValueError:
        return DEFAULT_VIEW_BUDGET_S
    return min(max(value, 0.0), 3600.0)
