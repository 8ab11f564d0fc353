"""Shapes of IFC products with IfcOpenShell alone: which products a view draws, in which order,
and their triangles in world coordinates.

Both the host's geometry cache (:mod:`cadmcp.hosts.ifc.geometry`) and the tessellation process
(:mod:`cadmcp.hosts.ifc.tessellator`) build shapes with these functions; the module needs
nothing of the host runtime, so the tessellation process starts without the MCP SDK.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import ifcopenshell
import numpy as np

GEOMETRY_LIBRARY = "hybrid-cgal-simple-opencascade"
"""Simple extrusions with CGAL, booleans (openings) with OpenCASCADE: ~4x faster than the default."""
SOLID_TYPES = frozenset(
    {
        "SweptSolid", "AdvancedSweptSolid", "Brep", "AdvancedBrep", "CSG", "Clipping", "SolidModel",
        "SurfaceModel", "Tessellation", "MappedRepresentation",
    }
)  # fmt: skip


NOT_IN_3D = ("IfcFeatureElement", "IfcSpace", "IfcSpatialZone", "IfcAnnotation", "IfcGrid")
"""Products a 3D view does not draw: openings and other features (cut out of their hosts), rooms and
zones (volumes that would hide what is in them; plans show rooms), 2D annotation and grids."""


def drawable(product: ifcopenshell.entity_instance) -> bool:
    """Whether a 3D view draws ``product``: it has a representation and is no kind in NOT_IN_3D."""
    return product.Representation is not None and not any(product.is_a(kind) for kind in NOT_IN_3D)


def drawable_elements(f: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    """Every product a 3D view of the whole model draws: elements, parts of assemblies, sites with
    terrain, proxies (see :data:`NOT_IN_3D` for what is left out)."""
    return [p for p in f.by_type("IfcProduct") if drawable(p)]


def storey_products(storey: ifcopenshell.entity_instance) -> list[ifcopenshell.entity_instance]:
    """Products of one storey: contained in it or its spaces, parts of its assemblies (aggregated or
    nested, at any depth), fillings of openings, and elements it references (a column spanning
    storeys). Sorted by step id for a stable order."""
    import ifcopenshell.util.element

    found = set(ifcopenshell.util.element.get_decomposition(storey, is_recursive=True))
    for rel in getattr(storey, "ReferencesElements", ()) or ():
        for element in rel.RelatedElements:
            found.add(element)
            found |= ifcopenshell.util.element.get_decomposition(element, is_recursive=True)
    return sorted(found, key=lambda e: e.id())


def has_body(element: ifcopenshell.entity_instance) -> bool:
    """Whether the element has a 3D body representation (an axis or a footprint alone draws nothing)."""
    return _has_body(element)


def _has_body(element: ifcopenshell.entity_instance) -> bool:
    """Whether the element has a 3D body representation (an axis or a footprint alone draws nothing)."""
    shape = element.Representation
    if shape is None:
        return False
    return any(
        (rep.RepresentationIdentifier or "") == "Body" or (rep.RepresentationType or "") in SOLID_TYPES
        for rep in shape.Representations or ()
    )


def _reason(exc: Exception, element: ifcopenshell.entity_instance) -> str:
    """Why a shape failed, on one line, without the STEP text IfcOpenShell quotes from the file."""
    text = " ".join(str(exc).split())
    text = re.split(r"\.? Product:|#\d+\s*=", text, maxsplit=1)[0].strip(" .:,") or type(exc).__name__
    if len(text) > 100:
        text = text[:99] + "…"
    return _describe(text, element)


def _describe(text: str, element: ifcopenshell.entity_instance) -> str:
    """``text`` and the element's representation kinds: ``Failed ... (Body: MappedRepresentation)``."""
    kinds = sorted(
        {
            f"{rep.RepresentationIdentifier or '?'}: {rep.RepresentationType or '?'}"
            for rep in element.Representation.Representations or ()
        }
    )
    return f"{text} ({', '.join(kinds)})" if kinds else text


def _settings() -> Any:
    import ifcopenshell.geom

    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    return settings


DRAW_FIRST = (
    "IfcSlab", "IfcRoof", "IfcWall", "IfcCurtainWall", "IfcColumn", "IfcBeam", "IfcCovering", "IfcPlate",
    "IfcMember", "IfcFooting", "IfcStair", "IfcRamp", "IfcRailing", "IfcWindow", "IfcDoor",
)  # fmt: skip
"""Classes tessellated first when time is short: what shapes a building's picture most."""
BATCH = 32
"""Elements per geometry iterator run when tessellating under a deadline."""


def _rank(element: ifcopenshell.entity_instance) -> int:
    return next((i for i, name in enumerate(DRAW_FIRST) if element.is_a(name)), len(DRAW_FIRST))


def draws_first(element: ifcopenshell.entity_instance) -> bool:
    """Whether ``element`` is of a class in :data:`DRAW_FIRST`."""
    return _rank(element) < len(DRAW_FIRST)


def draw_order(elements: list[ifcopenshell.entity_instance]) -> list[ifcopenshell.entity_instance]:
    """``elements`` with the ones that shape the picture most first (stable within a class)."""
    return sorted(elements, key=_rank)


def iterate_shapes(
    f: ifcopenshell.file, elements: list[ifcopenshell.entity_instance], threads: int = 1
) -> Iterator[tuple[ifcopenshell.entity_instance, Any]]:
    """``(element, shape)`` for each of ``elements`` IfcOpenShell's iterator builds; it skips what it
    cannot build, and stops at an exception (one bad representation): :func:`shape_alone` the rest."""
    import ifcopenshell.geom

    by_id = {e.id(): e for e in elements}
    try:
        iterator = ifcopenshell.geom.iterator(
            _settings(), f, threads, include=elements, geometry_library=GEOMETRY_LIBRARY
        )
        if not iterator.initialize():
            return
        while True:
            shape = iterator.get()
            if shape.id in by_id:
                yield by_id[shape.id], shape
            if not iterator.next():
                return
    except Exception:
        return


def triangles_of(element: ifcopenshell.entity_instance, geometry: Any) -> tuple[np.ndarray, str | None]:
    """An element's triangles from IfcOpenShell's triangulation, and why none when it has a body."""
    verts = np.asarray(geometry.verts, dtype=np.float32).reshape(-1, 3)
    faces = np.asarray(geometry.faces, dtype=np.int64).reshape(-1, 3)
    failed = None
    if not len(faces) and _has_body(element):  # built without error, but nothing to draw
        failed = _describe("produced no geometry", element)
    return verts[faces], failed


NO_TRIANGLES = np.zeros((0, 3, 3), np.float32)


def shape_alone(element: ifcopenshell.entity_instance) -> tuple[np.ndarray, str | None]:
    """Tessellate one element the iterator skipped: its triangles, or none and why it failed."""
    if not _has_body(element):
        return NO_TRIANGLES, None
    import ifcopenshell.geom

    try:
        return triangles_of(element, ifcopenshell.geom.create_shape(_settings(), element).geometry)
    except Exception as exc:
        return NO_TRIANGLES, _reason(exc, element)
