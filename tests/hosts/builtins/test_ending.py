"""Whether a file ends as its format ends, by its content rather than its name."""

from __future__ import annotations

from pathlib import Path

import ezdxf

from cadmcp.host.builtins.ending import unfinished


def test_a_drawing_cut_short_is_told_and_a_whole_one_or_a_dwg_named_dxf_is_not(tmp_path: Path) -> None:
    whole = tmp_path / "whole.dxf"
    drawing = ezdxf.new("R2018")
    drawing.modelspace().add_line((0, 0), (1, 1))
    drawing.saveas(whole)
    lines = whole.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.dxf"
    cut.write_text("".join(lines[: len(lines) // 2 // 2 * 2]))
    dwg = tmp_path / "plan.dxf"  # a DWG under a DXF name: its end is not a DXF's EOF tag
    dwg.write_bytes(b"AC1032\x00\x00\x00\x00\x00" + bytes(range(256)) * 8)

    assert unfinished(whole) is None
    assert unfinished(cut) == "it ends without the closing EOF tag of DXF"
    assert unfinished(dwg) is None


def test_an_ifc_model_without_its_end_line_is_told(tmp_path: Path) -> None:
    model = tmp_path / "m.ifc"
    model.write_text("ISO-10303-21;\nHEADER;\nENDSEC;\nDATA;\n#1=IFCPERSON($,$,'',$,$,$,$,$);\n")
    assert unfinished(model) == "it ends without END-ISO-10303-21, so its end is missing"
    model.write_text(model.read_text() + "ENDSEC;\nEND-ISO-10303-21;\n")
    assert unfinished(model) is None
