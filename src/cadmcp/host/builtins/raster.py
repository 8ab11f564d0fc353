"""A small numpy z-buffer rasteriser for hosts without a GPU view: triangle meshes to PNG.

Orthographic projection along a camera, flat shading by face normal, one colour per mesh,
dark outlines where the mesh or the face orientation changes and, when asked, where the depth
jumps (the rim of a pocket or a step seen head-on, whose faces share colour and shade).
Triangles are rasterised in batches of similar screen size so the work stays in numpy. Used
by the IFC host's views and by the FreeCAD host without its GUI; Pillow is imported on first use.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cadmcp.host.builtins.images import fit_height

__all__ = [
    "DIRECTIONS",
    "Part",
    "Rendered",
    "blank_png",
    "camera",
    "render_parts",
    "render_view",
    "uniform_colour",
]

BACKGROUND = (246, 246, 243)
FRAGMENT_BATCH = 2_000_000
DEPTH_JUMP_PX = 3.0
"""A depth step between neighbouring pixels larger than this many pixel widths is an edge."""
DIRECTIONS: dict[str, tuple[float, float, float]] = {
    "isometric": (1.0, -1.0, 1.0),
    "front": (0.0, -1.0, 0.0),
    "rear": (0.0, 1.0, 0.0),
    "top": (0.0, 0.0, 1.0),
    "bottom": (0.0, 0.0, -1.0),
    "right": (1.0, 0.0, 0.0),
    "left": (-1.0, 0.0, 0.0),
}
"""Where the viewer stands, for the usual named views (z up, front looks towards +y)."""


@dataclass(frozen=True)
class Part:
    """Triangles ``(n, 3, 3)`` in world coordinates drawn in one colour; an underlay never hides anything."""

    triangles: Any
    colour: tuple[int, int, int]
    underlay: bool = False


@dataclass(frozen=True)
class Rendered:
    """A rendered view and what it shows: parts left out of the frame (indices into the parts given)
    and whether any part covers a pixel."""

    png: bytes
    left_out: tuple[int, ...] = ()
    covered: bool = True
    frame: tuple[tuple[float, float], tuple[float, float]] | None = None
    """Screen-plane (camera right, up) box framed: (min, max)."""
    seen: frozenset[int] = frozenset()
    """Parts (indices into the parts given) with at least one pixel in the picture: a part drawn but
    not seen is hidden behind others from this view."""


def blank_png(width: int, height: int, rgb: tuple[int, int, int] = BACKGROUND) -> bytes:
    """A plain PNG written with the standard library (when numpy or Pillow cannot be used)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = (b"\x00" + bytes(rgb) * width) * height
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def uniform_colour(png: bytes) -> tuple[int, ...] | None:
    """The single colour of an image that has only one (a blank view), else None."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        extrema = image.convert("RGB").getextrema()
    if all(low == high for low, high in extrema):
        return tuple(low for low, _ in extrema)
    return None


def camera(eye: Sequence[float]) -> np.ndarray:
    """Rows: screen right, screen up, towards the viewer, for a viewer standing along ``eye``."""
    towards = np.asarray(eye, dtype=np.float64)
    towards /= np.linalg.norm(towards)
    up_hint = np.array([0.0, 0.0, 1.0]) if abs(towards[2]) < 0.99 else np.array([0.0, 1.0, 0.0])
    right = np.cross(up_hint, towards)
    right /= np.linalg.norm(right)
    up = np.cross(towards, right)
    return np.stack([right, up, towards])


def axonometric(azimuth_deg: float = -60.0, elevation_deg: float = 30.0) -> np.ndarray:
    """A camera looking down at ``elevation_deg`` from the direction ``azimuth_deg``."""
    azimuth, elevation = math.radians(azimuth_deg), math.radians(elevation_deg)
    return camera(
        (
            math.cos(elevation) * math.cos(azimuth),
            math.cos(elevation) * math.sin(azimuth),
            math.sin(elevation),
        )
    )


def render_parts(
    parts: Sequence[Part], width: int, height: int | None, view: np.ndarray, **options: Any
) -> bytes:
    """Render ``parts`` seen through camera ``view`` (see :func:`camera`) to PNG bytes, framing all;
    ``options`` are :func:`render_view`'s (caption, cut_z, background, ...)."""
    return render_view(parts, width, height, view, framing="all", **options).png


def clip_below(
    tris: np.ndarray, owner: np.ndarray, under: np.ndarray, cut_z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The triangles cut at height ``cut_z``, keeping what is below it: those wholly below stay,
    those wholly above go, and one that crosses the plane becomes the one or two triangles of its
    part below. Underlay triangles (``under``) are kept whole. ``owner`` follows each triangle."""
    inside = tris[..., 2] <= cut_z
    count = inside.sum(axis=1)
    whole = under | (count == 3)
    keep = [tris[whole]], [owner[whole]], [under[whole]]
    for n_in in (1, 2):
        rows = np.nonzero(~under & (count == n_in))[0]
        if not len(rows):
            continue
        # roll each triangle so that its odd vertex (the one inside, or the one outside) is first
        odd = np.argmax(inside[rows], axis=1) if n_in == 1 else np.argmin(inside[rows], axis=1)
        order = (odd[:, None] + np.arange(3)) % 3
        t = tris[rows[:, None], order]
        first, second, third = t[:, 0], t[:, 1], t[:, 2]

        def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            """Where the edge a-b meets the plane (a and b on either side of it)."""
            share = (cut_z - a[:, 2]) / (b[:, 2] - a[:, 2])
            return a + (b - a) * share[:, None]

        if n_in == 1:  # first is below: one smaller triangle
            pieces = [np.stack([first, cross(first, second), cross(first, third)], axis=1)]
        else:  # first is above: the quad below, as two triangles
            near, far = cross(second, first), cross(third, first)
            pieces = [np.stack([second, third, far], axis=1), np.stack([second, far, near], axis=1)]
        for piece in pieces:
            keep[0].append(piece)
            keep[1].append(owner[rows])
            keep[2].append(under[rows])
    order = np.argsort(np.concatenate(keep[1]), kind="stable")  # triangles stay grouped by part
    return np.concatenate(keep[0])[order], np.concatenate(keep[1])[order], np.concatenate(keep[2])[order]


def render_view(
    parts: Sequence[Part],
    width: int,
    height: int | None,
    view: np.ndarray,
    *,
    caption: str | None = None,
    cut_z: float | None = None,
    cull_back_faces: bool = True,
    background: tuple[int, int, int] = BACKGROUND,
    empty_text: str = "No geometry to show",
    depth_edges: bool = False,
    framing: str = "main",
) -> Rendered:
    """Render ``parts`` seen through camera ``view`` (see :func:`camera`).

    ``framing='main'`` frames where most parts are (:func:`cadmcp.host.builtins.framing.main_frame`)
    and reports the far ones left out; ``'all'`` frames every part. ``cut_z`` cuts the non-underlay
    parts like a plan's section plane: what is above it is cut away (a sloped roof or rafter keeps
    only its part below), the rest is flattened onto it, so walls show their footprint. Back faces
    are culled when the meshes are closed solids wound outwards. ``depth_edges`` also outlines
    pixels where the depth jumps by more than a few pixels' worth between neighbours (each
    pixel's depth compared with what its neighbour's surface plane predicts there).
    """
    from PIL import Image, ImageDraw

    from cadmcp.host.builtins.framing import main_frame

    index = list(range(len(parts)))
    if cut_z is not None:  # underlay (floors, rooms) above the section plane is not part of this plan
        index = [
            i
            for i in index
            if not parts[i].underlay or float(np.asarray(parts[i].triangles)[..., 2].min()) <= cut_z
        ]
    index = [i for i in index if len(parts[i].triangles)]
    drawn = [parts[i] for i in index]

    def nothing() -> Rendered:
        h = fit_height(height or width, 1.0 if height else 0.75)
        image = Image.new("RGB", (width, h), background)
        ImageDraw.Draw(image).text((12, 12), caption or empty_text, fill=(80, 80, 80))
        return Rendered(_png(image), covered=False)

    if not drawn:
        return nothing()

    tris = np.concatenate([np.asarray(p.triangles) for p in drawn]).astype(np.float64)
    owner = np.concatenate([np.full(len(p.triangles), i, np.int32) for i, p in enumerate(drawn)])
    under = np.array([p.underlay for p in drawn])[owner]
    if cut_z is not None:
        tris, owner, under = clip_below(tris, owner, under, cut_z)
        tris[..., 2] = np.where(under[:, None], tris[..., 2], np.minimum(tris[..., 2], cut_z))
    colours = np.array([p.colour for p in drawn], dtype=np.float64)[owner]

    # Flat shading from the face normal (two-sided).
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    keep = lengths > 1e-12
    tris, owner, under, colours, normals = tris[keep], owner[keep], under[keep], colours[keep], normals[keep]
    if not len(tris):  # everything above the section plane, or degenerate
        return nothing()
    normals /= lengths[keep][:, None]
    light = view[2] * 0.8 + view[0] * 0.35 + view[1] * 0.5
    light /= np.linalg.norm(light)
    shade = 0.45 + 0.55 * np.abs(normals @ light)
    tri_rgb = np.clip(colours * shade[:, None], 0, 255)

    # Orthographic projection fitted to the image with a margin.
    cam = tris @ view.T  # (T, 3, 3): x right, y up, depth towards the viewer
    flat = cam[..., :2].reshape(-1, 2)
    lo, hi = flat.min(axis=0), flat.max(axis=0)
    left_out: tuple[int, ...] = ()
    if framing == "main" and len(drawn) > 1:
        present = np.unique(owner)
        starts = np.searchsorted(owner, present)  # triangles stay grouped by part
        part_lo = np.minimum.reduceat(cam[..., :2].min(axis=1), starts, axis=0)
        part_hi = np.maximum.reduceat(cam[..., :2].max(axis=1), starts, axis=0)
        frame = main_frame(part_lo, part_hi)
        if not frame.complete:
            lo, hi = frame.lo, frame.hi
            left_out = tuple(index[int(present[i])] for i in frame.left_out)
    extent = np.maximum(hi - lo, 1e-6)
    if height is None:
        height = fit_height(width, float(extent[1] / extent[0]), 0.4, 1.25)
    margin = 0.05
    scale = min(width * (1 - 2 * margin) / extent[0], height * (1 - 2 * margin) / extent[1])
    centre = (lo + hi) / 2
    sx = (cam[..., 0] - centre[0]) * scale + width / 2
    sy = height / 2 - (cam[..., 1] - centre[1]) * scale
    depth = cam[..., 2].copy()
    depth[under] -= 1e6  # underlay never hides anything

    candidates = np.arange(len(tris))
    if cull_back_faces and cut_z is None:
        candidates = np.nonzero(normals @ view[2] > -1e-9)[0]
    raster = _rasterise(sx[candidates], sy[candidates], depth[candidates], width, height)
    tri_buf = np.append(candidates, -1)[raster]  # back to triangle numbers; -1 stays background

    # Per-triangle tables with one extra entry at index -1 for the background.
    palette = np.vstack([tri_rgb.astype(np.uint8), np.array(background, np.uint8)])
    image = palette[tri_buf]
    jumps = None
    if depth_edges:
        jumps = _depth_jumps(raster, sx[candidates], sy[candidates], depth[candidates], DEPTH_JUMP_PX / scale)
    _outline(image, np.append(owner, -1)[tri_buf], np.append(shade, -1.0).astype(np.float32)[tri_buf], jumps)
    picture = Image.fromarray(image)
    if caption:
        ImageDraw.Draw(picture).text((10, 8), caption, fill=(60, 60, 60))
    frame_box = ((float(lo[0]), float(lo[1])), (float(hi[0]), float(hi[1])))
    visible = np.unique(np.append(owner, -1)[tri_buf])
    seen = frozenset(index[int(i)] for i in visible if i >= 0)
    return Rendered(_png(picture), left_out, bool((tri_buf >= 0).any()), frame_box, seen)


def _rasterise(sx: np.ndarray, sy: np.ndarray, depth: np.ndarray, width: int, height: int) -> np.ndarray:
    """Index of the nearest triangle per pixel (-1 = background), sampling pixel centres.

    Scanline conversion in bulk: every (triangle, pixel row) pair becomes one span, every span
    its pixels, so the work is proportional to the pixels actually covered.
    """
    x0, x1, x2 = sx[:, 0], sx[:, 1], sx[:, 2]
    y0, y1, y2 = sy[:, 0], sy[:, 1], sy[:, 2]
    z0, z1, z2 = depth[:, 0], depth[:, 1], depth[:, 2]
    det = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    ok = np.abs(det) > 1e-9
    safe = np.where(ok, det, 1.0)
    dzdx = ((z1 - z0) * (y2 - y0) - (z2 - z0) * (y1 - y0)) / safe
    dzdy = ((x1 - x0) * (z2 - z0) - (x2 - x0) * (z1 - z0)) / safe
    row_lo = np.clip(np.ceil(np.minimum(np.minimum(y0, y1), y2) - 0.5), 0, height).astype(np.int64)
    row_hi = np.clip(np.floor(np.maximum(np.maximum(y0, y1), y2) - 0.5), -1, height - 1).astype(np.int64)
    rows_per_tri = np.where(ok, np.maximum(row_hi - row_lo + 1, 0), 0)

    tri_buf = np.full(width * height, -1, dtype=np.int64)
    total_rows = int(rows_per_tri.sum())
    if total_rows == 0:
        return tri_buf.reshape(height, width)
    r_tri = np.repeat(np.arange(len(sx)), rows_per_tri)
    r_y = np.arange(total_rows) - np.repeat(np.cumsum(rows_per_tri) - rows_per_tri, rows_per_tri)
    r_y += row_lo[r_tri]
    cy = r_y + 0.5

    left = np.full(total_rows, np.inf)
    right = np.full(total_rows, -np.inf)
    for (xa, ya), (xb, yb) in (((x0, y0), (x1, y1)), ((x1, y1), (x2, y2)), ((x2, y2), (x0, y0))):
        ax, ay, bx, by = xa[r_tri], ya[r_tri], xb[r_tri], yb[r_tri]
        crosses = ((ay - cy) * (by - cy) <= 0) & (ay != by)
        t = np.where(crosses, (cy - ay) / np.where(ay != by, by - ay, 1.0), 0.0)
        x = ax + t * (bx - ax)
        left = np.where(crosses, np.minimum(left, x), left)
        right = np.where(crosses, np.maximum(right, x), right)
    first = np.clip(np.ceil(left - 0.5), 0, width).astype(np.int64)
    last = np.clip(np.floor(right - 0.5), -1, width - 1).astype(np.int64)
    counts = np.maximum(last - first + 1, 0)

    # Per span: first pixel index, depth there and its step per pixel; fragments only add an offset.
    r_dzdx = dzdx[r_tri]
    span_z = z0[r_tri] + r_dzdx * (first + 0.5 - x0[r_tri]) + dzdy[r_tri] * (cy - y0[r_tri])
    # Depth as a 31-bit integer in the high half of a key whose low half is the triangle, so one
    # maximum.at pass keeps the nearest triangle per pixel.
    z_lo, z_hi = float(depth.min()), float(depth.max())
    z_scale = (2**31 - 2) / max(z_hi - z_lo, 1e-12)
    span_q = (span_z - z_lo) * z_scale
    step_q = r_dzdx * z_scale
    span_pix = r_y * width + first
    keys = np.full(width * height, -1, dtype=np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    # Emit fragments in batches of whole spans to bound memory.
    cuts = np.searchsorted(ends, np.arange(FRAGMENT_BATCH, int(ends[-1]), FRAGMENT_BATCH), side="right")
    bounds = [0, *np.unique(cuts).tolist(), len(counts)]
    for lo, hi in itertools.pairwise(bounds):
        n = counts[lo:hi]
        total = int(n.sum())
        if total == 0:
            continue
        span = np.repeat(np.arange(lo, hi), n)
        offset = np.arange(total) - (starts[span] - starts[lo])
        q = np.clip(span_q[span] + step_q[span] * offset, 0, 2**31 - 2).astype(np.int64)
        np.maximum.at(keys, span_pix[span] + offset, (q << 32) | r_tri[span])
    covered = keys >= 0
    tri_buf[covered] = keys[covered] & 0xFFFFFFFF
    return tri_buf.reshape(height, width)


def _depth_jumps(
    raster: np.ndarray, sx: np.ndarray, sy: np.ndarray, depth: np.ndarray, tolerance: float
) -> np.ndarray:
    """Pixels whose depth differs from their right or lower neighbour's by more than ``tolerance``
    beyond what either pixel's triangle plane predicts (a depth discontinuity, not a slope)."""
    x0, x1, x2 = sx[:, 0], sx[:, 1], sx[:, 2]
    y0, y1, y2 = sy[:, 0], sy[:, 1], sy[:, 2]
    z0, z1, z2 = depth[:, 0], depth[:, 1], depth[:, 2]
    det = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    safe = np.where(np.abs(det) > 1e-9, det, 1.0)
    dzdx = ((z1 - z0) * (y2 - y0) - (z2 - z0) * (y1 - y0)) / safe
    dzdy = ((x1 - x0) * (z2 - z0) - (x2 - x0) * (z1 - z0)) / safe
    height, width = raster.shape
    covered = raster >= 0
    tri = np.where(covered, raster, 0)
    px = np.arange(width)[None, :] + 0.5
    py = np.arange(height)[:, None] + 0.5
    z = z0[tri] + dzdx[tri] * (px - x0[tri]) + dzdy[tri] * (py - y0[tri])
    gx, gy = dzdx[tri], dzdy[tri]
    jump = np.zeros(raster.shape, dtype=bool)
    both = covered[:, :-1] & covered[:, 1:]
    ahead = np.abs(z[:, 1:] - (z[:, :-1] + gx[:, :-1]))
    behind = np.abs(z[:, :-1] - (z[:, 1:] - gx[:, 1:]))
    jump[:, :-1] |= both & (np.minimum(ahead, behind) > tolerance)
    both = covered[:-1] & covered[1:]
    ahead = np.abs(z[1:] - (z[:-1] + gy[:-1]))
    behind = np.abs(z[:-1] - (z[1:] - gy[1:]))
    jump[:-1] |= both & (np.minimum(ahead, behind) > tolerance)
    return jump


def _outline(
    image: np.ndarray, element: np.ndarray, tone: np.ndarray, jumps: np.ndarray | None = None
) -> None:
    """Darken pixels where the element or the face orientation changes (silhouettes and creases),
    and the depth discontinuities ``jumps``."""
    edge = np.zeros(element.shape, dtype=bool)
    edge[:-1] |= (element[1:] != element[:-1]) | (np.abs(tone[1:] - tone[:-1]) > 0.04)
    edge[:, :-1] |= (element[:, 1:] != element[:, :-1]) | (np.abs(tone[:, 1:] - tone[:, :-1]) > 0.04)
    if jumps is not None:
        edge |= jumps
    image[edge] = (image[edge] * 0.45).astype(np.uint8)


def _png(image: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # type: ignore[attr-defined]
    return buffer.getvalue()
