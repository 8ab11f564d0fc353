"""The probes run in-process on real ezdxf and IfcOpenShell documents: dumps are canonical
(equal after a write and read), a change moves what it says, and a real undo restores the dump."""

from __future__ import annotations

from pathlib import Path

import ezdxf
import ifcopenshell

from cadmcp.corpus.compare import compare
from cadmcp.corpus.probes import dxf as dxf_probe
from cadmcp.corpus.probes import ifc as ifc_probe
from cadmcp.corpus.probes import source
from cadmcp.hosts.ifc.modelgen import build_house


def _drawing() -> ezdxf.document.Drawing:
    doc = ezdxf.new("R2010", setup=True)
    block = doc.blocks.new("DOOR")
    block.add_arc((0, 0), 900, 0, 90)
    block.add_line((0, 0), (900, 0))
    msp = doc.modelspace()
    msp.add_lwpolyline([(0, 0), (5000, 0), (5000, 3000), (0, 3000)], close=True, dxfattribs={"layer": "WALL"})
    msp.add_blockref("DOOR", (1000, 0))
    hatch = msp.add_hatch(color=3)
    hatch.paths.add_polyline_path([(0, 0), (100, 0), (100, 100)], is_closed=True)
    msp.add_linear_dim(base=(0, -500), p1=(0, 0), p2=(5000, 0)).render()
    return doc


def test_the_probe_sources_are_the_modules_sent_into_the_hosts() -> None:
    for app in ("dxf", "ifc", "freecad"):
        text = source(app)
        assert "def dump(" in text and "def change(" in text
        compile(text, f"{app}.py", "exec")  # what the host runs must be valid Python on its own


def test_a_dxf_dump_keeps_every_entity_with_its_tags_and_reads_back_the_same(tmp_path: Path) -> None:
    doc = _drawing()
    state = dxf_probe.dump(doc)
    types = {e["type"] for e in state["entities"].values()}
    assert {"LWPOLYLINE", "INSERT", "HATCH", "DIMENSION", "ARC"} <= types
    path = tmp_path / "plan.dxf"
    doc.saveas(path)
    reread = dxf_probe.dump(ezdxf.readfile(path), normalized=True)
    assert compare(dxf_probe.dump(doc, normalized=True), reread).equal


def test_the_dxf_change_adds_a_line_and_moves_an_entity() -> None:
    doc = _drawing()
    before = dxf_probe.dump(doc)
    message = dxf_probe.change(doc, doc.modelspace())
    assert message.startswith("added LINE ") and "moved LWPOLYLINE" in message
    diff = compare(before, dxf_probe.dump(doc))
    assert len(diff.added) == 1 and len(diff.changed) == 1


def test_dxf_floats_keep_twelve_digits_so_text_round_trips_compare_equal() -> None:
    assert dxf_probe.canon(0.1 + 0.2) == 0.3
    assert dxf_probe.canon(ezdxf.math.Vec3(1 / 3, 0, 0)) == [0.333333333333, 0.0, 0.0]


def test_an_ifc_dump_has_every_instance_and_an_undone_change_restores_it() -> None:
    model = build_house()
    before = ifc_probe.dump(model)
    assert before["summary"]["entities"] == len(list(model))
    model.begin_transaction()
    message = ifc_probe.change(model)
    model.end_transaction()
    assert message.startswith("renamed and moved Ifc")
    changed = compare(before, ifc_probe.dump(model))
    assert changed.changed and not changed.equal
    model.undo()
    assert compare(before, ifc_probe.dump(model)).equal


def test_an_ifc_dump_reads_back_the_same_after_a_write(tmp_path: Path) -> None:
    model = build_house()
    path = tmp_path / "house.ifc"
    model.write(str(path))
    assert compare(ifc_probe.dump(model), ifc_probe.dump(ifcopenshell.open(str(path)))).equal


def test_ifc_typed_values_and_references_are_canonical() -> None:
    model = ifcopenshell.file(schema="IFC4")
    wall = model.createIfcWall(ifcopenshell.guid.new(), None, "W")
    value = model.createIfcPropertySingleValue("Height", None, model.createIfcLengthMeasure(2.5), None)
    assert ifc_probe.canon(wall) == f"#{wall.id()}"
    assert ifc_probe.canon(value.NominalValue) == ["IfcLengthMeasure", 2.5]


def test_the_ifc_change_moves_an_element_with_a_local_placement_not_one_on_a_grid() -> None:
    model = build_house()
    first = min(model.by_type("IfcElement"), key=lambda e: e.id())
    axes = [
        model.createIfcGridAxis(
            name, model.createIfcPolyline([model.createIfcCartesianPoint(p) for p in pts]), True
        )
        for name, pts in (("A", [(0.0, 0.0), (0.0, 10.0)]), ("1", [(0.0, 0.0), (10.0, 0.0)]))
    ]
    grid = model.createIfcGrid(ifcopenshell.guid.new(), None, "Grid", UAxes=[axes[0]], VAxes=[axes[1]])
    grid.ObjectPlacement = first.ObjectPlacement
    intersection = model.createIfcVirtualGridIntersection(axes, [0.0, 0.0, 0.0])
    first.ObjectPlacement = model.createIfcGridPlacement(PlacementLocation=intersection)
    message = ifc_probe.change(model)
    assert message.startswith("renamed and moved Ifc")
    assert f"#{first.id()}" not in message and "(changed)" not in (first.Name or "")


def test_the_ifc_change_moves_a_point_of_a_model_without_any_root_and_undo_restores_it(
    tmp_path: Path,
) -> None:
    from tests.corpus import shapes

    model = ifcopenshell.open(str(shapes.ifc_without_project(tmp_path / "bare.ifc")))
    before = ifc_probe.dump(model)
    model.begin_transaction()
    assert ifc_probe.change(model).startswith("moved IfcCartesianPoint #")
    model.end_transaction()
    assert not compare(before, ifc_probe.dump(model)).equal
    model.undo()
    assert compare(before, ifc_probe.dump(model)).equal


def test_a_freecad_rotation_dumps_the_same_whichever_sign_its_quaternion_has() -> None:
    from cadmcp.corpus.probes import freecad as freecad_probe

    turned = freecad_probe.rotation((0.5, 0.5, 0.5, 0.5))
    assert turned == freecad_probe.rotation((-0.5, -0.5, -0.5, -0.5))
    assert freecad_probe.rotation((1e-17, 0.0, -0.6, 0.8)) == [0.0, 0.0, 0.6, -0.8]  # noise decides nothing
    assert turned != freecad_probe.rotation((0.5, 0.5, 0.5, -0.5))  # another rotation stays another


def test_a_freecad_box_corner_keeps_ten_digits_of_the_box_not_of_the_millimetre() -> None:
    from cadmcp.corpus.probes import freecad as freecad_probe

    far = 2.296836019e17  # an imported line run off to a far point (ArchDetail.FCStd's Line)
    assert freecad_probe.corner(0.6875, far) == freecad_probe.corner(0.0, far)  # read-back noise
    assert freecad_probe.corner(-far, far) == -2.296836019e17
    assert freecad_probe.corner(12.3456789, 100.0) == 12.345679  # an ordinary box: micrometres
    assert freecad_probe.corner(12.3456789, 100.0) != freecad_probe.corner(12.3466789, 100.0)
    assert freecad_probe.corner(0.0, 0.0) == 0.0


FAR_FACE = """
import json, sys
import FreeCAD as App, Draft
exec(open(sys.argv[-2]).read())
V = App.Vector
doc = App.newDocument("FarFace")
xz = [(998387.4375, 3285.1), (1028912.7, 3285.1), (1028912.7, 7106.8), (1010000.3, 5000.2)]
xz.append((998387.4375, 7106.8))
wire = Draft.makeWire([V(x, 0, z) for x, z in xz], closed=True, face=True)
wire.Placement = App.Placement(V(0, 1087548.822, -1059127.554), App.Rotation(V(1, 0, 0), 90))
doc.recompute()
fresh, name = [wire.Shape.Volume, shape_measures(wire.Shape)], wire.Name
doc.saveAs(sys.argv[-1] + ".FCStd")
App.closeDocument(doc.Name)
doc = App.openDocument(sys.argv[-1] + ".FCStd")
wire = doc.getObject(name)
with open(sys.argv[-1], "w") as out:
    json.dump([fresh, [wire.Shape.Volume, shape_measures(wire.Shape)]], out)
"""


def test_a_freecad_face_far_out_measures_the_same_computed_and_read_back(tmp_path: Path) -> None:
    import json
    import shutil
    import subprocess

    from tests.conftest import require_component

    require_component("freecad", None if shutil.which("freecadcmd") else "FreeCAD is not installed")
    script, probe, out = tmp_path / "far.py", tmp_path / "probe.py", tmp_path / "far.json"
    script.write_text(FAR_FACE, encoding="utf-8")
    probe.write_text(source("freecad"), encoding="utf-8")
    command = ["freecadcmd", str(script), str(probe), str(out)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    (volume, computed), (volume_read, read_back) = json.loads(out.read_text(encoding="utf-8"))
    assert volume != volume_read  # OpenCASCADE's "volume" of a face (the imported DWires of a model)
    assert computed == read_back
    assert computed["volume"] == 0.0 and computed["area"] > 0
