"""IFC views: axonometric, plan and top renders of element meshes, one colour per IFC class.

The rasterising is the built-in surface's (:mod:`cadmcp.host.builtins.raster`); this module
picks colours and the camera.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from cadmcp.host.builtins.raster import Part, Rendered, axonometric, render_view
from cadmcp.hosts.ifc.geometry import Mesh

View = Literal["axonometric", "plan", "top"]

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
MARK_COLOUR = (255, 106, 0)
"""Marked elements (e.g. what the last change created or modified) are drawn in this orange."""
PLAN = np.eye(3)


def colour_of(mesh: Mesh, view: View) -> tuple[int, int, int]:
    """The display colour of an element; slabs are lighter in plan so walls read above them."""
    if mesh.ifc_class == "IfcSlab" and mesh.predefined_type == "ROOF":
        colour = ROOF_COLOUR
    else:
        colour = CLASS_COLOURS.get(mesh.ifc_class, DEFAULT_COLOUR)
    if view == "plan" and mesh.ifc_class in ("IfcSlab", "IfcSpace", "IfcCovering"):
        colour = tuple(int(c + (255 - c) * 0.55) for c in colour)  # type: ignore[assignment]
    return colour


def render(
    meshes: Sequence[Mesh],
    width: int,
    height: int | None,
    view: View,
    *,
    underlay: Sequence[Mesh] = (),
    caption: str | None = None,
    cut_z: float | None = None,
    framing: str = "main",
    marked: frozenset[int] = frozenset(),
) -> tuple[Rendered, list[Mesh]]:
    """Render ``meshes`` (and ``underlay`` meshes drawn beneath everything); returns the rendering and
    the meshes in the order of its part indices (``Rendered.left_out`` refers to them).

    ``cut_z`` (world metres) cuts the non-underlay meshes like a plan's section plane. IfcOpenShell
    emits closed solids wound outwards, so faces turned away are culled. ``framing`` is 'main'
    (far outliers left out of the frame) or 'all'. Elements whose ids are in ``marked`` are drawn in
    :data:`MARK_COLOUR`.
    """
    shown = [m for m in meshes if not m.empty]
    beneath = [m for m in underlay if not m.empty]

    def colour(m: Mesh) -> tuple[int, int, int]:
        return MARK_COLOUR if m.element_id in marked else colour_of(m, view)

    parts = [Part(m.triangles, colour(m)) for m in shown]
    parts += [Part(m.triangles, colour(m), underlay=True) for m in beneath]
    camera = PLAN if view in ("plan", "top") else axonometric()
    rendered = render_view(parts, width, height, camera, caption=caption, cut_z=cut_z, framing=framing)
    return rendered, [*shown, *beneath]


def render_png(
    meshes: Sequence[Mesh],
    width: int,
    height: int | None,
    view: View,
    *,
    underlay: Sequence[Mesh] = (),
    caption: str | None = None,
    cut_z: float | None = None,
) -> bytes:
    """Render ``meshes`` (and ``underlay`` meshes drawn beneath everything) to PNG bytes, framing all."""
    return render(
        meshes, width, height, view, underlay=underlay, caption=caption, cut_z=cut_z, framing="all"
    )[0].png
