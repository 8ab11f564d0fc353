"""Views of a FreeCAD document without its GUI: the visible shapes tessellated and rasterised.

What is drawn follows what FreeCAD's window would show: every visible object with faces,
wherever it sits (in groups, App::Part containers, Bodies, behind links), placed where its
containers put it; an object whose shape another visible (or itself consumed) feature was
built from is left out (a Pad, not the Sketch it extrudes; a Body, not its features; a Cut,
not its tools), as FreeCAD hides it. Containers draw through their children; section planes,
drawing views and clones use objects without consuming them. What cannot be drawn (visible
wires and sketches without faces, shapes that fail to tessellate) is named in the notes and in
the coverage beside the image. Colours are a palette by object (the GUI's colours are not
loaded without it).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cadmcp.host.builtins.raster import DIRECTIONS, Part, camera, render_parts
from cadmcp.hosts.freecad.bounded import bounded_shape, has_bounded_faces
from cadmcp.wire.echo import echo

__all__ = ["Scene", "named_by_reason", "render_document", "scene"]

MARK_COLOUR = (255, 106, 0)
"""Marked objects (e.g. what the last change created or modified) are drawn in this orange."""
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
ANGULAR_DEFLECTION = 0.35
"""Radians a curved face's mesh may turn between facets (a cylinder becomes about 18 sides)."""
TESSELLATION_BUDGET_S = 30.0
"""Seconds one view may spend tessellating; the rest is named as not drawn (and meshed next time)."""
MESH_CACHE_VERTICES = 6_000_000
"""Triangle corners kept tessellated between views (about 140 MB)."""
MAX_PARTIAL = 16
"""Shapes whose tessellation a view left half done, kept to go on with."""
MAX_LISTED = 8
"""Objects named one by one in a note."""
MAX_STRUCTURED = 50
"""Objects listed in the structured coverage."""
ANNOTATIONS = ("LinearDimension", "AngularDimension", "Dimension", "Text", "DraftText", "Label", "DraftLabel")
"""Proxy classes of Draft annotations: the window draws them, a headless view has no geometry for them."""
MAX_MARK_WALK = 2_000
"""Objects a mark may follow up to the drawn shapes made from it."""
NOT_CONSUMING = ("Clone", "_SectionPlane", "_ArchDrawingView")
"""Proxy classes that use other objects without hiding them (a clone is a copy placed elsewhere)."""


@dataclass
class Scene:
    """What a view of the document draws and what it leaves out, with the reason."""

    drawn: list[tuple[Any, Any]] = field(default_factory=list)
    """(object, its shape in the coordinates of the container it sits in) for every object drawn."""
    omitted: list[tuple[Any, str]] = field(default_factory=list)
    """(object, reason) for visible objects with geometry that cannot be drawn."""
    hidden: int = 0
    """Objects with faces that are hidden (by themselves or a hidden container) or consumed."""
    visibility: _Visibility | None = None
    """How each object's visibility and use by others was decided (for marks)."""


def _own_shape(obj: Any) -> Any:
    """The object's own shape (a Shape property, or what a link shows), or None."""
    shape = None
    if "Shape" in getattr(obj, "PropertiesList", ()):
        shape = obj.Shape
    elif obj.TypeId.startswith("App::Link"):
        import Part as FreeCADPart

        shape = FreeCADPart.getShape(obj)
    if (shape is None or shape.isNull()) and obj.TypeId == "PartDesign::Body":
        shape = _tip_shape(obj)
    if shape is None or not hasattr(shape, "isNull") or shape.isNull():
        return None
    return shape


def _tip_shape(body: Any) -> Any:
    """A Body's shape from its Tip, placed by the Body, as a recompute would give it.

    A file can hold a Body with an empty shape (FreeCAD's own PartDesignExample.FCStd: its
    features were saved, the Body never recomputed); opened and drawn as it was, every feature of
    the Body (the Pad under each Pocket) was drawn as a solid of its own, the pockets filled in.
    """
    tip = getattr(body, "Tip", None)
    shape = getattr(tip, "Shape", None)
    if shape is None or shape.isNull():
        return None
    placed = shape.copy()
    placed.Placement = body.Placement.multiply(placed.Placement)
    return placed


def _has_faces(obj: Any) -> bool:
    """Faces beyond a datum's unbounded plane (an LCS attached to a part does not consume it)."""
    return has_bounded_faces(_own_shape(obj))


def _is_container(obj: Any) -> bool:
    """A group, an App::Part or an Arch building part: its children draw themselves."""
    if _proxy_class(obj) == "BuildingPart":
        return True
    return "Shape" not in obj.PropertiesList and obj.hasExtension("App::GroupExtension")


def _geo_parent(obj: Any) -> Any:
    with_parent = getattr(obj, "getParentGeoFeatureGroup", None)
    return with_parent() if with_parent is not None else None


def _proxy_class(obj: Any) -> str:
    proxy = getattr(obj, "Proxy", None)
    return type(proxy).__name__ if proxy is not None else ""


class _Visibility:
    """Visible and consumed, decided once per object (cycles end as 'not consumed')."""

    def __init__(self) -> None:
        self._shown: dict[str, bool] = {}
        self._consumed: dict[str, bool] = {}

    def shown(self, obj: Any) -> bool:
        """Visible itself and in every enclosing App::Part or Body."""
        if obj.Name not in self._shown:
            self._shown[obj.Name] = False  # a cycle is not shown
            visible = bool(getattr(obj, "Visibility", True))
            parent = _geo_parent(obj)
            self._shown[obj.Name] = visible and (parent is None or self.shown(parent))
        return self._shown[obj.Name]

    def consumed(self, obj: Any) -> bool:
        """Another feature with faces was made from it and is itself shown or consumed."""
        if obj.Name not in self._consumed:
            self._consumed[obj.Name] = False
            self._consumed[obj.Name] = any(self._consumes(user, obj) for user in obj.InList)
        return self._consumed[obj.Name]

    def consumers(self, obj: Any, drawn: set[str], limit: int = MAX_LISTED) -> list[Any]:
        """The drawn objects whose shape was made from ``obj`` (directly or through features that are
        themselves used): where a marked Pad under a Pocket shows."""
        found: dict[str, Any] = {}
        seen = {obj.Name}
        todo = [obj]
        while todo and len(seen) < MAX_MARK_WALK:
            current = todo.pop()
            for user in current.InList:
                if user.Name in seen or not self._consumes(user, current):
                    continue
                seen.add(user.Name)
                if user.Name in drawn:
                    found[user.Name] = user
                else:
                    todo.append(user)
        return list(found.values())[:limit]

    def _consumes(self, user: Any, obj: Any) -> bool:
        if user is obj or _is_container(user) or _proxy_class(user) in NOT_CONSUMING:
            return False
        if user.TypeId.startswith("App::Link") or not user.isDerivedFrom("Part::Feature"):
            return False
        if not _has_faces(user):
            return False
        return self.shown(user) or self.consumed(user)


def _placement(obj: Any) -> np.ndarray | None:
    """The 4x4 matrix of the App::Part / Body chain the object sits in, or None at the top level."""
    parent = _geo_parent(obj)
    if parent is None:
        return None
    return np.array(parent.getGlobalPlacement().toMatrix().A, dtype=np.float64).reshape(4, 4)


class _Meshes:
    """Triangles of shapes already tessellated, by shape and tolerance (a second view is quick).

    A copy is tessellated: the mesh left on the document's own shape made OpenCASCADE bound the
    shape by it, so a bounding box read after a picture differed from one read before.
    """

    def __init__(self, budget: int = MESH_CACHE_VERTICES) -> None:
        self.budget = budget
        self._meshes: OrderedDict[tuple[Any, ...], np.ndarray] = OrderedDict()
        self._partial: dict[tuple[Any, ...], tuple[int, list[np.ndarray]]] = {}

    def triangles(self, obj: Any, shape: Any, tolerance: float, deadline: float) -> np.ndarray | None:
        """``(n, 3, 3)`` triangles of ``shape`` in its own coordinates; None once ``deadline`` passed.

        Face by face with MeshPart and a bounded angle: OpenCASCADE holds Python's lock while it
        meshes, and ``Shape.tessellate`` of one shape took 92 s (568,000 triangles where 31,000
        do) on a third-party model, during which the host's I/O thread could not answer.
        """
        key = (obj.Document.Name, obj.Name, shape.hashCode(), round(tolerance, 9))
        found = self._meshes.get(key)
        if found is not None:
            self._meshes.move_to_end(key)
            return found
        import MeshPart

        done, chunks = self._partial.pop(key, (0, []))
        all_faces = shape.copy().Faces
        for index in range(done, len(all_faces)):
            if time.monotonic() > deadline:
                if index > done or chunks:  # the next view goes on from here
                    self._partial[key] = (index, chunks)
                    while len(self._partial) > MAX_PARTIAL:
                        self._partial.pop(next(iter(self._partial)))
                return None
            mesh = MeshPart.meshFromShape(
                Shape=all_faces[index], LinearDeflection=tolerance, AngularDeflection=ANGULAR_DEFLECTION,
                Relative=False,
            )  # fmt: skip
            points, faces = mesh.Topology
            if faces:
                vertices = np.array([(p.x, p.y, p.z) for p in points], dtype=np.float64).reshape(-1, 3)
                chunks.append(vertices[np.asarray(faces, dtype=np.int64).reshape(-1, 3)])
        triangles = np.concatenate(chunks) if chunks else np.zeros((0, 3, 3))
        self._meshes[key] = triangles
        while sum(len(t) for t in self._meshes.values()) * 3 > self.budget and len(self._meshes) > 1:
            self._meshes.popitem(last=False)
        return triangles


MESHES = _Meshes()


NOT_SHAPES = (
    "Path::",
    "Mesh::",
    "Points::",
    "Fem::FemMesh",
    "Fem::Constraint",
    "Fem::FemPost",
    "Fem::FemResult",
)
"""Kinds of object FreeCAD shows without a shape (toolpaths, meshes, FEM objects, point clouds):
named as left out when visible, never dropped without a word."""
NOTHING_TO_SEE = frozenset({"ToolController", "SetupSheet"})
"""Their kind's objects that FreeCAD's window shows nothing of (a job's tool controllers)."""


def scene(doc: Any) -> Scene:
    """Sort the document's objects into drawn, omitted (with why) and hidden."""
    seen = _Visibility()
    out = Scene(visibility=seen)
    for obj in doc.Objects:
        if _is_container(obj):
            continue
        try:
            shape = _own_shape(obj)
        except Exception as exc:
            if seen.shown(obj):
                out.omitted.append((obj, f"whose shape cannot be read ({echo(str(exc), 60)})"))
            continue
        if shape is None:
            annotation = _proxy_class(obj) in ANNOTATIONS or obj.TypeId.startswith("App::Annotation")
            if annotation and seen.shown(obj):
                out.omitted.append((obj, "annotations without a 3D shape (dimensions, texts, labels)"))
            elif (
                obj.TypeId.startswith(NOT_SHAPES)
                and _proxy_class(obj) not in NOTHING_TO_SEE
                and seen.shown(obj)
            ):
                out.omitted.append(
                    (obj, "that headless views do not draw (toolpaths, meshes, FEM objects, points)")
                )
            continue
        if not seen.shown(obj) or seen.consumed(obj):
            out.hidden += has_bounded_faces(shape)
            continue
        if not shape.Faces:
            if shape.Edges and not obj.TypeId.startswith("App::Origin"):
                out.omitted.append(
                    (obj, "without faces (wires, sketches, lines; headless views draw faces only)")
                )
            continue
        bounded = bounded_shape(shape)  # datum planes and coordinate systems are not drawn
        if bounded is not None:
            out.drawn.append((obj, bounded))
    return out


def named_by_reason(items: list[tuple[Any, str]]) -> str:
    by_reason: dict[str, list[str]] = {}
    for obj, reason in items:
        by_reason.setdefault(reason, []).append(obj.Name)
    parts = []
    for reason, names in by_reason.items():
        listed = ", ".join(names[:MAX_LISTED]) + (
            f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
        )
        parts.append(f"{len(names)} {reason}: {listed}")
    return "; ".join(parts)


def render_document(
    doc: Any, title: str, width: int, height: int | None, view: str, marked: frozenset[str] = frozenset()
) -> tuple[bytes, list[str], dict[str, Any]]:
    """PNG bytes of ``doc`` seen from ``view``, notes on what is not drawn, and the coverage. Objects
    named in ``marked`` are drawn in :data:`MARK_COLOUR`."""
    found = scene(doc)
    box = None
    for _, shape in found.drawn:
        bound = shape.BoundBox
        box = bound if box is None else box.united(bound)
    size = box.DiagonalLength if box is not None and box.isValid() else 1.0
    tolerance = max(size * TOLERANCE_FRACTION, 1e-4)
    parts: list[Part] = []
    drawn: list[Any] = []
    omitted = list(found.omitted)
    deadline = time.monotonic() + TESSELLATION_BUDGET_S
    coloured, unshown = _marked(doc, found, marked)
    for index, (obj, shape) in enumerate(found.drawn):
        try:
            triangles = MESHES.triangles(obj, shape, tolerance, deadline)
        except Exception as exc:
            omitted.append((obj, f"that FreeCAD could not tessellate ({echo(str(exc), 60)})"))
            continue
        if triangles is None:
            omitted.append(
                (
                    obj,
                    f"not tessellated within the {TESSELLATION_BUDGET_S:g} s a view may take (ask again: "
                    "the next view goes on where this one stopped)",
                )
            )
            continue
        if not len(triangles):
            omitted.append((obj, "whose faces gave no triangles"))
            continue
        matrix = _placement(obj)
        if matrix is not None:
            triangles = triangles @ matrix[:3, :3].T + matrix[:3, 3]
        parts.append(Part(triangles, MARK_COLOUR if obj.Name in coloured else PALETTE[index % len(PALETTE)]))
        drawn.append(obj)
    # FreeCAD's faces are not all wound outwards (sketch faces, open shells): keep back faces
    png = render_parts(
        parts,
        width,
        height,
        camera(DIRECTIONS[view]),
        caption=f"{title} | {view}",
        cull_back_faces=False,
        empty_text="No shapes with faces to show",
        depth_edges=True,
    )
    notes = []
    if omitted:
        notes.append(
            f"[INCOMPLETE VIEW] Drew {len(drawn)} objects; {len(omitted)} visible ones are not in the "
            f"picture: {named_by_reason(omitted)}."
        )
    if not drawn and doc.Objects:
        notes.append(
            f"Nothing to draw: none of the {len(doc.Objects)} objects is a visible shape with faces "
            f"({found.hidden} with faces are hidden or used by another feature)."
        )
    coverage = {
        "view": view,
        "drawnCount": len(drawn),
        "drawn": [o.Name for o in drawn[:MAX_STRUCTURED]],
        "omittedCount": len(omitted),
        "omitted": [
            {"object": o.Name, "label": o.Label, "type": o.TypeId, "reason": reason}
            for o, reason in omitted[:MAX_STRUCTURED]
        ],
        "hiddenCount": found.hidden,
    }
    if marked:
        coverage["marked"] = sorted(o.Name for o in drawn if o.Name in coloured)
    if unshown:
        coverage["markedNotShown"] = unshown[:MAX_STRUCTURED]
        said = "; ".join(f"{m['object']} {m['reason']}" for m in unshown[:MAX_LISTED])
        more = f"; and {len(unshown) - MAX_LISTED} more" if len(unshown) > MAX_LISTED else ""
        notes.append(f"[MARK] {len(unshown)} marked object(s) are not drawn themselves: {said}{more}.")
    return png, notes, coverage


def _marked(doc: Any, found: Scene, marked: frozenset[str]) -> tuple[set[str], list[dict[str, Any]]]:
    """The drawn objects to colour for the marked names, and what is said of each marked object not
    drawn itself: a feature another one was made from (a Pad under a Pocket, a Sketch under a Pad)
    is marked on the drawn shape that holds it; a hidden one, or one with nothing to draw, says so."""
    drawn = {obj.Name for obj, _ in found.drawn}
    coloured = set(marked & drawn)
    unshown: list[dict[str, Any]] = []
    seen = found.visibility or _Visibility()
    omitted = {obj.Name: reason for obj, reason in found.omitted}
    for name in sorted(marked - drawn):
        obj = doc.getObject(name)
        if obj is None:
            unshown.append({"object": name, "reason": "is no object of this document"})
            continue
        holders = seen.consumers(obj, drawn)
        if holders:
            names = [h.Name for h in holders]
            coloured.update(names)
            unshown.append(
                {"object": name, "reason": f"is part of {', '.join(names)}: marked there", "shownAs": names}
            )
        elif name in omitted:
            unshown.append({"object": name, "reason": f"is left out of headless views ({omitted[name]})"})
        elif not seen.shown(obj):
            unshown.append(
                {
                    "object": name,
                    "reason": "is hidden (itself or its container): set its Visibility to show it",
                }
            )
        else:
            unshown.append({"object": name, "reason": "has no faces to draw"})
    return coloured, unshown
