"""Make samples/bracket.FCStd: a parametric bracket driven by a spreadsheet. Run it with FreeCAD:

    freecadcmd samples/make_freecad_sample.py            # writes samples/bracket.FCStd
    CADMCP_SAMPLE_OUT=/tmp/b.FCStd freecadcmd samples/make_freecad_sample.py

A PartDesign body: a 60 x 40 mm plate padded 8 mm from a fully constrained sketch, a 10 mm hole
pocketed through it, and a spreadsheet `Params` whose aliases drive the sketch, the pad and the
hole. The same script gives the same objects, dimensions and volumes every time (the file's
timestamps and ids differ: an .FCStd is a zip with dates inside).
"""

import os
import sys
from pathlib import Path

import FreeCAD as App
import Part
import Sketcher

PARAMS = {"length": 60.0, "width": 40.0, "thickness": 8.0, "hole": 10.0}


def rectangle(sketch, length, width):  # type: ignore[no-untyped-def]
    """A fully constrained rectangle with its lower-left corner on the origin, sized by Params."""
    v = App.Vector
    corners = [v(0, 0, 0), v(length, 0, 0), v(length, width, 0), v(0, width, 0)]
    for i in range(4):
        sketch.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
    for i in range(4):
        sketch.addConstraint(Sketcher.Constraint("Coincident", i, 2, (i + 1) % 4, 1))
    sketch.addConstraint(Sketcher.Constraint("Horizontal", 0))
    sketch.addConstraint(Sketcher.Constraint("Horizontal", 2))
    sketch.addConstraint(Sketcher.Constraint("Vertical", 1))
    sketch.addConstraint(Sketcher.Constraint("Vertical", 3))
    sketch.addConstraint(Sketcher.Constraint("Coincident", 0, 1, -1, 1))  # corner on the origin
    length_c = sketch.addConstraint(Sketcher.Constraint("DistanceX", 0, 1, 0, 2, length))
    width_c = sketch.addConstraint(Sketcher.Constraint("DistanceY", 1, 1, 1, 2, width))
    sketch.setExpression(f"Constraints[{length_c}]", "Params.length")
    sketch.setExpression(f"Constraints[{width_c}]", "Params.width")


def build(path: Path) -> None:
    doc = App.newDocument("bracket")
    doc.Label = "bracket"
    sheet = doc.addObject("Spreadsheet::Sheet", "Params")
    for row, (name, value) in enumerate(PARAMS.items(), start=1):
        sheet.set(f"A{row}", name)
        sheet.set(f"B{row}", f"{value:g}")
        sheet.setAlias(f"B{row}", name)
    doc.recompute()

    body = doc.addObject("PartDesign::Body", "Bracket")
    xy = body.Origin.OriginFeatures[3]
    plate = body.newObject("Sketcher::SketchObject", "PlateSketch")
    plate.Support = (xy, [""])
    plate.MapMode = "FlatFace"
    rectangle(plate, PARAMS["length"], PARAMS["width"])
    pad = body.newObject("PartDesign::Pad", "Plate")
    pad.Profile = plate
    pad.Length = PARAMS["thickness"]
    pad.setExpression("Length", "Params.thickness")
    doc.recompute()

    hole = body.newObject("Sketcher::SketchObject", "HoleSketch")
    hole.Support = (xy, [""])
    hole.MapMode = "FlatFace"
    circle = hole.addGeometry(Part.Circle(App.Vector(30, 20, 0), App.Vector(0, 0, 1), PARAMS["hole"] / 2))
    hole.addConstraint(Sketcher.Constraint("DistanceX", -1, 1, circle, 3, 30))
    hole.addConstraint(Sketcher.Constraint("DistanceY", -1, 1, circle, 3, 20))
    diameter = hole.addConstraint(Sketcher.Constraint("Diameter", circle, PARAMS["hole"]))
    hole.setExpression(f"Constraints[{diameter}]", "Params.hole")
    hole.setExpression("Constraints[0]", "Params.length / 2")
    hole.setExpression("Constraints[1]", "Params.width / 2")
    pocket = body.newObject("PartDesign::Pocket", "Hole")
    pocket.Profile = hole
    pocket.Type = "ThroughAll"
    pocket.Reversed = True  # the sketch lies on the plate's bottom face: cut upwards through it
    doc.recompute()
    problems = [o.Name for o in doc.Objects if "Invalid" in o.State or "Error" in o.State]
    if problems:
        raise SystemExit(f"the sample did not recompute cleanly: {problems}")
    doc.saveAs(str(path))
    App.closeDocument(doc.Name)


def main() -> None:
    here = Path(sys.argv[0]).resolve().parent if sys.argv and sys.argv[0] else Path.cwd()
    target = Path(os.environ.get("CADMCP_SAMPLE_OUT") or here / "bracket.FCStd")
    build(target)
    print(f"wrote {target}")


main()
