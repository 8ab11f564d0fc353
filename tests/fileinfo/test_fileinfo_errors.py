"""Every way a caller can get it wrong answers a FileInfoError with a code and a next step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cadmcp.fileinfo import SUPPORTED_EXTENSIONS, FileInfoError, read_file_info


def error_of(*args: object) -> FileInfoError:
    with pytest.raises(FileInfoError) as caught:
        read_file_info(*args)  # type: ignore[arg-type]
    error = caught.value
    assert error.message and "\n" not in error.message
    assert str(error) == error.message
    json.dumps(error.to_dict())
    return error


@pytest.mark.parametrize("path", [None, "", "   "])
def test_missing_path_asks_for_one(path: str | None) -> None:
    error = error_of(path)
    assert error.code == "missing_path"
    assert "filePath is required" in error.message


def test_a_path_that_is_not_a_string_is_a_missing_path() -> None:
    assert error_of(42).code == "missing_path"


def test_not_found_names_the_path(tmp_path: Path) -> None:
    error = error_of(tmp_path / "nowhere" / "plan.dxf")
    assert error.code == "not_found"
    assert "plan.dxf" in error.message


def test_unsupported_extension_lists_the_supported_ones(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    error = error_of(path)
    assert error.code == "unsupported_extension"
    for extension in SUPPORTED_EXTENSIONS:
        assert extension in error.message


def test_supported_extensions_cover_the_five_formats() -> None:
    assert set(SUPPORTED_EXTENSIONS) == {
        ".rvt",
        ".rfa",
        ".rte",
        ".rft",
        ".dwg",
        ".dxf",
        ".ifc",
        ".fcstd",
        ".fcstd1",
    }


def test_extension_match_ignores_case(tmp_path: Path) -> None:
    path = tmp_path / "PLAN.DWG"
    path.write_bytes(b"AC1032" + bytes(0x200))
    assert read_file_info(path)["format"] == "dwg"


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "model.ifc"
    folder.mkdir()
    error = error_of(folder)
    assert error.code == "not_a_file"
    assert "directory" in error.message


def test_fifo_is_not_a_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.dxf"
    os.mkfifo(fifo)
    assert error_of(fifo).code == "not_a_file"


@pytest.mark.parametrize("detail", ["everything", "", None, 1])
def test_invalid_detail_names_the_accepted_values(tmp_path: Path, detail: object) -> None:
    path = tmp_path / "a.dxf"
    path.write_text("0\nEOF\n")
    error = error_of(path, detail)
    assert error.code == "invalid_detail"
    assert '"summary"' in error.message and '"full"' in error.message


def test_a_path_the_system_cannot_inspect_is_unreadable(tmp_path: Path) -> None:
    error = error_of(tmp_path / ("x" * 300 + ".dxf"))  # longer than any file name may be
    assert error.code == "unreadable"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_file_without_read_permission_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "secret.dxf"
    path.write_text("0\nEOF\n")
    path.chmod(0)
    assert error_of(path).code == "unreadable"


def test_importing_the_package_loads_no_format_library() -> None:
    code = (
        "import sys, cadmcp.fileinfo as f; "
        "print([m for m in ('ezdxf', 'ifcopenshell', 'rvt', 'olefile') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_file_named_for_another_format_is_read_as_what_it_holds(tmp_path: Path) -> None:
    """An IFC model saved as .dxf is read as IFC, saying so, not refused as a truncated DXF."""
    house = Path(__file__).resolve().parents[2] / "samples" / "house.ifc"
    misnamed = tmp_path / "house.dxf"
    misnamed.write_bytes(house.read_bytes())
    info = read_file_info(str(misnamed))
    assert info["format"] == "ifc" and info["schema"], info
    assert info["note"].startswith("house.dxf is named .dxf but holds an IFC model")
    assert "note" not in read_file_info(str(house))


def test_an_ascii_dxf_or_a_freecad_document_under_another_name_is_told_by_its_content(tmp_path: Path) -> None:
    """An ASCII DXF has no magic number, but starts with group code 0 and SECTION (after any 999
    comments); an FCStd is a zip whose first member is Document.xml."""
    sketch = tmp_path / "sketch.ifc"
    sketch.write_text("999\nmade by hand\n  0\nSECTION\n  2\nENTITIES\n  0\nENDSEC\n  0\nEOF\n")
    info = read_file_info(str(sketch))
    assert info["format"] == "dxf" and info["note"].startswith("sketch.ifc is named .ifc but holds a DXF")
    part = tmp_path / "part.dwg"
    part.write_bytes((Path(__file__).resolve().parents[2] / "samples" / "bracket.FCStd").read_bytes())
    info = read_file_info(str(part))
    assert info["format"] == "freecad" and info["objectCount"] == 13, info
    assert info["note"].startswith("part.dwg is named .dwg but holds a FreeCAD document: it was read as that")


def test_a_dwg_named_dxf_keeps_the_misnaming_note_before_its_own(tmp_path: Path) -> None:
    """The DWG reader's own note (content needs a converter) comes after, not instead of, the
    note that the name is wrong."""
    misnamed = tmp_path / "plan.dxf"
    misnamed.write_bytes(b"AC1032" + bytes(0x200))
    info = read_file_info(str(misnamed))
    assert info["format"] == "dwg", info
    assert info["note"].startswith("plan.dxf is named .dxf but holds"), info["note"]
    assert "its layers and entities are read when launch_host opens it" in info["note"]


def test_a_freecad_document_is_read_without_freecad_and_points_to_launch_host(tmp_path: Path) -> None:
    """The .FCStd's Document.xml: the FreeCAD version that saved it, its properties and its objects."""
    sample = Path(__file__).resolve().parents[2] / "samples" / "bracket.FCStd"
    info = read_file_info(str(sample), "full")
    assert (
        info["format"] == "freecad" and info["programVersion"].startswith("0.") and info["label"] == "bracket"
    )
    assert info["objectCount"] == 13 and info["objectTypes"]["PartDesign::Pad"] == 1, info
    assert {"name": "Plate", "type": "PartDesign::Pad", "label": "Plate"} in info["objects"]
    assert "launch_host(filePath=...)" in info["note"]
    part = tmp_path / "part.FCStd"
    part.write_bytes(b"PK\x03\x04")  # a zip cut short after its first bytes
    with pytest.raises(FileInfoError) as raised:
        read_file_info(str(part))
    assert raised.value.code == "corrupt_file" and "not a FreeCAD document" in raised.value.message


def test_a_freecad_zip_with_damaged_xml_or_none_is_corrupt(tmp_path: Path) -> None:
    import zipfile

    for name, members in (
        ("cut.FCStd", {"Document.xml": "<Document ProgramVersion='0.21'><Objects Count='1'><Obj"}),
        ("other.FCStd", {"notes.txt": "hello"}),
    ):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as archive:
            for member, text in members.items():
                archive.writestr(member, text)
        with pytest.raises(FileInfoError) as raised:
            read_file_info(str(path))
        assert raised.value.code == "corrupt_file", raised.value
        assert "not well-formed" in raised.value.message or "without Document.xml" in raised.value.message
