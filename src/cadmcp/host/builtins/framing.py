"""Default framing of a view: the extents of where most of the geometry is, outliers named.

A single stray entity millions of units away makes zoom-to-extents show that entity alone
and shrink the rest to a dot. :func:`main_frame` frames the items (entities, elements)
around the middle of the drawing instead and says which ones it left out:

* the *core* is the box from the 10th to the 90th percentile of the item centres, per
  axis (so up to a tenth of the items on each side cannot move it), at least as large as
  the median item;
* an item is kept when its box lies within ``MARGIN`` core sizes around the core;
* the outliers are left out only when showing them would shrink the kept geometry to
  less than ``1 / SHRINK`` of the picture; otherwise everything is framed.

Two far-apart groups of similar size both stay in the frame (both are inside the
percentile box); a title block beside a plan stays (within two core sizes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MARGIN", "SHRINK", "Frame", "main_frame"]

QUANTILE = 0.10
MARGIN = 2.0
"""How far around the core (in core sizes) an item still belongs to the main frame."""
SHRINK = 4.0
"""Leave outliers out only if including them would shrink the rest more than this."""
MIN_ITEMS = 5


@dataclass(frozen=True)
class Frame:
    """The framed box and which items it leaves out (indices into the boxes given)."""

    lo: np.ndarray
    hi: np.ndarray
    full_lo: np.ndarray
    full_hi: np.ndarray
    left_out: np.ndarray

    @property
    def complete(self) -> bool:
        return len(self.left_out) == 0


def main_frame(lo: np.ndarray, hi: np.ndarray) -> Frame:
    """Frame items with boxes ``lo``/``hi`` (``(n, d)`` arrays of box corners) by the rule above."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    full_lo, full_hi = lo.min(axis=0), hi.max(axis=0)
    everything = Frame(full_lo, full_hi, full_lo, full_hi, np.zeros(0, dtype=np.int64))
    if len(lo) < MIN_ITEMS:
        return everything
    centres = (lo + hi) / 2
    core_lo, core_hi = np.quantile(centres, [QUANTILE, 1 - QUANTILE], axis=0)
    size = max(float((core_hi - core_lo).max()), float(np.median((hi - lo).max(axis=1))))
    if size <= 0:
        size = max(float((full_hi - full_lo).max()) * 1e-6, 1e-9)
    region_lo, region_hi = core_lo - MARGIN * size, core_hi + MARGIN * size
    inside = np.all((lo >= region_lo) & (hi <= region_hi), axis=1)
    if not inside.any() or inside.all():
        return everything
    kept_lo, kept_hi = lo[inside].min(axis=0), hi[inside].max(axis=0)
    kept_span = max(float((kept_hi - kept_lo).max()), size * 1e-3)
    if float((full_hi - full_lo).max()) <= SHRINK * kept_span:
        return everything
    return Frame(kept_lo, kept_hi, full_lo, full_hi, np.nonzero(~inside)[0])
