"""Generated DWG drawings for the DWG tests, each with a DXF twin drawn from the same recipe.

The DWG is written by ezdwg's R2000 (AC1015) writer (MIT, PyPI), the twin by ezdxf; so the
tests compare what the DXF host makes of the DWG with what ezdxf reads from the same drawing.
The converter is found where ``.ci/deps/dwg-reader.sh`` installs it unless ``CADMCP_DWG_READER``
names another folder.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from tests.conftest import require_component

from cadmcp.hosts.dxf.dwg import READER_ENV, DwgError, find_reader

ROOT = Path(__file__).resolve().parents[3]
READER_DIR = Path(os.environ.get(READER_ENV) or ROOT / ".ci" / ".cache" / "dwg-reader")

LINES = [((0, 0), (12, 0)), ((12, 0), (12, 8)), ((12, 8), (0, 8)), ((0, 8), (0, 0))]
"""Four walls on layer WALLS."""


def require_reader() -> Path:
    """The converter's folder, or skip (fail under CADMCP_TEST_REQUIRE) saying what to install."""
    previous = os.environ.get(READER_ENV)
    os.environ[READER_ENV] = str(READER_DIR)
    try:
        find_reader()
        reason = None
    except DwgError as exc:
        reason = f"{exc} (run bash .ci/deps/dwg-reader.sh)"
    finally:
        if previous is None:
            del os.environ[READER_ENV]
        else:
            os.environ[READER_ENV] = previous
    require_component("dwg-reader", reason)
    return READER_DIR


def _recipe(msp: Any, add_block: Any) -> None:
    for start, end in LINES:
        msp.add_line((*start, 0), (*end, 0), layer="WALLS")
    msp.add_circle((6, 4, 0), 1.5, layer="FURNITURE")
    msp.add_arc((3, 3, 0), 1.0, 0, 90, layer="FURNITURE")
    msp.add_lwpolyline([(1, 1), (4, 1), (4, 2), (1, 2)], layer="FURNITURE")
    msp.add_text("Living room", (2, 6, 0), height=0.4, layer="TEXT")
    add_block("DOOR", [((0, 0), (0.9, 0)), ((0, 0), (0, 0.9))])
    for x in (2.0, 8.0):
        msp.add_blockref("DOOR", (x, 0, 0), layer="DOORS")


def write_pair(folder: Path, stem: str = "plan") -> tuple[Path, Path]:
    """Write ``stem.dwg`` (R2000, ezdwg) and its twin ``stem-twin.dxf`` (ezdxf); returns both paths."""
    import ezdwg
    import ezdxf

    drawing = ezdwg.new()
    for name, colour in (("WALLS", 1), ("DOORS", 3), ("FURNITURE", 5), ("TEXT", 7)):
        drawing.layers[name] = {"color_index": colour}

    def dwg_block(name: str, lines: list[Any]) -> None:
        block = drawing.blocks.new(name)
        for start, end in lines:
            block.add_line((*start, 0), (*end, 0))

    class DwgSpace:
        def __init__(self, layout: Any) -> None:
            self.layout = layout

        def add_line(self, start: Any, end: Any, layer: str) -> None:
            self.layout.add_line(start, end, layer=layer)

        def add_circle(self, center: Any, radius: float, layer: str) -> None:
            self.layout.add_circle(center, radius, layer=layer)

        def add_arc(self, center: Any, radius: float, start: float, end: float, layer: str) -> None:
            self.layout.add_arc(center, radius, start, end, layer=layer)

        def add_lwpolyline(self, points: Any, layer: str) -> None:
            self.layout.add_lwpolyline(points, layer=layer)

        def add_text(self, text: str, insert: Any, height: float, layer: str) -> None:
            self.layout.add_text(text, insert=insert, height=height, layer=layer)

        def add_blockref(self, name: str, insert: Any, layer: str) -> None:
            self.layout.add_blockref(name, insert, layer=layer)

    _recipe(DwgSpace(drawing.modelspace()), dwg_block)
    dwg = folder / f"{stem}.dwg"
    written = ezdwg.to_dwg(drawing, str(dwg))
    assert written.skipped_entities == 0, written

    doc = ezdxf.new("R2000")
    for name, colour in (("WALLS", 1), ("DOORS", 3), ("FURNITURE", 5), ("TEXT", 7)):
        doc.layers.add(name, color=colour)

    def dxf_block(name: str, lines: list[Any]) -> None:
        block = doc.blocks.new(name)
        for start, end in lines:
            block.add_line((*start, 0), (*end, 0))

    class DxfSpace:
        def __init__(self, layout: Any) -> None:
            self.layout = layout

        def add_line(self, start: Any, end: Any, layer: str) -> None:
            self.layout.add_line(start, end, dxfattribs={"layer": layer})

        def add_circle(self, center: Any, radius: float, layer: str) -> None:
            self.layout.add_circle(center, radius, dxfattribs={"layer": layer})

        def add_arc(self, center: Any, radius: float, start: float, end: float, layer: str) -> None:
            self.layout.add_arc(center, radius, start, end, dxfattribs={"layer": layer})

        def add_lwpolyline(self, points: Any, layer: str) -> None:
            self.layout.add_lwpolyline(points, dxfattribs={"layer": layer})

        def add_text(self, text: str, insert: Any, height: float, layer: str) -> None:
            self.layout.add_text(text, height=height, dxfattribs={"layer": layer, "insert": insert})

        def add_blockref(self, name: str, insert: Any, layer: str) -> None:
            self.layout.add_blockref(name, insert, dxfattribs={"layer": layer})

    _recipe(DxfSpace(doc.modelspace()), dxf_block)
    twin = folder / f"{stem}-twin.dxf"
    doc.saveas(twin)
    return dwg, twin


def counts(doc: Any) -> dict[str, Any]:
    """Model-space entities by type, user layers and user blocks of an ezdxf drawing."""
    return {
        "model": dict(Counter(e.dxftype() for e in doc.modelspace())),
        "layers": sorted(layer.dxf.name for layer in doc.layers if layer.dxf.name.lower() != "defpoints"),
        "blocks": sorted(b.name for b in doc.blocks if not b.name.startswith("*")),
    }


def context_counts(context: dict[str, Any]) -> dict[str, Any]:
    """The same figures from the host's dxf://model/context."""
    (model,) = [layout for layout in context["layouts"] if layout["kind"] == "model"]
    return {
        "model": model["by_type"],
        "layers": sorted(
            layer["name"] for layer in context["layers"] if layer["name"].lower() != "defpoints"
        ),
        "blocks": sorted(block["name"] for block in context["blocks"]),
    }


def write_texts(path: Path, texts: list[str]) -> Path:
    """An R2000 DWG (ezdwg) holding one TEXT per string, one above the other."""
    import ezdwg

    drawing = ezdwg.new()
    for row, value in enumerate(texts):
        drawing.modelspace().add_text(value, insert=(0, row, 0), height=0.4)
    written = ezdwg.to_dwg(drawing, str(path))
    assert written.skipped_entities == 0, written
    return path


def write_text_kinds(path: Path) -> dict[str, list[str]]:
    """An R2000 DWG (ezdwg) with texts of every kind ezdwg writes holding line breaks (and a few
    characters outside ASCII); returns the texts written, by kind, in drawing order."""
    import ezdwg

    drawing = ezdwg.new()
    msp = drawing.modelspace()
    written: dict[str, list[str]] = {"TEXT": [], "MTEXT": [], "ATTRIB": [], "ATTDEF": [], "DIMENSION": []}
    for n in range(1, 60):
        written["TEXT"].append(f"{'x' * n}\n{'y' * (n % 7)}")
        msp.add_text(written["TEXT"][-1], insert=(0, n, 0), height=0.4)
        written["MTEXT"].append(f"{'m' * n}\\P{'k' * (n % 5)}")
        msp.add_mtext(written["MTEXT"][-1], insert=(20, n, 0), char_height=0.4)
    written["TEXT"].append("Caf\u00e9 \u00fc\nK\u00fcche \\U+2205 5")
    msp.add_text(written["TEXT"][-1], insert=(0, 0, 0), height=0.4)
    block = drawing.blocks.new("TAGGED")
    written["ATTDEF"].append("first\nsecond")
    block.add_attdef("TAG", written["ATTDEF"][-1], (0, 0, 0), 0.3)
    for n in range(30):
        ref = msp.add_blockref("TAGGED", (40, n, 0))
        written["ATTRIB"].append(f"{'a' * n}\n{'b' * (n % 3)}")
        msp.add_attrib(ref, "TAG", written["ATTRIB"][-1], (40, n, 0), 0.3)
    written["DIMENSION"].append("Width\n<>")
    msp.add_linear_dim((0, -5, 0), (0, -2, 0), (10, -2, 0), text=written["DIMENSION"][-1])
    result = ezdwg.to_dwg(drawing, str(path))
    assert result.skipped_entities == 0, result
    return written
