"""Building models generated with ``ifcopenshell.api``: the empty project, the sample house, bench grids.

Everything is real IFC4 with extruded geometry, so the host's tools, resources and
screenshots work on these exactly as on a model exported from a BIM application.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

import ifcopenshell
import ifcopenshell.api.aggregate
import ifcopenshell.api.context
import ifcopenshell.api.feature
import ifcopenshell.api.geometry
import ifcopenshell.api.project
import ifcopenshell.api.pset
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import ifcopenshell.api.type
import ifcopenshell.api.unit
import ifcopenshell.guid
import ifcopenshell.util.placement
import numpy as np

FIXED_TIMESTAMP = "2026-01-01T00:00:00"
_GUID_NAMESPACE = uuid.UUID("6f1c1f7e-4c1a-4c55-9b7e-0c5d2b1e6a10")


@dataclass
class Project:
    """Handles of the spatial skeleton most generators need."""

    file: ifcopenshell.file
    body: ifcopenshell.entity_instance
    building: ifcopenshell.entity_instance
    storeys: list[ifcopenshell.entity_instance]


def _create(f: ifcopenshell.file, ifc_class: str, name: str, **settings: str) -> ifcopenshell.entity_instance:
    return ifcopenshell.api.root.create_entity(f, ifc_class=ifc_class, name=name, **settings)


def new_project(
    name: str = "Untitled",
    storeys: tuple[tuple[str, float], ...] = (("Level 0", 0.0),),
    millimetres: bool = False,
) -> Project:
    """An IFC4 project with a site, a building and the given storeys (name, elevation in metres).

    In metres by default; ``millimetres`` makes millimetres the project's length unit (elevations are
    then stored in millimetres, as such models do).
    """
    f = ifcopenshell.api.project.create_file(version="IFC4")
    project = _create(f, "IfcProject", name)
    units = [
        ifcopenshell.api.unit.add_si_unit(
            f, unit_type=unit_type, prefix="MILLI" if millimetres and unit_type == "LENGTHUNIT" else None
        )
        for unit_type in ("LENGTHUNIT", "AREAUNIT", "VOLUMEUNIT", "PLANEANGLEUNIT")
    ]
    assignment = ifcopenshell.api.unit.assign_unit(f, units=units)  # metres, m², m³, radians
    assignment.Units = units  # assign_unit orders them through a set; keep the file reproducible
    model_ctx = ifcopenshell.api.context.add_context(f, context_type="Model")
    body = ifcopenshell.api.context.add_context(
        f, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model_ctx
    )
    site = _create(f, "IfcSite", "Site")
    building = _create(f, "IfcBuilding", "Building")
    ifcopenshell.api.aggregate.assign_object(f, products=[site], relating_object=project)
    ifcopenshell.api.aggregate.assign_object(f, products=[building], relating_object=site)
    levels = []
    for storey_name, elevation in storeys:
        storey = _create(f, "IfcBuildingStorey", storey_name)
        storey.Elevation = elevation * 1000 if millimetres else elevation
        ifcopenshell.api.aggregate.assign_object(f, products=[storey], relating_object=building)
        ifcopenshell.api.geometry.edit_object_placement(f, product=storey, matrix=_placement(0, 0, elevation))
        levels.append(storey)
    return Project(f, body, building, levels)


def _placement(x: float, y: float, z: float, angle: float = 0.0) -> np.ndarray:
    m = np.eye(4)
    c, s = math.cos(angle), math.sin(angle)
    m[:3, :3] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
    m[:3, 3] = [x, y, z]
    return m


def add_wall(
    p: Project,
    storey: ifcopenshell.entity_instance,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    height: float = 3.0,
    thickness: float = 0.2,
    name: str = "Wall",
    wall_type: ifcopenshell.entity_instance | None = None,
    external: bool | None = None,
) -> ifcopenshell.entity_instance:
    """A straight wall from ``start`` to ``end`` (plan coordinates) on ``storey``."""
    f = p.file
    (x0, y0), (x1, y1) = start, end
    length = math.hypot(x1 - x0, y1 - y0)
    angle = math.atan2(y1 - y0, x1 - x0)
    wall = _create(f, "IfcWall", name=name, predefined_type="STANDARD")
    rep = ifcopenshell.api.geometry.add_wall_representation(
        f, context=p.body, length=length, height=height, thickness=thickness, offset=-thickness / 2
    )
    ifcopenshell.api.geometry.assign_representation(f, product=wall, representation=rep)
    ifcopenshell.api.geometry.edit_object_placement(
        f, product=wall, matrix=_placement(x0, y0, storey.Elevation or 0.0, angle)
    )
    ifcopenshell.api.spatial.assign_container(f, products=[wall], relating_structure=storey)
    if wall_type is not None:
        ifcopenshell.api.type.assign_type(f, related_objects=[wall], relating_type=wall_type)
    if external is not None:
        pset = ifcopenshell.api.pset.add_pset(f, product=wall, name="Pset_WallCommon")
        ifcopenshell.api.pset.edit_pset(
            f,
            pset=pset,
            properties={"IsExternal": external, "FireRating": "REI60" if external else "EI30"},
        )
    qto = ifcopenshell.api.pset.add_qto(f, product=wall, name="Qto_WallBaseQuantities")
    ifcopenshell.api.pset.edit_qto(
        f,
        qto=qto,
        properties={
            "Length": round(length, 4),
            "Width": thickness,
            "Height": height,
            "NetSideArea": round(length * height, 4),
        },
    )
    return wall


def _add_opening(
    p: Project, wall: ifcopenshell.entity_instance, offset: float, sill: float, width: float, height: float
) -> tuple[ifcopenshell.entity_instance, np.ndarray]:
    """Cut a box opening into ``wall`` at ``offset`` along its axis; returns it and its world matrix."""
    f = p.file
    thickness = 0.2
    wall_m = ifcopenshell.util.placement.get_local_placement(wall.ObjectPlacement)
    local = _placement(offset, 0, sill)
    world = wall_m @ local
    opening = _create(f, "IfcOpeningElement", name="Opening")
    rep = ifcopenshell.api.geometry.add_wall_representation(
        f,
        context=p.body,
        length=width,
        height=height,
        thickness=thickness + 0.2,
        offset=-(thickness + 0.2) / 2,
    )
    ifcopenshell.api.geometry.assign_representation(f, product=opening, representation=rep)
    ifcopenshell.api.geometry.edit_object_placement(f, product=opening, matrix=world)
    ifcopenshell.api.feature.add_feature(f, feature=opening, element=wall)
    return opening, world


def add_door(
    p: Project,
    storey: ifcopenshell.entity_instance,
    wall: ifcopenshell.entity_instance,
    offset: float,
    *,
    name: str,
    door_type: ifcopenshell.entity_instance,
    fire_rating: str,
    external: bool,
) -> ifcopenshell.entity_instance:
    """A 0.9 x 2.1 m door filling a new opening in ``wall``."""
    f = p.file
    width, height = 0.9, 2.1
    opening, world = _add_opening(p, wall, offset, 0.0, width, height)
    door = _create(f, "IfcDoor", name=name, predefined_type="DOOR")
    door.OverallWidth, door.OverallHeight = width, height
    rep = ifcopenshell.api.geometry.add_door_representation(
        f, context=p.body, overall_width=width, overall_height=height, operation_type="SINGLE_SWING_LEFT"
    )
    ifcopenshell.api.geometry.assign_representation(f, product=door, representation=rep)
    door_m = world @ _placement(0, -0.1, 0)
    ifcopenshell.api.geometry.edit_object_placement(f, product=door, matrix=door_m)
    ifcopenshell.api.spatial.assign_container(f, products=[door], relating_structure=storey)
    ifcopenshell.api.feature.add_filling(f, opening=opening, element=door)
    ifcopenshell.api.type.assign_type(f, related_objects=[door], relating_type=door_type)
    pset = ifcopenshell.api.pset.add_pset(f, product=door, name="Pset_DoorCommon")
    ifcopenshell.api.pset.edit_pset(
        f, pset=pset, properties={"FireRating": fire_rating, "IsExternal": external}
    )
    qto = ifcopenshell.api.pset.add_qto(f, product=door, name="Qto_DoorBaseQuantities")
    ifcopenshell.api.pset.edit_qto(
        f, qto=qto, properties={"Width": width, "Height": height, "Area": width * height}
    )
    return door


def add_window(
    p: Project,
    storey: ifcopenshell.entity_instance,
    wall: ifcopenshell.entity_instance,
    offset: float,
    *,
    name: str,
    window_type: ifcopenshell.entity_instance,
) -> ifcopenshell.entity_instance:
    """A 1.2 x 1.2 m window at 0.9 m sill filling a new opening in ``wall``."""
    f = p.file
    width, height, sill = 1.2, 1.2, 0.9
    opening, world = _add_opening(p, wall, offset, sill, width, height)
    window = _create(f, "IfcWindow", name=name, predefined_type="WINDOW")
    window.OverallWidth, window.OverallHeight = width, height
    rep = ifcopenshell.api.geometry.add_window_representation(
        f, context=p.body, overall_width=width, overall_height=height, partition_type="SINGLE_PANEL"
    )
    ifcopenshell.api.geometry.assign_representation(f, product=window, representation=rep)
    ifcopenshell.api.geometry.edit_object_placement(f, product=window, matrix=world @ _placement(0, -0.05, 0))
    ifcopenshell.api.spatial.assign_container(f, products=[window], relating_structure=storey)
    ifcopenshell.api.feature.add_filling(f, opening=opening, element=window)
    ifcopenshell.api.type.assign_type(f, related_objects=[window], relating_type=window_type)
    pset = ifcopenshell.api.pset.add_pset(f, product=window, name="Pset_WindowCommon")
    ifcopenshell.api.pset.edit_pset(
        f, pset=pset, properties={"IsExternal": True, "ThermalTransmittance": 1.1}
    )
    qto = ifcopenshell.api.pset.add_qto(f, product=window, name="Qto_WindowBaseQuantities")
    ifcopenshell.api.pset.edit_qto(
        f, qto=qto, properties={"Width": width, "Height": height, "Area": width * height}
    )
    return window


def add_slab(
    p: Project,
    storey: ifcopenshell.entity_instance,
    outline: list[tuple[float, float]],
    *,
    name: str,
    depth: float = 0.2,
    predefined_type: str = "FLOOR",
    z: float = 0.0,
) -> ifcopenshell.entity_instance:
    """A slab extruded ``depth`` up from ``z`` (relative to the storey) over ``outline``."""
    f = p.file
    slab = _create(f, "IfcSlab", name=name, predefined_type=predefined_type)
    rep = ifcopenshell.api.geometry.add_slab_representation(f, context=p.body, depth=depth, polyline=outline)
    ifcopenshell.api.geometry.assign_representation(f, product=slab, representation=rep)
    ifcopenshell.api.geometry.edit_object_placement(
        f, product=slab, matrix=_placement(0, 0, (storey.Elevation or 0.0) + z)
    )
    ifcopenshell.api.spatial.assign_container(f, products=[slab], relating_structure=storey)
    xs, ys = [pt[0] for pt in outline], [pt[1] for pt in outline]
    area = 0.5 * abs(sum(xs[i] * ys[i - 1] - xs[i - 1] * ys[i] for i in range(len(xs))))
    qto = ifcopenshell.api.pset.add_qto(f, product=slab, name="Qto_SlabBaseQuantities")
    ifcopenshell.api.pset.edit_qto(f, qto=qto, properties={"Depth": depth, "NetArea": round(area, 4)})
    return slab


def add_space(
    p: Project,
    storey: ifcopenshell.entity_instance,
    outline: list[tuple[float, float]],
    *,
    name: str,
    long_name: str,
) -> ifcopenshell.entity_instance:
    """A room volume (2.6 m high) aggregated under ``storey``."""
    f = p.file
    space = _create(f, "IfcSpace", name=name)
    space.LongName = long_name
    rep = ifcopenshell.api.geometry.add_slab_representation(f, context=p.body, depth=2.6, polyline=outline)
    ifcopenshell.api.geometry.assign_representation(f, product=space, representation=rep)
    ifcopenshell.api.geometry.edit_object_placement(
        f, product=space, matrix=_placement(0, 0, (storey.Elevation or 0.0) + 0.2)
    )
    ifcopenshell.api.aggregate.assign_object(f, products=[space], relating_object=storey)
    xs, ys = [pt[0] for pt in outline], [pt[1] for pt in outline]
    area = 0.5 * abs(sum(xs[i] * ys[i - 1] - xs[i - 1] * ys[i] for i in range(len(xs))))
    qto = ifcopenshell.api.pset.add_qto(f, product=space, name="Qto_SpaceBaseQuantities")
    ifcopenshell.api.pset.edit_qto(f, qto=qto, properties={"NetFloorArea": round(area, 4), "Height": 2.6})
    return space


def build_house() -> ifcopenshell.file:
    """The two-storey sample house: walls, doors and windows in openings, slabs, roof, spaces, types."""
    p = new_project("Sample House", (("Ground Floor", 0.0), ("First Floor", 3.0)))
    f = p.file
    ext_type = _create(f, "IfcWallType", name="EXT-200 Masonry")
    int_type = _create(f, "IfcWallType", name="INT-100 Partition")
    door_type = _create(f, "IfcDoorType", name="D-900 Single Swing")
    window_type = _create(f, "IfcWindowType", name="W-1200 Casement")
    w, d = 10.0, 8.0
    corners = [(0.0, 0.0), (w, 0.0), (w, d), (0.0, d)]
    for level, storey in enumerate(p.storeys):
        tag = "GF" if level == 0 else "FF"
        walls = []
        for i in range(4):
            walls.append(
                add_wall(
                    p,
                    storey,
                    corners[i],
                    corners[(i + 1) % 4],
                    name=f"{tag}-EXT-{i + 1}",
                    wall_type=ext_type,
                    external=True,
                )
            )
        partition = add_wall(
            p,
            storey,
            (6.0, 0.0),
            (6.0, d),
            thickness=0.1,
            name=f"{tag}-INT-1",
            wall_type=int_type,
            external=False,
        )
        if level == 0:
            add_door(
                p,
                storey,
                walls[0],
                2.0,
                name="GF-D-1",
                door_type=door_type,
                fire_rating="EI30",
                external=True,
            )
        add_door(
            p,
            storey,
            partition,
            3.0,
            name=f"{tag}-D-2",
            door_type=door_type,
            fire_rating="EI60" if level == 0 else "EI30",
            external=False,
        )
        add_window(p, storey, walls[0], 7.0, name=f"{tag}-W-1", window_type=window_type)
        add_window(p, storey, walls[2], 3.0, name=f"{tag}-W-2", window_type=window_type)
        add_window(p, storey, walls[1], 3.5, name=f"{tag}-W-3", window_type=window_type)
        add_slab(p, storey, corners, name=f"{tag}-Floor")
        add_space(
            p,
            storey,
            [(0.1, 0.1), (5.95, 0.1), (5.95, 7.9), (0.1, 7.9)],
            name=f"{tag}-01",
            long_name="Living",
        )
        add_space(
            p,
            storey,
            [(6.05, 0.1), (9.9, 0.1), (9.9, 7.9), (6.05, 7.9)],
            name=f"{tag}-02",
            long_name="Kitchen",
        )
    roof_outline = [(-0.3, -0.3), (w + 0.3, -0.3), (w + 0.3, d + 0.3), (-0.3, d + 0.3)]
    add_slab(p, p.storeys[1], roof_outline, name="Roof", depth=0.25, predefined_type="ROOF", z=3.0)
    return stabilise(f, "house")


def build_wall_grid(walls: int = 2000) -> ifcopenshell.file:
    """A bench model: ``walls`` walls on a 2-storey grid of rooms, with slabs and a few doors."""
    per_storey = walls // 2
    p = new_project("Wall Grid", (("Level 0", 0.0), ("Level 1", 3.0)))
    f = p.file
    wall_type = _create(f, "IfcWallType", name="GRID-200")
    side = max(1, math.ceil(math.sqrt(per_storey / 2)))
    pitch = 4.0
    for level, storey in enumerate(p.storeys):
        made = 0
        for i in range(side + 1):
            for j in range(side):
                for horizontal in (True, False):
                    if made >= per_storey:
                        break
                    if horizontal:
                        a, b = (j * pitch, i * pitch), ((j + 1) * pitch, i * pitch)
                    else:
                        a, b = (i * pitch, j * pitch), (i * pitch, (j + 1) * pitch)
                    add_wall(
                        p,
                        storey,
                        a,
                        b,
                        name=f"L{level}-W{made}",
                        wall_type=wall_type,
                        external=i in (0, side),
                    )
                    made += 1
        extent = side * pitch
        add_slab(p, storey, [(0, 0), (extent, 0), (extent, extent), (0, extent)], name=f"L{level}-Floor")
    return stabilise(f, "grid")


def build_office(storeys: int = 5, rooms: int = 80) -> ifcopenshell.file:
    """A bench model with what makes real ones slow to draw: on each of ``storeys`` storeys,
    ``rooms`` rooms in two rows along a corridor, each with a window and a door in openings of
    its walls (boolean cuts), a partition, a space, and one floor slab per storey.

    About 1 MB of IFC per 80 rooms (``build_office(5, 80)`` is about 5 MB).
    """
    p = new_project("Office", tuple((f"Level {n}", 3.5 * n) for n in range(storeys)))
    f = p.file
    ext_type = _create(f, "IfcWallType", name="EXT-300")
    int_type = _create(f, "IfcWallType", name="INT-100")
    door_type = _create(f, "IfcDoorType", name="D-900")
    window_type = _create(f, "IfcWindowType", name="W-1500")
    width, depth, corridor = 4.0, 6.0, 2.0
    per_row = max(1, math.ceil(rooms / 2))
    length = per_row * width
    for level, storey in enumerate(p.storeys):
        made = 0
        for row in (0, 1):
            outer_y = 0.0 if row == 0 else 2 * depth + corridor
            inner_y = depth if row == 0 else depth + corridor
            for i in range(per_row):
                if made >= rooms:
                    break
                x0, x1 = i * width, (i + 1) * width
                tag = f"L{level}-R{row}{i:03d}"
                outer = add_wall(
                    p,
                    storey,
                    (x0, outer_y),
                    (x1, outer_y),
                    thickness=0.3,
                    name=f"{tag}-EXT",
                    wall_type=ext_type,
                    external=True,
                )
                inner = add_wall(
                    p,
                    storey,
                    (x0, inner_y),
                    (x1, inner_y),
                    thickness=0.1,
                    name=f"{tag}-COR",
                    wall_type=int_type,
                    external=False,
                )
                add_wall(
                    p,
                    storey,
                    (x1, min(outer_y, inner_y)),
                    (x1, max(outer_y, inner_y)),
                    thickness=0.1,
                    name=f"{tag}-PART",
                    wall_type=int_type,
                    external=False,
                )
                add_window(p, storey, outer, 1.2, name=f"{tag}-W", window_type=window_type)
                add_door(
                    p,
                    storey,
                    inner,
                    2.5,
                    name=f"{tag}-D",
                    door_type=door_type,
                    fire_rating="EI30",
                    external=False,
                )
                lo, hi = min(outer_y, inner_y) + 0.1, max(outer_y, inner_y) - 0.1
                add_space(
                    p,
                    storey,
                    [(x0 + 0.1, lo), (x1 - 0.1, lo), (x1 - 0.1, hi), (x0 + 0.1, hi)],
                    name=tag,
                    long_name="Office",
                )
                made += 1
        extent_y = 2 * depth + corridor
        add_slab(p, storey, [(0, 0), (length, 0), (length, extent_y), (0, extent_y)], name=f"L{level}-Floor")
    return stabilise(f, "office")


def stabilise(f: ifcopenshell.file, seed: str) -> ifcopenshell.file:
    """Make a generated file reproducible: GlobalIds derived from ``seed``, relationship members in id
    order (the api collects them in sets) and a fixed header timestamp."""
    for rel in f.by_type("IfcRelationship"):
        for index, value in enumerate(rel):
            if isinstance(value, tuple) and value and isinstance(value[0], ifcopenshell.entity_instance):
                rel[index] = sorted(value, key=lambda e: e.id())
    for n, root in enumerate(sorted(f.by_type("IfcRoot"), key=lambda e: e.id())):
        root.GlobalId = ifcopenshell.guid.compress(uuid.uuid5(_GUID_NAMESPACE, f"{seed}:{n}").hex)
    f.header.file_name.time_stamp = FIXED_TIMESTAMP
    f.header.file_name.name = f"{seed}.ifc"
    f.header.file_name.organization = ("cadmcp",)
    return f
