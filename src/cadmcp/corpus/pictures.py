"""Whether a screenshot shows anything: the share of pixels that are not background."""

from __future__ import annotations

import io
from dataclasses import dataclass

THRESHOLD = 40
"""A pixel is ink when a channel differs from the background by more than this."""
GRID = 16
BLANK_SHARE = 0.0005
BLANK_CELLS = 3


@dataclass(frozen=True)
class Ink:
    """How much of a picture is drawn: share of ink pixels and inked cells of a 16 x 16 grid."""

    width: int
    height: int
    share: float
    cells: int

    @property
    def blank(self) -> bool:
        """All background, or nearly so (a few specks, e.g. the model squeezed into a corner)."""
        return self.share < BLANK_SHARE or self.cells <= BLANK_CELLS


def measure(png: bytes) -> Ink:
    """Measure a PNG. The background of a row is its first and last pixel (gradients allowed)."""
    import numpy
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        rgb = numpy.asarray(image.convert("RGB"), dtype=numpy.int16)
    height, width = rgb.shape[:2]
    left, right = rgb[:, :1, :], rgb[:, -1:, :]
    ink = (numpy.abs(rgb - left).max(axis=2) > THRESHOLD) & (numpy.abs(rgb - right).max(axis=2) > THRESHOLD)
    ys, xs = numpy.nonzero(ink)
    cells = len(set(zip((ys * GRID // height).tolist(), (xs * GRID // width).tolist(), strict=True)))
    return Ink(width, height, float(ink.mean()) if ink.size else 0.0, cells)
