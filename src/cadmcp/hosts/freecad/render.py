"""Views of a FreeCAD document without its GUI: the visible shapes tessellated and rasterised.

What is drawn follows what FreeCAD's window would show: every visible object with faces that
no other object with a shape consumes (a Pad, not the Sketch it extrudes; a Body, not its
features; a Cut, not its tools). Colours are the objects' own when a GUI saved them, else a
palette by object.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cadmcp.host.builtins.raster import DIRECTIONS, Part, camera, render_parts
from cadmcp.wire.echo import echo

__all__ = ["render_document", "shown_objects"]

PALETTE = [
    (168, 186, 208),
    (214, 182, 140),
    (160, 200, 160),
    (208, 160, 170),
    (190, 180, 220),
    (200, 200, 150),
]
TOLERANCE_FRACTION = 1 / 400
"""Tessellation deviation as a fraction of the document's size: fine enough for a screenshot."""
MAX_FAILED_LISTED = 8


def _faces(obj: Any) -> Any:
    shape = getattr(obj, "Shape", None)
    if shape is None or not hasattr(shape, "isNull") or shape.isNull() or not shape.Faces:
        return None
    return shape


def shown_objects(doc: Any) -> list[Any]:
    """Visible objects with faces that no other object with a shape uses."""
    shown = []
    for obj in doc.Objects:
        if not getattr(obj, "Visibility", True) or _faces(obj) is None:
            continue
        if any(_faces(parent) is not None for parent in obj.InList):
            continue
        shown.append(obj)
    return shown


def _colour(obj: Any, index: int) -> tuple[int, int, int]:
    view = getattr(obj, "ViewObject", None)
    colour = getattr(view, "ShapeColor", None) if view is not None else None
    if colour:
        return tuple(round(c * 255) for c in colour[:3])  # type: ignore[return-value]
    return PALETTE[index % len(PALETTE)]


def render_document(
    doc: Any, title: str, width: int, height: int | None, view: str
) -> tuple[bytes, list[str]]:
    """PNG bytes of ``doc`` seen from ``view`` and notes about what could not be drawn."""
    objects = shown_objects(doc)
    box = None
    for obj in objects:
        bound = obj.Shape.BoundBox
        box = bound if box is None else box.united(bound)
    size = box.DiagonalLength if box is not None and box.isValid() else 1.0
    tolerance = max(size * TOLERANCE_FRACTION, 1e-4)
    parts: list[Part] = []
    failed: list[str] = []
    for index, obj in enumerate(objects):
        try:
            points, triangles = obj.Shape.tessellate(tolerance)
        except Exception as exc:
            failed.append(f"{obj.Name} ({echo(str(exc), 80)})")
            continue
        if not triangles:
            continue
        vertices = np.array([(p.x, p.y, p.z) for p in points], dtype=np.float64)
        parts.append(Part(vertices[np.asarray(triangles, dtype=np.int64)], _colour(obj, index)))
    # FreeCAD's faces are not all wound outwards (sketch faces, open shells): keep back faces
    png = render_parts(
        parts,
        width,
        height,
        camera(DIRECTIONS[view]),
        caption=f"{title} | {view}",
        cull_back_faces=False,
        empty_text="No shapes with faces to show",
    )
    notes = []
    if failed:
        listed = "; ".join(failed[:MAX_FAILED_LISTED])
        notes.append(
            f"[INCOMPLETE VIEW] Drew {len(parts)} of {len(objects)} objects; FreeCAD could not tessellate "
            f"{len(failed)}: {listed}."
        )
    if not objects and doc.Objects:
        notes.append(
            f"Nothing to draw: none of the {len(doc.Objects)} objects is a visible shape with faces "
            "(sketches and wires have none)."
        )
    return png, notes
