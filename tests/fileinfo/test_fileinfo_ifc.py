"""IFC metadata from models IfcOpenShell builds in the test: header-only summary, real open
for full."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import ifcopenshell
import ifcopenshell.api.aggregate
import ifcopenshell.api.owner
import ifcopenshell.api.owner.settings
import ifcopenshell.api.project
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import ifcopenshell.api.unit
import ifcopenshell.guid
import pytest

from cadmcp.fileinfo import FileInfoError, ifc, read_file_info

PROJECT = "Haus Müller – Phase 2"


def build_model(schema: str = "IFC4", walls: int = 5, doors: int = 2) -> ifcopenshell.file:
    model = ifcopenshell.api.project.create_file(version=schema)
    settings = ifcopenshell.api.owner.settings
    saved = settings.get_user, settings.get_application
    if schema == "IFC2X3":  # IFC2X3 requires an owner history on every rooted entity
        person = ifcopenshell.api.owner.add_person(model, identification="ADA", family_name="Lovelace")
        organisation = ifcopenshell.api.owner.add_organisation(model, identification="AEL", name="AEL")
        user = ifcopenshell.api.owner.add_person_and_organisation(
            model, person=person, organisation=organisation
        )
        application = ifcopenshell.api.owner.add_application(model)
        settings.get_user = lambda _f: user
        settings.get_application = lambda _f: application
    try:
        _populate(model, walls, doors)
    finally:
        settings.get_user, settings.get_application = saved
    return model


def _populate(model: ifcopenshell.file, walls: int, doors: int) -> None:
    project = ifcopenshell.api.root.create_entity(model, ifc_class="IfcProject", name=PROJECT)
    project.LongName = "Residential extension"
    ifcopenshell.api.unit.assign_unit(model)
    site = ifcopenshell.api.root.create_entity(model, ifc_class="IfcSite", name="Plot 7")
    building = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuilding", name="House")
    storeys = []
    for i, name in enumerate(["Ground Floor", "First Floor"]):
        storey = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingStorey", name=name)
        storey.Elevation = 3.0 * i
        storeys.append(storey)
    ifcopenshell.api.aggregate.assign_object(model, relating_object=project, products=[site])
    ifcopenshell.api.aggregate.assign_object(model, relating_object=site, products=[building])
    ifcopenshell.api.aggregate.assign_object(model, relating_object=building, products=storeys)
    elements = [
        ifcopenshell.api.root.create_entity(model, ifc_class="IfcWall", name=f"Wall {i}")
        for i in range(walls)
    ]
    elements += [
        ifcopenshell.api.root.create_entity(model, ifc_class="IfcDoor", name=f"Door {i}")
        for i in range(doors)
    ]
    ifcopenshell.api.spatial.assign_container(model, relating_structure=storeys[0], products=elements)
    model.header.file_name.author = ("Ada Lovelace",)
    model.header.file_name.organization = ("Analytical Engines Ltd",)
    model.header.file_name.originating_system = "cadmcp tests"
    model.header.file_name.name = "house.ifc"


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ifcopenshell.file]:
    model = build_model()
    path = tmp_path_factory.mktemp("ifc") / "house.ifc"
    model.write(str(path))
    return path, model


def test_summary_reads_schema_header_and_project(house: tuple[Path, ifcopenshell.file]) -> None:
    path, _ = house

    info = read_file_info(path)

    assert info["format"] == "ifc"
    assert info["schema"] == "IFC4"
    header = info["header"]
    assert header["author"] == ["Ada Lovelace"]
    assert header["organization"] == ["Analytical Engines Ltd"]
    assert header["originatingSystem"] == "cadmcp tests"
    assert header["preprocessorVersion"].startswith("IfcOpenShell")
    assert header["name"] == "house.ifc"
    assert header["timeStamp"]
    assert info["project"]["name"] == PROJECT  # \X2\ escapes decoded
    assert info["project"]["longName"] == "Residential extension"
    assert len(json.dumps(info)) < 2048


def test_raw_non_ascii_bytes_in_the_header_and_project_read_as_written(
    house: tuple[Path, ifcopenshell.file], tmp_path: Path
) -> None:
    """An exporter wrote the author as raw Windows-1252 and the project name as raw UTF-8 bytes
    (STEP allows only its escapes): read_file_info said 'Jrgen Mller', the host 'Jürgen Müller'."""
    path, _ = house
    text = path.read_bytes().replace(b"'Ada Lovelace'", "'Jürgen Müller'".encode("cp1252"), 1)
    text = text.replace(b"'Residential extension'", "'Anbau Größe 樓'".encode(), 1)
    raw_path = tmp_path / "raw.ifc"
    raw_path.write_bytes(text)

    info = read_file_info(raw_path)

    assert info["header"]["author"] == ["Jürgen Müller"]
    assert info["project"]["longName"] == "Anbau Größe 樓"


def test_summary_counts_building_elements(house: tuple[Path, ifcopenshell.file]) -> None:
    path, model = house

    info = read_file_info(path)

    assert info["elementCounts"]["IfcWall"] == len(model.by_type("IfcWall")) == 5
    assert info["elementCounts"]["IfcDoor"] == 2
    assert info["elementCounts"]["IfcBuildingStorey"] == 2
    assert "IfcRelAggregates" not in info["elementCounts"]  # relationships are not elements
    assert info["instances"] == sum(1 for _ in model)


def test_full_counts_every_class_like_the_open_model(house: tuple[Path, ifcopenshell.file]) -> None:
    path, model = house

    info = read_file_info(path, "full")

    assert info["countsByClass"] == dict(Counter(e.is_a() for e in model))
    assert info["elementCounts"]["IfcWall"] == 5
    assert info["project"]["globalId"] == model.by_type("IfcProject")[0].GlobalId
    storeys = [s for s in info["spatialStructure"] if s["class"] == "IfcBuildingStorey"]
    assert [(s["name"], s["elevation"]) for s in storeys] == [("Ground Floor", 0.0), ("First Floor", 3.0)]
    assert info["lengthUnit"] == "millimetre"
    json.dumps(info)


def test_ifc2x3_models_read_too(tmp_path: Path) -> None:
    path = tmp_path / "old.ifc"
    build_model("IFC2X3").write(str(path))

    info = read_file_info(path)

    assert info["schema"] == "IFC2X3"
    assert info["elementCounts"]["IfcWall"] == 5
    full = read_file_info(path, "full")
    assert full["countsByClass"]["IfcDoor"] == 2
    assert full["applications"][0]["name"]  # the owner history's application


def test_a_description_written_as_one_string_is_one_entry(tmp_path: Path) -> None:
    """Constructivity writes FILE_DESCRIPTION('ViewDefinition [...]','2;1'), a string where the schema
    wants a list: it was returned letter by letter, and its view definition was lost."""
    path = tmp_path / "elemented.ifc"
    build_model("IFC4").write(str(path))
    text = path.read_text()
    start = text.index("FILE_DESCRIPTION(")
    end = text.index(";", start)
    path.write_text(text[:start] + "FILE_DESCRIPTION('ViewDefinition [notYetAssigned]','2;1')" + text[end:])

    info = read_file_info(path)

    assert info["header"]["description"] == ["ViewDefinition [notYetAssigned]"]
    assert info["viewDefinition"] == "notYetAssigned"


def test_standard_case_walls_are_counted_with_the_walls(tmp_path: Path) -> None:
    """Xbim's sample house has 3 IfcWall and 2 IfcWallStandardCase: the summary showed "IfcWall: 3"
    and hid the others among "otherElementClasses", so an agent said 3 walls where there are 5."""
    model = build_model("IFC4", walls=3)
    for n in range(2):
        model.create_entity("IfcWallStandardCase", GlobalId=ifcopenshell.guid.new(), Name=f"S{n}")
    path = tmp_path / "house.ifc"
    model.write(str(path))

    info = read_file_info(path)

    assert info["elementCounts"]["IfcWall"] == 3 and info["elementCounts"]["IfcWallStandardCase"] == 2
    assert info["elementKinds"]["IfcWall"] == 5 and "IfcWallStandardCase" not in info["elementKinds"]


def test_a_release_variant_is_counted_with_its_releases_classes(tmp_path: Path) -> None:
    """KIT's road model names IFC4X3_RC2, a schema IfcOpenShell lacks: its summary gave no
    elementCounts and no word why. It is counted with IFC4X3_ADD2's classes, as the host reads it."""
    path = tmp_path / "road.ifc"
    build_model("IFC4X3").write(str(path))
    text = path.read_text()
    path.write_text(text.replace("FILE_SCHEMA(('IFC4X3_ADD2'))", "FILE_SCHEMA(('IFC4X3_RC2'))", 1))
    assert "IFC4X3_RC2" in path.read_text()

    info = read_file_info(path)

    assert info["schema"] == "IFC4X3_RC2" and info["elementCounts"]["IfcWall"] == 5
    path.write_text(text.replace("FILE_SCHEMA(('IFC4X3_ADD2'))", "FILE_SCHEMA(('IFC4X1'))", 1))
    unknown = read_file_info(path)
    assert "elementCounts" not in unknown and "IfcOpenShell has no schema for IFC4X1" in unknown["note"]


def test_instances_split_across_read_chunks_are_counted_once(
    house: tuple[Path, ifcopenshell.file], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, model = house
    monkeypatch.setattr(ifc, "_CHUNK", 97)

    info = read_file_info(path)

    assert info["instances"] == sum(1 for _ in model)
    assert info["project"]["name"] == PROJECT


def test_large_files_name_the_project_without_counting(
    house: tuple[Path, ifcopenshell.file], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = house
    monkeypatch.setattr(ifc, "SUMMARY_COUNT_LIMIT", 100)

    info = read_file_info(path)

    assert info["elementCounts"] is None
    assert "full" in info["note"]
    assert info["project"]["name"] == PROJECT


def test_truncated_model_is_corrupt(house: tuple[Path, ifcopenshell.file], tmp_path: Path) -> None:
    path, _ = house
    cut = tmp_path / "cut.ifc"
    cut.write_bytes(path.read_bytes()[:-200])

    with pytest.raises(FileInfoError) as caught:
        read_file_info(cut)

    assert caught.value.code == "corrupt_file"
    assert "truncated" in caught.value.message


@pytest.mark.parametrize(
    ("content", "hint"),
    [
        (b"PK\x03\x04\x14\x00zipped", "unzip"),
        (b'<?xml version="1.0"?><ifcXML/>', "XML"),
        (b"hello world", "ISO-10303-21"),
        (b"", "ISO-10303-21"),
        (
            b"ISO-10303-21;\nHEADER;\nFILE_NAME(((;\nENDSEC;\nDATA;\nENDSEC;\nEND-ISO-10303-21;\n",
            "FILE_SCHEMA",
        ),
        (b"ISO-10303-21;\nDATA;\nENDSEC;\nEND-ISO-10303-21;\n", "HEADER"),
    ],
    ids=["zip", "xml", "text", "empty", "bad-header", "no-header"],
)
def test_files_that_are_not_ifc_spf_are_corrupt_with_a_hint(
    tmp_path: Path, content: bytes, hint: str
) -> None:
    path = tmp_path / "model.ifc"
    path.write_bytes(content)

    for detail in ("summary", "full"):
        with pytest.raises(FileInfoError) as caught:
            read_file_info(path, detail)  # type: ignore[arg-type]
        assert caught.value.code == "corrupt_file"
        assert hint in caught.value.message
