"""Build the DXF sample drawing (`samples/floorplan.dxf`) and large drawings for benchmarks.

    python samples/make_dxf_sample.py            # writes floorplan.dxf next to this script
    python samples/make_dxf_sample.py out.dxf

The floor plan is a small office floor in millimetres: three rooms and a corridor, wall
polylines, door and window blocks with attributes, room labels, rendered dimensions, some
furniture and an A1 sheet layout with a title block and a viewport. Output is reproducible
(ezdxf's fixed metadata mode: no timestamps or random GUIDs).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import ezdxf
from ezdxf.document import Drawing
from ezdxf.enums import TextEntityAlignment

LAYERS = {
    "A-WALL": 7,
    "A-DOOR": 1,
    "A-GLAZ": 4,
    "A-FURN": 8,
    "A-ANNO-TEXT": 2,
    "A-ANNO-DIMS": 3,
    "A-AREA": 6,
    "G-TTLB": 7,
    "G-VPRT": 9,
}

DIM_STYLE = {
    "dimlfac": 1,
    "dimtxt": 200,
    "dimasz": 150,
    "dimexe": 100,
    "dimexo": 150,
    "dimgap": 60,
    "dimdec": 0,
}
DOORS = [
    # number, insertion, rotation, width, fire rating, hardware
    ("D100", (0, 4550), 90, 1000, "EI30", "Panic bar"),
    ("D101", (3000, 6000), 0, 900, "", "Lever set"),
    ("D102", (10500, 6000), 0, 900, "", "Lever set"),
    ("D103", (7500, 4000), 180, 1000, "EI60", "Closer + lever"),
]
WINDOWS = [
    # type, insertion, rotation, width
    ("W1", (1500, 10000), 0, 1800),
    ("W1", (4500, 10000), 0, 1800),
    ("W2", (9500, 10000), 0, 2400),
    ("W2", (13000, 10000), 0, 2400),
    ("W1", (3000, 0), 0, 1800),
    ("W1", (12000, 0), 0, 1800),
]
ROOMS = [
    ("101", "OFFICE", (0, 6000, 7000, 10000)),
    ("102", "MEETING", (7000, 6000, 16000, 10000)),
    ("103", "LAB", (0, 0, 16000, 4000)),
    ("100", "CORRIDOR", (0, 4000, 16000, 6000)),
]


def _define_blocks(doc: Drawing) -> None:
    door = doc.blocks.new("DOOR", base_point=(0, 0))
    door.add_line((0, 0), (0, 1000), dxfattribs={"layer": "0"})
    door.add_arc((0, 0), 1000, 0, 90, dxfattribs={"layer": "0"})
    door.add_line((0, 0), (1000, 0), dxfattribs={"layer": "0", "linetype": "DASHED"})
    for i, (tag, default) in enumerate(
        [("NUMBER", "D000"), ("WIDTH", "900"), ("HEIGHT", "2100"), ("FIRE_RATING", ""), ("HARDWARE", "")]
    ):
        door.add_attdef(tag, (100, -250 - i * 200), default, dxfattribs={"height": 150, "invisible": i > 0})

    window = doc.blocks.new("WINDOW", base_point=(0, 0))
    window.add_lwpolyline([(-500, -150), (500, -150), (500, 150), (-500, 150)], close=True)
    window.add_line((-500, 0), (500, 0))
    for i, (tag, default) in enumerate([("TYPE", "W1"), ("WIDTH", "1000"), ("SILL_HEIGHT", "900")]):
        window.add_attdef(tag, (-450, 250 + i * 200), default, dxfattribs={"height": 120, "invisible": i > 0})

    desk = doc.blocks.new("DESK", base_point=(0, 0))
    desk.add_lwpolyline([(0, 0), (1600, 0), (1600, 800), (0, 800)], close=True)
    desk.add_circle((800, 1150), 300)


def build_floorplan() -> Drawing:
    """The sample office floor plan (millimetres, R2018)."""
    doc = ezdxf.new("R2018", setup=True, units=ezdxf.units.MM)
    doc.header["$PROJECTNAME"] = "cadmcp sample office"
    for name, color in LAYERS.items():
        doc.layers.add(name, color=color)
    doc.layers.get("G-VPRT").off()
    _define_blocks(doc)
    msp = doc.modelspace()

    wall = {"layer": "A-WALL", "const_width": 0}
    msp.add_lwpolyline([(0, 0), (16000, 0), (16000, 10000), (0, 10000)], close=True, dxfattribs=wall)
    msp.add_lwpolyline([(300, 300), (15700, 300), (15700, 9700), (300, 9700)], close=True, dxfattribs=wall)
    for y in (4000, 6000):
        msp.add_lwpolyline(
            [(300, y - 100), (15700, y - 100), (15700, y + 100), (300, y + 100)], close=True, dxfattribs=wall
        )
    msp.add_lwpolyline([(6900, 6100), (7100, 6100), (7100, 9700), (6900, 9700)], close=True, dxfattribs=wall)

    for number, (x, y), rotation, width, rating, hardware in DOORS:
        ref = msp.add_blockref("DOOR", (x, y), dxfattribs={"layer": "A-DOOR", "rotation": rotation})
        scale = width / 1000
        ref.dxf.xscale = ref.dxf.yscale = scale
        ref.add_auto_attribs(
            {
                "NUMBER": number,
                "WIDTH": str(width),
                "HEIGHT": "2100",
                "FIRE_RATING": rating,
                "HARDWARE": hardware,
            }
        )
    for kind, (x, y), rotation, width in WINDOWS:
        ref = msp.add_blockref("WINDOW", (x, y), dxfattribs={"layer": "A-GLAZ", "rotation": rotation})
        ref.dxf.xscale = width / 1000
        ref.add_auto_attribs({"TYPE": kind, "WIDTH": str(width), "SILL_HEIGHT": "900"})

    for number, name, (x1, y1, x2, y2) in ROOMS:
        area = (x2 - x1) * (y2 - y1) / 1e6
        msp.add_mtext(
            f"{name}\\P{number}\\P{area:.1f} m²",
            dxfattribs={"layer": "A-ANNO-TEXT", "char_height": 250, "attachment_point": 5},
        ).set_location(((x1 + x2) / 2, (y1 + y2) / 2))
        msp.add_lwpolyline(
            [(x1, y1), (x2, y1), (x2, y2), (x1, y2)],
            close=True,
            dxfattribs={"layer": "A-AREA", "linetype": "DOT"},
        )

    for x, y in [(800, 7000), (800, 8600), (3800, 7000), (3800, 8600), (1000, 1000), (4000, 1000)]:
        msp.add_blockref("DESK", (x, y), dxfattribs={"layer": "A-FURN", "rotation": 0})
    msp.add_circle((11500, 8000), 1200, dxfattribs={"layer": "A-FURN"})
    for k in range(8):
        angle = 2 * math.pi * k / 8
        msp.add_circle(
            (11500 + 1600 * math.cos(angle), 8000 + 1600 * math.sin(angle)),
            250,
            dxfattribs={"layer": "A-FURN"},
        )

    dims = {"layer": "A-ANNO-DIMS"}
    msp.add_linear_dim(
        base=(0, -1200), p1=(0, 0), p2=(16000, 0), override=DIM_STYLE, dxfattribs=dims
    ).render()
    msp.add_linear_dim(
        base=(-1200, 0), p1=(0, 0), p2=(0, 10000), angle=90, override=DIM_STYLE, dxfattribs=dims
    ).render()
    msp.add_linear_dim(
        base=(0, 11000), p1=(0, 10000), p2=(7000, 10000), override=DIM_STYLE, dxfattribs=dims
    ).render()

    _title_sheet(doc)
    doc.set_modelspace_vport(height=14000, center=(8000, 5000))
    return doc


def _title_sheet(doc: Drawing) -> None:
    sheet = doc.layouts.new("A1 Plan")
    sheet.page_setup(size=(841, 594), margins=(10, 10, 10, 10), units="mm")
    ttl = {"layer": "G-TTLB"}
    sheet.add_lwpolyline([(0, 0), (821, 0), (821, 574), (0, 574)], close=True, dxfattribs=ttl)
    sheet.add_lwpolyline([(621, 0), (821, 0), (821, 80), (621, 80)], close=True, dxfattribs=ttl)
    sheet.add_text("CADMCP SAMPLE OFFICE", height=8, dxfattribs=ttl).set_placement(
        (631, 60), align=TextEntityAlignment.LEFT
    )
    sheet.add_text("GROUND FLOOR PLAN  1:50", height=5, dxfattribs=ttl).set_placement((631, 40))
    sheet.add_text("DRAWING A-101  REV B", height=5, dxfattribs=ttl).set_placement((631, 20))
    sheet.add_viewport(
        center=(310, 300),
        size=(580, 420),
        view_center_point=(8000, 5000),
        view_height=14000,
        dxfattribs={"layer": "G-VPRT"},
    )


def build_large(count: int, *, seed_layout: bool = True) -> Drawing:
    """A drawing with about ``count`` modelspace entities: the floor plan tiled, plus mixed filler."""
    doc = build_floorplan() if seed_layout else ezdxf.new("R2018", setup=True)
    msp = doc.modelspace()
    layers = list(LAYERS)[:6]
    i = len(msp)
    n = 0
    while i < count:
        x, y = (n % 200) * 1000.0, 20000.0 + (n // 200) * 1000.0
        kind = n % 6
        layer = {"layer": layers[n % len(layers)]}
        if kind == 0:
            msp.add_line((x, y), (x + 800, y + 300), dxfattribs=layer)
        elif kind == 1:
            msp.add_circle((x + 400, y + 400), 300, dxfattribs=layer)
        elif kind == 2:
            msp.add_lwpolyline(
                [(x, y), (x + 700, y), (x + 700, y + 500), (x, y + 500)], close=True, dxfattribs=layer
            )
        elif kind == 3:
            msp.add_text(f"T{n}", height=150, dxfattribs=layer).set_placement((x, y))
        elif kind == 4:
            msp.add_arc((x + 400, y + 400), 350, 0, 180, dxfattribs=layer)
        else:
            msp.add_point((x + 500, y + 500), dxfattribs=layer)
        n += 1
        i += 1
    return doc


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # ezdxf writes the CLASSES section in set order: fix string hashing for byte-identical output
        os.execve(
            sys.executable, [sys.executable, __file__, *argv[1:]], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    target = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("floorplan.dxf")
    ezdxf.options.write_fixed_meta_data_for_testing = True
    doc = build_floorplan()
    doc.header["$TDCREATE"] = 2460000.5
    doc.header["$TDUPDATE"] = 2460000.5
    doc.header["$FINGERPRINTGUID"] = "{00000000-0000-4000-8000-00000000CAD0}"
    doc.header["$VERSIONGUID"] = "{00000000-0000-4000-8000-00000000CAD1}"
    doc.saveas(target)
    print(
        f"wrote {target} ({target.stat().st_size // 1024} KiB, {len(doc.modelspace())} modelspace entities)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
