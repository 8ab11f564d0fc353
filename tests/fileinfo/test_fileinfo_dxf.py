"""DXF metadata read by streaming tags from drawings ezdxf writes in the test."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import ezdxf
import ezdxf.bbox
import pytest
from ezdxf.tools import juliandate

from cadmcp.fileinfo import FileInfoError, read_file_info

CREATED = datetime(2021, 3, 14, 15, 9, 26)


def make_drawing(dxfversion: str = "R2018", layers: int = 3, blocks: int = 2) -> ezdxf.document.Drawing:
    doc = ezdxf.new(dxfversion)
    doc.header["$INSUNITS"] = 4
    doc.header["$TDCREATE"] = juliandate(CREATED)
    for i in range(layers):
        doc.layers.add(f"Layer-{i:03d}", color=i % 7 + 1)
    for i in range(blocks):
        block = doc.blocks.new(f"Block-{i:03d}")
        block.add_line((0, 0), (1, 0))
        block.add_circle((0, 0), 0.5)
    msp = doc.modelspace()
    for i in range(7):
        msp.add_line((i, 0), (i, 5), dxfattribs={"layer": "Layer-000"})
    msp.add_circle((2, 2), 3, dxfattribs={"layer": "Layer-001"})
    msp.add_text("hello", dxfattribs={"layer": "Layer-002"})
    msp.add_blockref("Block-000", (10, 10))
    msp.add_polyline3d([(0, 0, 0), (1, 1, 1), (2, 0, 3)])  # VERTEX/SEQEND are not counted
    return doc


def expected_counts(doc: ezdxf.document.Drawing) -> Counter[str]:
    return Counter(e.dxftype() for e in doc.modelspace())


@pytest.mark.parametrize(
    ("dxfversion", "code", "release"),
    [("R12", "AC1009", "R12"), ("R2000", "AC1015", "R2000"), ("R2010", "AC1024", "R2010"),
     ("R2018", "AC1032", "R2018")],
)  # fmt: skip
def test_summary_reports_version_dates_units_layers_blocks_and_counts(
    tmp_path: Path, dxfversion: str, code: str, release: str
) -> None:
    doc = make_drawing(dxfversion)
    path = tmp_path / f"plan-{dxfversion}.dxf"
    doc.saveas(path)

    info = read_file_info(path)

    assert info["format"] == "dxf"
    assert info["path"] == str(path.resolve())
    assert info["fileSizeBytes"] == path.stat().st_size
    assert datetime.fromisoformat(info["modified"]).tzinfo is not None
    assert info["acadVersion"] == code
    assert info["release"] == release
    assert info["dxfEncoding"] == "ascii"
    assert info["created"] == CREATED.isoformat()
    assert info["units"] == (None if dxfversion == "R12" else "Millimeters")  # R12 has no $INSUNITS
    assert {"Layer-000", "Layer-001", "Layer-002"} <= set(info["layers"]["items"])
    assert info["blocks"]["items"] == ["Block-000", "Block-001"]
    assert info["entities"]["total"] == sum(expected_counts(doc).values())
    assert info["entities"]["byType"] == dict(expected_counts(doc))
    json.dumps(info)


def test_products_name_every_autocad_release_of_the_format(tmp_path: Path) -> None:
    path = tmp_path / "p.dxf"
    make_drawing("R2018").saveas(path)
    assert read_file_info(path)["products"] == "AutoCAD 2018/2019/2020/2021/2022/2023/2024/2025"


def test_extents_are_null_until_computed_and_real_after(tmp_path: Path) -> None:
    doc = make_drawing()
    doc.saveas(tmp_path / "raw.dxf")
    box = ezdxf.bbox.extents(doc.modelspace())
    msp = doc.modelspace()  # ezdxf copies the layout's extents into the header on save
    msp.dxf.extmin, msp.dxf.extmax = box.extmin, box.extmax
    doc.saveas(tmp_path / "computed.dxf")

    assert read_file_info(tmp_path / "raw.dxf")["extents"] is None
    extents = read_file_info(tmp_path / "computed.dxf")["extents"]
    assert extents["min"] == pytest.approx(list(box.extmin))
    assert extents["max"] == pytest.approx(list(box.extmax))
    assert extents["min"][:2] == pytest.approx([-1.0, -1.0])


def test_binary_dxf_reads_like_ascii(tmp_path: Path) -> None:
    doc = make_drawing("R2013")
    doc.saveas(tmp_path / "text.dxf")
    doc.saveas(tmp_path / "binary.dxf", fmt="bin")

    text, binary = read_file_info(tmp_path / "text.dxf"), read_file_info(tmp_path / "binary.dxf")

    assert binary["dxfEncoding"] == "binary"
    for key in ("acadVersion", "created", "units", "layers", "blocks", "entities"):
        assert binary[key] == text[key], key


def test_summary_stays_small_and_caps_long_lists(tmp_path: Path) -> None:
    path = tmp_path / "big.dxf"
    make_drawing(layers=150, blocks=60).saveas(path)

    info = read_file_info(path)

    assert len(json.dumps(info)) < 2048
    assert len(info["layers"]["items"]) == 20
    assert info["layers"]["count"] == 152  # plus "0" and "Defpoints"
    assert info["layers"]["more"] == 132
    assert info["blocks"]["count"] == 60
    assert len(info["blocks"]["items"]) == 20


def test_full_lists_every_layer_block_and_layer_usage(tmp_path: Path) -> None:
    path = tmp_path / "big.dxf"
    doc = make_drawing(layers=150, blocks=60)
    doc.layers.get("Layer-005").freeze()
    doc.saveas(path)

    info = read_file_info(path, "full")

    layers = {layer["name"]: layer for layer in info["layers"]}
    assert len(layers) == 152
    assert layers["Layer-005"]["frozen"] is True
    assert layers["Layer-004"]["color"] == 5
    blocks = {b["name"]: b for b in info["blocks"]}
    assert blocks["Block-059"]["entities"] == 2
    assert info["entities"]["byLayer"]["Layer-000"] == 7
    assert info["headerVariables"]["$INSUNITS"] == 4
    assert "ENTITIES" in info["sections"]


def test_paper_space_entities_are_counted_apart_in_full(tmp_path: Path) -> None:
    doc = make_drawing()
    doc.layout("Layout1").add_circle((0, 0), 5)
    doc.saveas(tmp_path / "p.dxf")

    summary = read_file_info(tmp_path / "p.dxf")["entities"]
    full = read_file_info(tmp_path / "p.dxf", "full")["entities"]

    assert full["paperSpace"] == 1
    assert full["modelSpace"] == sum(expected_counts(doc).values())
    assert summary["total"] == full["total"] == full["modelSpace"] + 1


def test_every_paper_layout_is_counted_not_only_the_active_one(tmp_path: Path) -> None:
    """gdsestimating's cw750 details: paperSpace 12, where its 4 sheets hold 37 (INSERT 132 against
    142): the layouts that are not active keep their entities in the BLOCKS section (*Paper_Space0
    ...), which the count read past; nor were the layouts named."""
    doc = make_drawing()
    doc.layout("Layout1").add_circle((0, 0), 5)
    for name in ("Sheet 2", "Sheet 3"):
        sheet = doc.layouts.new(name)
        sheet.add_line((0, 0), (10, 0), dxfattribs={"layer": "TITLE"})
        sheet.add_text("A1", dxfattribs={"layer": "TITLE"})
    doc.saveas(tmp_path / "p.dxf")
    reread = ezdxf.readfile(tmp_path / "p.dxf")
    paper = sum(len(layout) for layout in reread.layouts if not layout.is_modelspace)

    summary = read_file_info(tmp_path / "p.dxf")
    full = read_file_info(tmp_path / "p.dxf", "full")

    assert full["entities"]["paperSpace"] == paper == 5  # a circle, and a line and a text on each sheet
    assert summary["entities"]["total"] == full["entities"]["total"] == len(reread.modelspace()) + paper
    assert full["entities"]["byLayer"]["TITLE"] == 4
    assert full["layouts"] == ["Layout1", "Sheet 2", "Sheet 3"]
    assert summary["paperLayouts"] == full["paperLayouts"] == 3


def test_summary_byte_count_agrees_with_the_full_tag_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cadmcp.fileinfo import dxf

    doc = make_drawing()
    msp = doc.modelspace()
    for i in range(300):
        msp.add_3dface([(i, 0, 0), (i, 1, 0), (i, 1, 1)])
        msp.add_text("0", dxfattribs={"layer": "0"})  # values reading "0" are not entity starts
    doc.saveas(tmp_path / "p.dxf")
    monkeypatch.setattr(dxf, "_BYTE_CHUNK", 509)  # entities straddle many chunk ends

    summary = read_file_info(tmp_path / "p.dxf")["entities"]
    full = read_file_info(tmp_path / "p.dxf", "full")["entities"]

    assert summary["byType"] == full["byType"] == dict(expected_counts(doc).most_common())
    assert summary["byType"]["3DFACE"] == 300


def test_drawing_cut_inside_entities_is_truncated_in_summary_too(tmp_path: Path) -> None:
    doc = make_drawing()
    doc.saveas(tmp_path / "whole.dxf")
    data = (tmp_path / "whole.dxf").read_bytes()
    cut = tmp_path / "cut.dxf"
    cut.write_bytes(data[: data.index(b"ENTITIES") + 400])

    with pytest.raises(FileInfoError) as caught:
        read_file_info(cut)

    assert caught.value.code == "corrupt_file"


def test_xrefs_are_reported_as_external_references(tmp_path: Path) -> None:
    doc = make_drawing()
    doc.add_xref_def("site/survey.dwg", "SURVEY")
    doc.saveas(tmp_path / "x.dxf")

    info = read_file_info(tmp_path / "x.dxf")

    assert info["externalReferences"]["items"] == [{"block": "SURVEY", "path": "site/survey.dwg"}]


def test_paper_space_entities_placed_by_their_owner_alone_are_counted_apart(tmp_path: Path) -> None:
    """A curtain-wall detail from dxf-parser's samples places its active sheet's 12 entities by their
    owner (the *Paper_Space block record), with no 67 flag: full counted them as model space."""
    doc = make_drawing()
    for n in range(3):
        doc.layout("Layout1").add_line((0, n), (10, n))
    doc.saveas(tmp_path / "flagged.dxf")
    lines = (tmp_path / "flagged.dxf").read_text().splitlines()
    unflagged = [
        line for n, line in enumerate(lines)
        if not (line.strip() == "67" and lines[n + 1].strip() == "1")
        and not (line.strip() == "1" and n and lines[n - 1].strip() == "67")
    ]  # fmt: skip
    (tmp_path / "owned.dxf").write_text("\n".join(unflagged) + "\n")

    full = read_file_info(tmp_path / "owned.dxf", "full")["entities"]

    assert full["paperSpace"] == 3 and full["paperSpaceByType"] == {"LINE": 3}
    assert full["modelSpace"] == sum(expected_counts(doc).values())
    assert "spaces" in read_file_info(tmp_path / "owned.dxf")["entities"]  # a summary does not split


def test_names_written_with_unicode_escapes_are_decoded(tmp_path: Path) -> None:
    """ezdxf's dxf_unicode drawing names a layer "Tschüss mit \\U+00FC", as AutoCAD writes what its
    code page lacks; the live host showed "Tschüss mit ü" and read_file_info the escape."""
    doc = make_drawing("R2000")
    doc.layers.add("Wałbrzych")  # ł is not in the drawing's code page (ANSI_1252)
    doc.saveas(tmp_path / "e.dxf")
    assert "\\U+0142" in (tmp_path / "e.dxf").read_text(encoding="latin-1")  # as AutoCAD writes it

    assert "Wałbrzych" in read_file_info(tmp_path / "e.dxf")["layers"]["items"]


def test_a_file_without_header_or_entities_says_what_it_lacks(tmp_path: Path) -> None:
    """dxf-parser's blocks.dxf holds a BLOCKS section alone: it was reported as an R12 drawing with
    no word that no version is written in it, nor that it has no drawing of its own."""
    doc = make_drawing("R12")
    doc.saveas(tmp_path / "full.dxf")
    text = (tmp_path / "full.dxf").read_text()
    start, end = text.index("  0\nSECTION\n  2\nBLOCKS"), text.index("ENDSEC", text.index("2\nBLOCKS"))
    (tmp_path / "blocks.dxf").write_text(text[start : end + 6] + "\n  0\nEOF\n")

    notes = read_file_info(tmp_path / "blocks.dxf")["notes"]

    assert "has no HEADER section, so its version is not written in it" in notes[0]
    assert "has no ENTITIES section (sections: BLOCKS)" in notes[1]
    assert "notes" not in read_file_info(tmp_path / "full.dxf")


@pytest.mark.parametrize("dxfversion", ["R2000", "R2018"])
def test_non_ascii_names_decode_with_the_drawings_encoding(tmp_path: Path, dxfversion: str) -> None:
    doc = make_drawing(dxfversion)
    doc.layers.add("Wände")
    doc.saveas(tmp_path / "u.dxf")

    assert "Wände" in read_file_info(tmp_path / "u.dxf")["layers"]["items"]


def test_truncated_drawing_is_a_corrupt_file(tmp_path: Path) -> None:
    whole = tmp_path / "whole.dxf"
    make_drawing().saveas(whole)
    data = whole.read_bytes()
    cut = tmp_path / "cut.dxf"
    cut.write_bytes(data[: len(data) // 2])

    with pytest.raises(FileInfoError) as caught:
        read_file_info(cut)

    assert caught.value.code == "corrupt_file"
    assert "truncated" in caught.value.message


@pytest.mark.parametrize(
    "content",
    [b"", b"this is not a drawing\nat all\n", b"AutoCAD Binary DXF\r\n\x1a\x00\x00\x00"],
    ids=["empty", "text", "binary-stub"],
)
def test_non_dxf_content_is_a_corrupt_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.dxf"
    path.write_bytes(content)

    with pytest.raises(FileInfoError) as caught:
        read_file_info(path, "full")

    assert caught.value.code == "corrupt_file"
    assert "\n" not in caught.value.message


def test_a_binary_dxf_cut_short_says_so(tmp_path: Path) -> None:
    drawing = ezdxf.new("R2018")
    for n in range(50):
        drawing.modelspace().add_line((0, n), (10, n))
    whole = tmp_path / "whole.dxf"
    drawing.saveas(whole, fmt="bin")
    assert read_file_info(whole)["dxfEncoding"] == "binary"
    cut = tmp_path / "cut.dxf"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size * 9 // 10])
    with pytest.raises(FileInfoError) as caught:
        read_file_info(cut)
    assert caught.value.code == "corrupt_file"
    assert "not a complete binary DXF drawing: it ends without the EOF record" in caught.value.message
