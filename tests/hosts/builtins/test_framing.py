"""The default frame of a view: where most of the geometry is, far outliers left out and counted."""

from __future__ import annotations

import numpy as np

from cadmcp.host.builtins.framing import main_frame


def boxes(centres: list[tuple[float, float]], size: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    c = np.array(centres, dtype=float)
    return c - size / 2, c + size / 2


def test_one_far_item_is_left_out_and_the_rest_framed() -> None:
    lo, hi = boxes([(i, j) for i in range(10) for j in range(7)] + [(3.4e6, 1.2e6)])
    frame = main_frame(lo, hi)
    assert list(frame.left_out) == [70]
    assert frame.hi[0] < 10 and frame.full_hi[0] > 3e6


def test_two_far_apart_groups_of_similar_size_both_stay() -> None:
    lo, hi = boxes([(i, 0) for i in range(20)] + [(1e5 + i, 0) for i in range(20)])
    assert main_frame(lo, hi).complete


def test_a_title_block_beside_the_plan_stays() -> None:
    plan = [(i, j) for i in range(20) for j in range(20)]
    lo, hi = boxes([*plan, (45, 5), (45, 10)])
    assert main_frame(lo, hi).complete


def test_a_few_items_are_always_framed_whole() -> None:
    lo, hi = boxes([(0, 0), (1, 1), (1e7, 1e7)])
    assert main_frame(lo, hi).complete
