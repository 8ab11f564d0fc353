"""Revit metadata from compound files the test writes with its own CFB writer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import olefile
import pytest
import rvt

from cadmcp.fileinfo import FileInfoError, read_file_info

from .cfb import build_cfb, write_cfb
from .revit_fixtures import (
    CENTRAL_2018,
    GUID,
    LINKS,
    SAVE_PATH_2024,
    basic_file_info_2024,
    write_family_2024,
    write_project_2018,
    write_project_2024,
)


def test_cfb_writer_output_opens_strictly_with_olefile_and_rvt(tmp_path: Path) -> None:
    streams = {
        "BasicFileInfo": basic_file_info_2024(),
        "Formats/Latest": os.urandom(5000),  # regular sectors
        "Global/Latest": os.urandom(700),  # mini stream
        "Global/Empty": b"",
        "RevitPreview4.0": os.urandom(70_000),  # several FAT sectors' worth of chains
    }
    path = write_cfb(tmp_path / "fixture.rvt", streams)

    with olefile.OleFileIO(str(path), raise_defects=olefile.DEFECT_UNSURE) as ole:
        for name, data in streams.items():
            assert ole.openstream(name).read() == data
    assert rvt.RevitFile(str(path)).stream_names() == sorted(streams)
    assert rvt.read_metadata(str(path))["revit_version"] == 2024


def test_cfb_writer_handles_many_siblings(tmp_path: Path) -> None:
    streams = {f"Partitions/{n}": bytes([n]) * (n * 50) for n in range(1, 40)}
    with olefile.OleFileIO(build_cfb(streams), raise_defects=olefile.DEFECT_UNSURE) as ole:
        assert sorted("/".join(p) for p in ole.listdir()) == sorted(streams)
        assert ole.openstream("Partitions/17").read() == bytes([17]) * 850


def test_revit_2024_project_summary(tmp_path: Path) -> None:
    path = write_project_2024(tmp_path / "Project1.rvt")

    info = read_file_info(path)

    assert info["format"] == "revit"
    assert info["fileType"] == "project"
    assert info["revitVersion"] == 2024
    assert info["build"] == "20230308_1635(x64)"
    assert info["product"] == "Autodesk Revit 2024"
    assert info["worksharing"] == "Not enabled"
    assert info["workshared"] is False
    assert info["username"] == "ada"
    assert info["centralModelPath"] is None
    assert info["lastSavePath"] == SAVE_PATH_2024
    assert info["locale"] == "ENU"
    assert info["documentGuid"] == GUID
    assert info["documentIncrements"] == 12
    assert info["singleUserCloudModel"] is False
    assert info["reader"] == "rvt+olefile"
    assert info["hasPreview"] is True
    assert len(json.dumps(info)) < 2048


def test_linked_files_come_from_transmission_data(tmp_path: Path) -> None:
    path = write_project_2024(tmp_path / "Project1.rvt")

    links = read_file_info(path, "full")["externalReferences"]

    assert [link["path"] for link in links] == [path for _, path, _, _ in LINKS]
    assert [(link["pathType"], link["loadState"]) for link in links] == [(t, s) for _, _, t, s in LINKS]
    assert [link["kind"] for link in links] == ["Revit link", "CAD link", "IFC link", "table"]


def test_project_without_transmission_data_has_no_links(tmp_path: Path) -> None:
    path = write_project_2024(tmp_path / "Solo.rvt", with_links=False)
    assert read_file_info(path)["externalReferences"] is None
    assert read_file_info(path, "full")["externalReferences"] == []


def test_pre_2019_layout_reads_through_the_olefile_fallback(tmp_path: Path) -> None:
    path = write_project_2018(tmp_path / "Tower.rvt")
    with pytest.raises(ValueError):  # the layout rvt rejects: no Format: line
        rvt.read_metadata(str(path))

    info = read_file_info(path)

    assert info["reader"] == "olefile"
    assert info["revitVersion"] == 2018
    assert info["build"] == "20170927_1515(x64)"
    assert info["product"] == "Autodesk Revit 2018"
    assert info["worksharing"] == "Enabled"
    assert info["workshared"] is True
    assert info["centralModelPath"] == CENTRAL_2018
    assert info["locale"] == "DEU"
    assert info["documentIncrements"] == 240


def test_family_summary_carries_part_atom(tmp_path: Path) -> None:
    path = write_family_2024(tmp_path / "Desk Chair.rfa")

    info = read_file_info(path)

    assert info["fileType"] == "family"
    atom = info["partAtom"]
    assert atom["title"] == "Desk Chair"
    assert atom["category"] == "Furniture"
    assert atom["omniClass"] == "23.40.20.14"
    assert atom["productVersion"] == "2024"
    assert atom["familyTypes"]["items"] == ["Chair 450", "Chair 500"]


def test_full_lists_every_basic_file_info_line_streams_and_element_counts(tmp_path: Path) -> None:
    path = write_family_2024(tmp_path / "Desk Chair.rfa")

    info = read_file_info(path, "full")

    keys = [entry["key"] for entry in info["basicFileInfo"]]
    assert keys[:4] == ["Worksharing", "Username", "Central Model Path", "Format"]
    assert "Author" in keys
    assert "PartAtom" in info["streams"] and "Global/Latest" in info["streams"]
    assert info["partAtom"]["taxonomies"] == ["adsk:revit", "adsk:revit:grouping"]
    # The fixture's model streams hold no real elements: counts are absent with the reason.
    assert info["elementCounts"] is None
    assert "could not be decoded" in info["elementCountsNote"]
    json.dumps(info)


@pytest.mark.parametrize(("suffix", "kind"), [(".rte", "project template"), (".rft", "family template")])
def test_templates_are_named_by_extension(tmp_path: Path, suffix: str, kind: str) -> None:
    path = write_project_2024(tmp_path / f"Template{suffix}")
    assert read_file_info(path)["fileType"] == kind


def test_compound_file_without_basic_file_info_is_not_revit(tmp_path: Path) -> None:
    path = write_cfb(tmp_path / "letter.rvt", {"WordDocument": b"\x00" * 100})

    with pytest.raises(FileInfoError) as caught:
        read_file_info(path)

    assert caught.value.code == "corrupt_file"
    assert "BasicFileInfo" in caught.value.message


@pytest.mark.parametrize("content", [b"", b"not a compound file at all", b"PK\x03\x04zip"])
def test_non_ole_content_is_corrupt(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "model.rvt"
    path.write_bytes(content)

    with pytest.raises(FileInfoError) as caught:
        read_file_info(path)

    assert caught.value.code == "corrupt_file"
    assert "OLE compound file" in caught.value.message


@pytest.mark.parametrize("keep", [1536, 4000, -100])
def test_truncated_compound_file_is_corrupt(tmp_path: Path, keep: int) -> None:
    whole = write_project_2024(tmp_path / "whole.rvt").read_bytes()
    path = tmp_path / "cut.rvt"
    path.write_bytes(whole[:keep])

    with pytest.raises(FileInfoError) as caught:
        read_file_info(path, "full")

    assert caught.value.code == "corrupt_file"
    assert "truncated" in caught.value.message


def test_basic_file_info_without_text_is_corrupt(tmp_path: Path) -> None:
    path = write_cfb(tmp_path / "blank.rvt", {"BasicFileInfo": bytes(range(7, 200))})

    with pytest.raises(FileInfoError) as caught:
        read_file_info(path)

    assert caught.value.code == "corrupt_file"
    assert "Revit version" in caught.value.message
