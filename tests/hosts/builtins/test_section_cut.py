"""A plan's section plane cuts what crosses it: a sloped roof keeps only its part below."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from cadmcp.host.builtins.raster import Part, clip_below, render_view


def test_each_triangle_keeps_its_part_below_the_plane() -> None:
    tris = np.array(
        [
            [[0, 0, 0], [1, 0, 0], [0, 1, 0]],  # below: kept whole
            [[0, 0, 5], [1, 0, 5], [0, 1, 5]],  # above: gone
            [[0, 0, 0], [2, 0, 2], [0, 2, 2]],  # one corner below: a smaller triangle
            [[0, 0, 0], [2, 0, 0], [0, 0, 2]],  # two corners below: a quad, as two triangles
            [[0, 0, 9], [1, 0, 9], [0, 1, 9]],  # an underlay above: kept whole
        ],
        float,
    )
    owner = np.arange(5)
    under = np.array([False, False, False, False, True])
    cut, by, flat = clip_below(tris, owner, under, 1.0)
    assert by.tolist() == [0, 2, 3, 3, 4]
    assert np.allclose(cut[1], [[0, 0, 0], [1, 0, 1], [0, 1, 1]])
    quad_area = sum(0.5 * np.linalg.norm(np.cross(t[1] - t[0], t[2] - t[0])) for t in cut[2:4])
    assert np.isclose(quad_area, 1.5)  # the part of the 2-by-2 triangle below z = 1
    assert flat.tolist() == [False, False, False, False, True]


def test_a_sloped_roof_is_drawn_only_up_to_the_cut_in_a_plan() -> None:
    """A roof plane rising from z 0 at y 0 to z 4 at y 10, cut at 2 m, over a floor underlay:
    seen from above, the roof covers the lower half only (it covered all of it)."""
    roof = np.array([[[0, 0, 0], [10, 0, 0], [10, 10, 4]], [[0, 0, 0], [10, 10, 4], [0, 10, 4]]], float)
    floor = np.array(
        [[[0, 0, -0.1], [10, 0, -0.1], [10, 10, -0.1]], [[0, 0, -0.1], [10, 10, -0.1], [0, 10, -0.1]]]
    )
    red, grey = (200, 40, 40), (150, 150, 150)
    rendered = render_view(
        [Part(roof, red), Part(floor, grey, underlay=True)], 200, 200, np.eye(3), cut_z=2.0
    )
    pixels = np.asarray(Image.open(io.BytesIO(rendered.png)).convert("RGB")).astype(int)
    reddish = (pixels[..., 0] > pixels[..., 1] + 60).mean(axis=1)  # per image row, top to bottom
    assert reddish[120:170].mean() > 0.5  # the roof's lower half (y 0 to 5) is drawn
    assert reddish[30:80].mean() < 0.05  # above the cut: only the floor shows
