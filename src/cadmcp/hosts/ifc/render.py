"""A small numpy z-buffer rasteriser: orthographic axonometric and plan views of element meshes to PNG.

Flat shading by face normal, one colour per IFC class, dark outlines where the element or the
face orientation changes. Triangles are rasterised in batches of similar screen size so the
work stays in numpy.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from cadmcp.hosts.ifc.geometry import Mesh

View = Literal["axonometric", "plan"]

BACKGROUND = (246, 246, 243)
DEFAULT_COLOUR = (180, 180, 180)
CLASS_COLOURS: dict[str, tuple[int, int, int]] = {
    "IfcWall": (222, 214, 196),
    "IfcWallStandardCase": (222, 214, 196),
    "IfcSlab": (176, 176, 172),
    "IfcRoof": (168, 82, 62),
    "IfcDoor": (150, 104, 62),
    "IfcWindow": (120, 170, 214),
    "IfcColumn": (150, 150, 160),
    "IfcBeam": (140, 140, 160),
    "IfcStair": (190, 170, 140),
    "IfcRailing": (90, 90, 90),
    "IfcSpace": (204, 228, 196),
    "IfcFurnishingElement": (200, 160, 120),
    "IfcCovering": (200, 200, 190),
}
ROOF_COLOUR = (168, 82, 62)
FRAGMENT_BATCH = 2_000_000


def colour_of(mesh: Mesh, view: View) -> tuple[int, int, int]:
    """The display colour of an element; slabs are lighter in plan so walls read above them."""
    if mesh.ifc_class == "IfcSlab" and mesh.predefined_type == "ROOF":
        colour = ROOF_COLOUR
    else:
        colour = CLASS_COLOURS.get(mesh.ifc_class, DEFAULT_COLOUR)
    if view == "plan" and mesh.ifc_class in ("IfcSlab", "IfcSpace", "IfcCovering"):
        colour = tuple(int(c + (255 - c) * 0.55) for c in colour)  # type: ignore[assignment]
    return colour


def _camera(view: View) -> np.ndarray:
    """Rows: screen right, screen up, towards the viewer."""
    if view == "plan":
        return np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float64)
    azimuth, elevation = math.radians(-60.0), math.radians(30.0)
    eye = np.array(
        [
            math.cos(elevation) * math.cos(azimuth),
            math.cos(elevation) * math.sin(azimuth),
            math.sin(elevation),
        ]
    )
    right = np.cross([0.0, 0.0, 1.0], eye)
    right /= np.linalg.norm(right)
    up = np.cross(eye, right)
    return np.stack([right, up, eye])


def render_png(
    meshes: Sequence[Mesh],
    width: int,
    height: int | None,
    view: View,
    *,
    underlay: Sequence[Mesh] = (),
    caption: str | None = None,
    cut_z: float | None = None,
    cull_back_faces: bool = True,
) -> bytes:
    """Render ``meshes`` (and ``underlay`` meshes drawn beneath everything) to PNG bytes.

    ``cut_z`` (world metres) cuts the non-underlay meshes like a plan's section plane: triangles
    wholly above it are dropped, the rest are flattened onto it, so walls show their footprint.
    """
    from PIL import Image, ImageDraw

    if cut_z is not None:  # underlay (floors, rooms) above the section plane is not part of this plan
        underlay = [m for m in underlay if not m.empty and float(m.triangles[..., 2].min()) <= cut_z]
    drawn = [(m, False) for m in meshes if not m.empty] + [(m, True) for m in underlay if not m.empty]
    camera = _camera(view)
    if not drawn:
        h = height or round(width * 0.75)
        image = Image.new("RGB", (width, h), BACKGROUND)
        ImageDraw.Draw(image).text((12, 12), caption or "No geometry to show", fill=(80, 80, 80))
        return _png(image)

    tris = np.concatenate([m.triangles for m, _ in drawn]).astype(np.float64)
    owner = np.concatenate([np.full(len(m.triangles), i, np.int32) for i, (m, _) in enumerate(drawn)])
    under = np.array([u for _, u in drawn])[owner]
    if cut_z is not None:
        below = under | (tris[..., 2].min(axis=1) <= cut_z)
        tris, owner, under = tris[below], owner[below], under[below]
        tris[..., 2] = np.where(under[:, None], tris[..., 2], np.minimum(tris[..., 2], cut_z))
    colours = np.array([colour_of(m, view) for m, _ in drawn], dtype=np.float64)[owner]

    # Flat shading from the face normal (two-sided).
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    keep = lengths > 1e-12
    tris, owner, under, colours, normals = tris[keep], owner[keep], under[keep], colours[keep], normals[keep]
    normals /= lengths[keep][:, None]
    light = camera[2] * 0.8 + camera[0] * 0.35 + camera[1] * 0.5
    light /= np.linalg.norm(light)
    shade = 0.45 + 0.55 * np.abs(normals @ light)
    tri_rgb = np.clip(colours * shade[:, None], 0, 255)

    # Orthographic projection fitted to the image with a margin.
    cam = tris @ camera.T  # (T, 3, 3): x right, y up, depth towards the viewer
    lo, hi = cam[..., :2].reshape(-1, 2).min(axis=0), cam[..., :2].reshape(-1, 2).max(axis=0)
    extent = np.maximum(hi - lo, 1e-6)
    if height is None:
        height = int(np.clip(round(width * extent[1] / extent[0]), width * 0.4, width * 1.25))
    margin = 0.05
    scale = min(width * (1 - 2 * margin) / extent[0], height * (1 - 2 * margin) / extent[1])
    centre = (lo + hi) / 2
    sx = (cam[..., 0] - centre[0]) * scale + width / 2
    sy = height / 2 - (cam[..., 1] - centre[1]) * scale
    depth = cam[..., 2].copy()
    depth[under] -= 1e6  # underlay never hides anything

    candidates = np.arange(len(tris))
    if cull_back_faces and cut_z is None:
        # IfcOpenShell emits closed solids wound outwards: faces turned away are always hidden.
        candidates = np.nonzero(normals @ camera[2] > -1e-9)[0]
    tri_buf = _rasterise(sx[candidates], sy[candidates], depth[candidates], width, height)
    tri_buf = np.append(candidates, -1)[tri_buf]  # back to triangle numbers; -1 stays background

    # Per-triangle tables with one extra entry at index -1 for the background.
    palette = np.vstack([tri_rgb.astype(np.uint8), np.array(BACKGROUND, np.uint8)])
    image = palette[tri_buf]
    _outline(image, np.append(owner, -1)[tri_buf], np.append(shade, -1.0).astype(np.float32)[tri_buf])
    picture = Image.fromarray(image)
    if caption:
        ImageDraw.Draw(picture).text((10, 8), caption, fill=(60, 60, 60))
    return _png(picture)


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


def _outline(image: np.ndarray, element: np.ndarray, tone: np.ndarray) -> None:
    """Darken pixels where the element or the face orientation changes (silhouettes and creases)."""
    edge = np.zeros(element.shape, dtype=bool)
    edge[:-1] |= (element[1:] != element[:-1]) | (np.abs(tone[1:] - tone[:-1]) > 0.04)
    edge[:, :-1] |= (element[:, 1:] != element[:, :-1]) | (np.abs(tone[:, 1:] - tone[:, :-1]) > 0.04)
    image[edge] = (image[edge] * 0.45).astype(np.uint8)


def _png(image: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # type: ignore[attr-defined]
    return buffer.getvalue()
