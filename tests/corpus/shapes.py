"""Generated files of the same shape as the corpus files where a failure class was found.

Each maker writes one small file with the structure that mattered on the third-party file
(named in the docstring), so the class is reproduced without shipping that file.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import ezdxf

DEPENDENT_SKETCH = """
import sys
import FreeCAD as App, Part, Sketcher
V = App.Vector
doc = App.newDocument("Dependent")
body = doc.addObject("PartDesign::Body", "Body")
xy = body.Origin.OriginFeatures[3]
base = body.newObject("Sketcher::SketchObject", "Base")
base.Support, base.MapMode = (xy, [""]), "FlatFace"
corners = [V(0, 0, 0), V(60, 0, 0), V(60, 40, 0), V(0, 40, 0)]
for i in range(4):
    base.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
for i in range(4):
    base.addConstraint(Sketcher.Constraint("Coincident", i, 2, (i + 1) % 4, 1))
for kind, edge in (("Horizontal", 0), ("Horizontal", 2), ("Vertical", 1), ("Vertical", 3)):
    base.addConstraint(Sketcher.Constraint(kind, edge))
base.addConstraint(Sketcher.Constraint("Coincident", 0, 1, -1, 1))
base.addConstraint(Sketcher.Constraint("DistanceX", 0, 1, 0, 2, 60))
base.addConstraint(Sketcher.Constraint("DistanceY", 1, 1, 1, 2, 40))
pad = body.newObject("PartDesign::Pad", "Pad")
pad.Profile, pad.Length = base, 10
doc.recompute()
hole = body.newObject("Sketcher::SketchObject", "HoleSketch")
hole.Support, hole.MapMode = (xy, [""]), "FlatFace"
doc.recompute()
hole.addExternal("Base", "Edge2")  # placed from another sketch's edge, as PartDesignExample's Sketch003
hole.addGeometry(Part.Circle(V(30, 20, 0), V(0, 0, 1), 5))
hole.addConstraint(Sketcher.Constraint("Radius", 0, 5))
hole.addConstraint(Sketcher.Constraint("DistanceX", -3, 1, 0, 3, 15))
hole.addConstraint(Sketcher.Constraint("DistanceY", -3, 1, 0, 3, 12))
pocket = body.newObject("PartDesign::Pocket", "Pocket")
pocket.Profile, pocket.Type = hole, 1
doc.recompute()
doc.saveAs(sys.argv[-1])
"""


def dependent_sketch(path: Path) -> Path:
    """A PartDesign body whose second sketch is placed by external geometry from the first
    (FreeCAD's PartDesignExample.FCStd: Sketch003 follows Sketch's Edge4)."""
    return freecad_file(DEPENDENT_SKETCH, path)


SAVED_OUTPUTS = """
import sys
import FreeCAD as App, Part, Sketcher
V = App.Vector
doc = App.newDocument("Saved")
body = doc.addObject("PartDesign::Body", "Body")
xy = body.Origin.OriginFeatures[3]
base = body.newObject("Sketcher::SketchObject", "Base")
base.Support, base.MapMode = (xy, [""]), "FlatFace"
corners = [V(0, 0, 0), V(60, 0, 0), V(60, 40, 0), V(0, 40, 0)]
for i in range(4):
    base.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
for i in range(4):
    base.addConstraint(Sketcher.Constraint("Coincident", i, 2, (i + 1) % 4, 1))
for kind, edge in (("Horizontal", 0), ("Horizontal", 2), ("Vertical", 1), ("Vertical", 3)):
    base.addConstraint(Sketcher.Constraint(kind, edge))
base.addConstraint(Sketcher.Constraint("Coincident", 0, 1, -1, 1))
base.addConstraint(Sketcher.Constraint("DistanceX", 0, 1, 0, 2, 60))
base.addConstraint(Sketcher.Constraint("DistanceY", 1, 1, 1, 2, 40))
pad = body.newObject("PartDesign::Pad", "Pad")
pad.Profile, pad.Length = base, 10
doc.recompute()
top = body.newObject("Sketcher::SketchObject", "OnTop")
face = next(f"Face{i + 1}" for i, f in enumerate(pad.Shape.Faces) if abs(f.CenterOfMass.z - 10) < 1e-6)
top.Support, top.MapMode = (pad, [face]), "FlatFace"  # attached to the pad's top, as the keycap's sketches
top.addGeometry(Part.Circle(V(20, 20, 0), V(0, 0, 1), 5))
top.addConstraint(Sketcher.Constraint("Radius", 0, 5))
pocket = body.newObject("PartDesign::Pocket", "Pocket")
pocket.Profile, pocket.Length = top, 4
doc.recompute()
doc.saveAs(sys.argv[-1])
"""
STALE_OUTPUTS = {
    # object: (property element as this FreeCAD writes it, as an older one left it)
    "Pad": (
        'valueX="0.0000000000000000" valueY="0.0000000000000000" valueZ="1.0000000000000000"',
        'valueX="1.0000000000000000" valueY="1.0000000000000000" valueZ="1.0000000000000000"',
    ),
    "OnTop": ('Pz="10.0000000000000000"', 'Pz="9.5000000000000000"'),
}


def saved_outputs(path: Path) -> Path:
    """A PartDesign body saved with outputs that differ from what a recompute gives, as files an older
    FreeCAD wrote do (XYZ-Cube.FCStd: Pad.Direction (1, 1, 1) where a recompute writes the sketch's
    normal; B3F-40XX-keycap.FCStd: a sketch attached to a face saved 0.13 mm from where its
    attachment puts it). Opening does not recompute, so the saved values are the document's state."""
    freecad_file(SAVED_OUTPUTS, path)
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    document = members["Document.xml"].decode("utf-8")
    data = document.index("<ObjectData")
    for name, (written, stale) in STALE_OUTPUTS.items():
        start = document.index(f'<Object name="{name}"', data)
        end = document.index("</Object>", start)
        block = document[start:end]
        if block.count(written) != 1:
            raise RuntimeError(f"{name} in the generated file does not hold {written} once")
        document = document[:start] + block.replace(written, stale) + document[end:]
    members["Document.xml"] = document.encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path


DRAWING_TEMPLATE = """
import glob, os, sys
import FreeCAD as App
doc = App.newDocument("Drawing")
page = doc.addObject("TechDraw::DrawPage", "Page")
template = doc.addObject("TechDraw::DrawSVGTemplate", "Template")
folder = os.path.join(App.getResourceDir(), "Mod", "TechDraw", "Templates")
template.Template = sorted(glob.glob(os.path.join(folder, "A4_Landscape*.svg")))[0]
page.Template = template
doc.addObject("Part::Box", "Box")
doc.recompute()
doc.saveAs(sys.argv[-1])
"""


def drawing_template(path: Path) -> Path:
    """A TechDraw page with an SVG template (bim-example-0/House.FCStd): the file includes the
    template, and on opening the Template property names its copy in the document's temporary
    folder, a new one each time the file opens."""
    return freecad_file(DRAWING_TEMPLATE, path)


def freecad_file(script: str, path: Path) -> Path:
    """Run ``script`` in freecadcmd with ``path`` as its last argument; it saves the document there."""
    source = path.with_suffix(".py")
    source.write_text(script, encoding="utf-8")
    subprocess.run(["freecadcmd", str(source), str(path)], check=True, capture_output=True, timeout=120)
    if not path.exists():
        raise RuntimeError(f"FreeCAD did not write {path}")
    return path


def acis_solids(path: Path) -> Path:
    """A drawing whose model space holds only ACIS 3DSOLIDs (ezdxf's acistools/3dsolids.dxf)."""
    from ezdxf.acis import api as acis
    from ezdxf.render import forms

    doc = ezdxf.new("R2000")
    msp = doc.modelspace()
    for i in range(3):
        acis.export_dxf(msp.add_3dsolid(), [acis.body_from_mesh(forms.cube().translate(i * 3, 0, 0))])
    doc.saveas(path)
    return path


def points_only(path: Path) -> Path:
    """A drawing whose model space holds only POINT entities, drawn as dots ($PDMODE 0), inside
    extents of +-100 (ezdxf's integration_tests/data/MODEL.dxf; LibreDWG's 2000/Point.dwg)."""
    doc = ezdxf.new("R2000")
    doc.header["$EXTMIN"] = (-100, -100, -100)
    doc.header["$EXTMAX"] = (100, 100, 100)
    doc.modelspace().add_point((0, 0, 0))
    doc.saveas(path)
    return path


def entity_without_layer(path: Path) -> Path:
    """A drawing whose model space holds, beside a few lines, an entity of a kind ezdxf does not
    know and keeps as raw tags without a layer attribute (a SECTIONOBJECT, as LibreDWG's
    2018/LiveSection1.dwg and its AutoCAD-made DXF hold)."""
    import io

    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    for i in range(3):
        msp.add_line((0, i), (10, i), dxfattribs={"layer": "WALLS"})
    text = io.StringIO()
    doc.write(text)
    drawing = text.getvalue()
    section = f"  0\nSECTIONOBJECT\n  5\nFFF0\n330\n{msp.block_record_handle}\n100\nAcDbEntity\n  8\n0\n"
    end = drawing.index("  0\nENDSEC", drawing.index("ENTITIES"))
    path.write_text(drawing[:end] + section + drawing[end:])
    return path


def release_before_r12(path: Path) -> Path:
    """An R12 drawing whose header names release R2.10 ($ACADVER AC2.10, as LibreDWG's
    r2.10/block.dxf and r2.10/entities.dxf): a block with an insert, a line and a circle."""
    import io

    doc = ezdxf.new("R12")
    doc.blocks.new("MARK").add_circle((0, 0), 1)
    msp = doc.modelspace()
    msp.add_line((0, 0), (7, 8))
    msp.add_circle((3, 3), 2)
    msp.add_blockref("MARK", (5, 5))
    text = io.StringIO()
    doc.write(text)
    path.write_text(text.getvalue().replace("$ACADVER\n  1\nAC1009\n", "$ACADVER\n  1\nAC2.10\n", 1))
    return path


def ifc_without_project(path: Path) -> Path:
    """An IFC2X3 file holding only geometry (points, a loop, a face) and no IfcProject or other
    IfcRoot (web-ifc's test.ifc)."""
    import ifcopenshell

    model = ifcopenshell.file(schema="IFC2X3")
    points = [model.createIfcCartesianPoint(p) for p in ((1.0, 2.0, 3.0), (4.0, 5.0, 6.0), (7.0, 8.0, 9.0))]
    loop = model.createIfcPolyLoop(points)
    model.createIfcFace([model.createIfcFaceOuterBound(loop, True)])
    model.write(str(path))
    return path


def ifc4x3_rc2_road(path: Path) -> Path:
    """An IFC4X3 model whose header names the release candidate IFC4X3_RC2 (web-ifc's
    KIT-Simple-Road-Test-Web-IFC4x3_RC2.ifc): a project, a site and one wall with a body."""
    import ifcopenshell
    import ifcopenshell.api.aggregate as aggregate
    import ifcopenshell.api.context as context
    import ifcopenshell.api.geometry as geometry
    import ifcopenshell.api.root as root
    import ifcopenshell.api.spatial as spatial
    import ifcopenshell.api.unit as unit

    model = ifcopenshell.file(schema="IFC4X3")
    project = root.create_entity(model, ifc_class="IfcProject", name="Road")
    unit.assign_unit(model)
    model_context = context.add_context(model, context_type="Model")
    body = context.add_context(
        model, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model_context
    )
    site = root.create_entity(model, ifc_class="IfcSite", name="Site")
    aggregate.assign_object(model, relating_object=project, products=[site])
    wall = root.create_entity(model, ifc_class="IfcWall", name="Barrier")
    geometry.edit_object_placement(model, product=wall)
    shape = geometry.add_wall_representation(model, context=body, length=5, height=1, thickness=0.2)
    geometry.assign_representation(model, product=wall, representation=shape)
    spatial.assign_container(model, relating_structure=site, products=[wall])
    text = model.to_string()
    for written in ("FILE_SCHEMA(('IFC4X3'))", "FILE_SCHEMA(('IFC4X3_ADD2'))"):
        text = text.replace(written, "FILE_SCHEMA(('IFC4X3_RC2'))")
    if "IFC4X3_RC2" not in text:
        raise RuntimeError("the header's schema was not found to rename")
    path.write_text(text, encoding="utf-8")
    return path
