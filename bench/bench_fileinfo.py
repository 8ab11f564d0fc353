"""Time read_file_info on generated drawings and models of growing size; prints figures.

python bench/bench_fileinfo.py [--entities 100000] [--walls 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cadmcp.fileinfo import read_file_info

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def timed(label: str, call: Callable[[], dict[str, Any]], repeat: int = 3) -> None:
    best = float("inf")
    result: dict[str, Any] = {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    size = result.get("fileSizeBytes", 0) / 1e6
    print(f"{label:<44} {best * 1000:9.1f} ms   file {size:7.1f} MB   answer {len(json.dumps(result)):6d} B")


def dxf_file(folder: Path, entities: int, binary: bool = False) -> Path:
    import ezdxf

    doc = ezdxf.new("R2018")
    for i in range(200):
        doc.layers.add(f"L{i:03d}")
    msp = doc.modelspace()
    for i in range(entities):
        layer = f"L{i % 200:03d}"
        if i % 3 == 0:
            msp.add_line((i, 0), (i, 1), dxfattribs={"layer": layer})
        elif i % 3 == 1:
            msp.add_circle((i, i), 1, dxfattribs={"layer": layer})
        else:
            msp.add_lwpolyline([(0, 0), (i, 1), (2, i)], dxfattribs={"layer": layer})
    path = folder / f"plan-{entities}{'-bin' if binary else ''}.dxf"
    doc.saveas(path, fmt="bin" if binary else "asc")
    return path


def ifc_file(folder: Path, walls: int) -> Path:
    import ifcopenshell.api.aggregate
    import ifcopenshell.api.geometry
    import ifcopenshell.api.project
    import ifcopenshell.api.root
    import ifcopenshell.api.spatial
    import ifcopenshell.api.unit

    model = ifcopenshell.api.project.create_file(version="IFC4")
    project = ifcopenshell.api.root.create_entity(model, ifc_class="IfcProject", name="Bench")
    ifcopenshell.api.unit.assign_unit(model)
    storey = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingStorey", name="L0")
    ifcopenshell.api.aggregate.assign_object(model, relating_object=project, products=[storey])
    elements = [
        ifcopenshell.api.root.create_entity(model, ifc_class="IfcWall", name=f"W{i}") for i in range(walls)
    ]
    ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=elements)
    for i, wall in enumerate(elements):  # placements give the file some realistic bulk
        ifcopenshell.api.geometry.edit_object_placement(model, product=wall)
        wall.Description = f"bench wall {i}"
    path = folder / f"model-{walls}.ifc"
    model.write(str(path))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--walls", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in (1_000, args.entities):
            path = dxf_file(folder, n)
            timed(f"dxf ascii {n} entities summary", lambda p=path: read_file_info(p))
            timed(f"dxf ascii {n} entities full", lambda p=path: read_file_info(p, "full"))
        path = dxf_file(folder, args.entities, binary=True)
        timed(f"dxf binary {args.entities} entities summary", lambda p=path: read_file_info(p))

        dwg = folder / "plan.dwg"
        dwg.write_bytes(b"AC1032" + bytes(0x7A) + bytes(1_000_000))
        timed("dwg header", lambda: read_file_info(dwg))

        for walls in (100, args.walls):
            path = ifc_file(folder, walls)
            timed(f"ifc {walls} walls summary", lambda p=path: read_file_info(p))
            timed(f"ifc {walls} walls full", lambda p=path: read_file_info(p, "full"))

        from fileinfo.revit_fixtures import write_family_2024, write_project_2018

        family = write_family_2024(folder / "Chair.rfa")
        old = write_project_2018(folder / "Tower.rvt")
        timed("revit 2024 family summary", lambda: read_file_info(family))
        timed("revit 2024 family full", lambda: read_file_info(family, "full"))
        timed("revit 2018 project summary (fallback)", lambda: read_file_info(old))


if __name__ == "__main__":
    main()
