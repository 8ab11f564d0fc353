"""What a picture of FreeCAD's own 3D view (its window) shows of a document, and what it leaves out.

The window draws every visible object itself (sketches, wires and annotations included), so a
picture of it leaves out only visible objects with nothing to draw (an empty shape), objects far
from the rest that the default framing leaves out (:func:`cadmcp.host.builtins.framing.main_frame`),
and with the user's own camera (view ``current``) objects outside it. Objects whose recompute
failed or that wait for one are drawn as last computed, which is not the model now: the picture
says so too. The same coverage shape as the headless views (:mod:`cadmcp.hosts.freecad.render`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cadmcp.host.builtins.framing import main_frame
from cadmcp.hosts.freecad.render import named_by_reason

__all__ = ["WindowScene", "coverage", "frame", "window_scene"]

"""Objects named one by one in a note."""
MAX_STRUCTURED = 50
"""Objects listed in the structured coverage."""
SKIPPED_TYPES = ("App::Origin", "App::Line", "App::Plane", "App::DocumentObjectGroup")
"""Helpers the window shows only while editing, and plain groups (their children draw themselves)."""
FAR = "far from the rest of the model, left out of the default frame"
OUTSIDE = "outside the current camera"
EMPTY = "with an empty shape (nothing to draw)"


@dataclass
class WindowScene:
    """The document's objects as the window shows them."""

    drawn: list[Any] = field(default_factory=list)
    """Visible objects the window draws."""
    boxes: list[tuple[np.ndarray, np.ndarray] | None] = field(default_factory=list)
    """Each drawn object's box in document coordinates (None: it has no shape to measure)."""
    omitted: list[tuple[Any, str]] = field(default_factory=list)
    """(object, reason) for visible objects that the picture does not show."""
    outdated: list[tuple[Any, str]] = field(default_factory=list)
    """(object, reason) for drawn objects shown as last computed, not as the model is now."""
    hidden: int = 0
    """Objects with a shape that are hidden (by themselves or by a hidden container)."""


def _parent(obj: Any) -> Any:
    with_parent = getattr(obj, "getParentGeoFeatureGroup", None)
    return with_parent() if with_parent is not None else None


def _shown(obj: Any, memo: dict[str, bool]) -> bool:
    """Visible itself and in every enclosing App::Part or Body (a cycle is not shown)."""
    if obj.Name not in memo:
        memo[obj.Name] = False
        parent = _parent(obj)
        memo[obj.Name] = bool(getattr(obj, "Visibility", True)) and (parent is None or _shown(parent, memo))
    return memo[obj.Name]


def _shape(obj: Any) -> Any:
    """The object's shape (a link's: what it shows), or None when it has no Shape at all."""
    if obj.TypeId.startswith("App::Link"):
        import Part

        return Part.getShape(obj)
    return obj.Shape if "Shape" in obj.PropertiesList else None


def _box(obj: Any, shape: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The shape's box in document coordinates (its containers' placements applied)."""
    bound = shape.BoundBox
    if not bound.isValid():
        return None
    corners = np.array(
        [
            [x, y, z]
            for x in (bound.XMin, bound.XMax)
            for y in (bound.YMin, bound.YMax)
            for z in (bound.ZMin, bound.ZMax)
        ]
    )
    parent = _parent(obj)
    if parent is not None and not obj.TypeId.startswith("App::Link"):
        matrix = np.array(parent.getGlobalPlacement().toMatrix().A, dtype=np.float64).reshape(4, 4)
        corners = corners @ matrix[:3, :3].T + matrix[:3, 3]
    return corners.min(axis=0), corners.max(axis=0)


def _is_container(obj: Any) -> bool:
    return obj.TypeId in SKIPPED_TYPES or (
        "Shape" not in obj.PropertiesList and obj.hasExtension("App::GroupExtension")
    )


def window_scene(doc: Any) -> WindowScene:
    """Sort the document's objects into drawn (with boxes), omitted, outdated and hidden."""
    out = WindowScene()
    memo: dict[str, bool] = {}
    for obj in doc.Objects:
        if getattr(obj, "ViewObject", None) is None or _is_container(obj):
            continue
        try:
            shape = _shape(obj)
        except Exception:
            shape = None
        if not _shown(obj, memo):
            out.hidden += shape is not None and not shape.isNull()
            continue
        if shape is not None and shape.isNull():
            if obj.isDerivedFrom("Part::Feature") and not obj.TypeId.startswith("PartDesign::Body"):
                out.omitted.append((obj, EMPTY))
            continue
        out.drawn.append(obj)
        out.boxes.append(None if shape is None else _box(obj, shape))
        state = obj.State
        if "Invalid" in state or "Error" in state:
            out.outdated.append((obj, "whose recompute failed (drawn as last computed, or not at all)"))
        elif "Touched" in state:
            out.outdated.append((obj, "waiting for a recompute (drawn as last computed)"))
    return out


def frame(scene: WindowScene, camera: Any, aspect: float, keep_camera: bool) -> list[tuple[Any, str]]:
    """Frame the picture and return the drawn objects it leaves out, with why.

    ``camera`` is the view's Coin camera, already looking from the view's side with everything
    fitted; unless ``keep_camera`` (the user's own camera) it is narrowed to where most of the
    geometry is when a few objects lie far away.
    """
    measured = [(obj, box) for obj, box in zip(scene.drawn, scene.boxes, strict=True) if box is not None]
    if not measured:
        return []
    lo = np.array([box[0] for _, box in measured])
    hi = np.array([box[1] for _, box in measured])
    from pivy import coin

    if keep_camera:
        volume = camera.getViewVolume(aspect)
        out = []
        for (obj, _), a, b in zip(measured, lo, hi, strict=True):
            points = [
                volume.projectToScreen(coin.SbVec3f(x, y, z)).getValue()
                for x in (a[0], b[0])
                for y in (a[1], b[1])
                for z in (a[2], b[2])
            ]
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            if max(xs) < 0 or min(xs) > 1 or max(ys) < 0 or min(ys) > 1:
                out.append((obj, OUTSIDE))
        return out
    chosen = main_frame(lo, hi)
    if chosen.complete:
        return []
    box = coin.SbBox3f(*(float(v) for v in chosen.lo), *(float(v) for v in chosen.hi))
    camera.viewBoundingBox(box, aspect, 1.0)
    return [(measured[int(i)][0], FAR) for i in chosen.left_out]


def _listed(items: list[tuple[Any, str]]) -> list[dict[str, str]]:
    return [
        {"object": o.Name, "label": o.Label, "type": o.TypeId, "reason": reason}
        for o, reason in items[:MAX_STRUCTURED]
    ]


def coverage(
    scene: WindowScene, view: str, framed_out: list[tuple[Any, str]]
) -> tuple[list[str], dict[str, Any]]:
    """The notes and the structured coverage of a picture of ``scene`` framed as :func:`frame` did."""
    left_out = {obj.Name for obj, _ in framed_out}
    drawn = [obj for obj in scene.drawn if obj.Name not in left_out]
    omitted = scene.omitted + framed_out
    notes = []
    if omitted:
        notes.append(
            f"[INCOMPLETE VIEW] Shows {len(drawn)} objects; {len(omitted)} visible ones are not in the "
            f"picture: {named_by_reason(omitted)}."
        )
    if scene.outdated:
        notes.append(
            f"[OUTDATED VIEW] {len(scene.outdated)} objects are not drawn as the model is now: "
            f"{named_by_reason(scene.outdated)}."
        )
    data = {
        "view": view,
        "drawnCount": len(drawn),
        "drawn": [o.Name for o in drawn[:MAX_STRUCTURED]],
        "omittedCount": len(omitted),
        "omitted": _listed(omitted),
        "outdatedCount": len(scene.outdated),
        "outdated": _listed(scene.outdated),
        "hiddenCount": scene.hidden,
    }
    return notes, data
