"""Damaged files of every format answer a FileInfoError or a dict, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import ezdxf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cadmcp.fileinfo import FileInfoError, read_file_info

from .revit_fixtures import write_family_2024
from .test_fileinfo_dwg import r2004_header


def _seeds() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        doc = ezdxf.new("R2010")
        doc.layers.add("Walls")
        doc.modelspace().add_line((0, 0), (1, 1), dxfattribs={"layer": "Walls"})
        doc.saveas(folder / "a.dxf")
        ifc = (
            "ISO-10303-21;\nHEADER;\nFILE_DESCRIPTION(('ViewDefinition [CoordinationView]'),'2;1');\n"
            "FILE_NAME('a.ifc','2024-01-01T00:00:00',('A'),('B'),'pre','sys','');\nFILE_SCHEMA(('IFC4'));\n"
            "ENDSEC;\nDATA;\n#1=IFCPROJECT('0YvctVUKr0kugbFTf53O9L',$,'P',$,$,$,$,$,$);\n"
            "#2=IFCWALL('1YvctVUKr0kugbFTf53O9L',$,'W',$,$,$,$,$,$);\nENDSEC;\nEND-ISO-10303-21;\n"
        )
        return {
            ".dxf": (folder / "a.dxf").read_bytes(),
            ".ifc": ifc.encode(),
            ".dwg": r2004_header(),
            ".rfa": write_family_2024(folder / "a.rfa").read_bytes(),
        }


SEEDS = _seeds()


@st.composite
def damaged(draw: st.DrawFn) -> tuple[str, bytes]:
    suffix = draw(st.sampled_from(sorted(SEEDS)))
    data = bytearray(SEEDS[suffix])
    for _ in range(draw(st.integers(0, 6))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return suffix, bytes(data[:cut] if draw(st.booleans()) else data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=damaged(), detail=st.sampled_from(["summary", "full"]))
def test_damaged_files_never_raise_anything_but_file_info_error(case: tuple[str, bytes], detail: str) -> None:
    suffix, data = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"damaged{suffix}"
        path.write_bytes(data)
        try:
            info = read_file_info(path, detail)  # type: ignore[arg-type]
        except FileInfoError as error:
            assert error.code in ("corrupt_file", "unreadable")
            assert "\n" not in error.message
        else:
            json.dumps(info)
