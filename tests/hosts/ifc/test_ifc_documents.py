"""open/list/activate/save documents and per-document history, with real files."""

from __future__ import annotations

import shutil
from pathlib import Path

import ifcopenshell
import pytest
from ifc_helpers import ADD_WALL, counts, read_json, run, text
from mcp import Client
from tests.hosts.builtins.builtins_helpers import BUILTIN_TOOLS

from cadmcp.hosts.ifc import HOST_APP, HOST_VERSION, create_server

pytestmark = pytest.mark.anyio


async def test_catalog_has_exactly_the_builtin_tools_and_resources(client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == BUILTIN_TOOLS
    code_arguments = {"code", "description", "dryRun", "previewed"}
    assert set(tools["execute_python_code"].input_schema["properties"]) == code_arguments
    assert tools["execute_python_code"].input_schema["required"] == ["code"]
    assert set(tools["open_document"].input_schema["properties"]) == {"filePath"}
    assert set(tools["activate_document"].input_schema["properties"]) == {"document"}
    assert set(tools["save_document"].input_schema["properties"]) == {"filePath"}
    assert set(tools["navigate_history"].input_schema["properties"]) == {"direction", "steps"}
    screenshot_arguments = {"width", "height", "view", "storey", "extents", "complete", "mark"}
    assert set(tools["view_screenshot"].input_schema["properties"]) == screenshot_arguments
    assert all(len(t.description or "") > 40 for t in tools.values())
    resources = {str(r.uri) for r in (await client.list_resources()).resources}
    assert resources == {
        "ifc://python-cheatsheet",
        "ifc://version",
        "ifc://model/context",
        "ifc://model/warnings",
        "ifc://model/history",
        "ifc://schedules",
    }
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {"ifc://element/{elementId}", "ifc://schedule/{scheduleId}/preview"}


async def test_version_resource_names_adapter_and_library(client) -> None:
    version = await read_json(client, "ifc://version")
    assert version["host"] == HOST_APP == "IFC"
    assert version["adapter"] == HOST_VERSION
    assert version["ifcopenshell"] == ifcopenshell.version


async def test_no_paths_gives_a_usable_empty_project() -> None:
    async with Client(create_server().server) as client:
        listing = (await client.call_tool("list_documents", {})).structured_content
        assert listing["active"] == "Untitled.ifc"
        assert listing["documents"][0]["path"] is None
        context = await read_json(client, "ifc://model/context")
        assert context["schema"] == "IFC4" and context["storeys"][0]["name"] == "Level 0"
        assert not (await run(client, ADD_WALL)).is_error
        assert (await counts(client)) == {"IfcWall": 1}
        result = await client.call_tool("save_document", {})
        assert result.is_error and "filePath" in text(result)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("model.rvt", b"\xd0\xcf\x11\xe0", "Revit"),
        ("plan.dwg", b"AC1032", "AutoCAD"),
        ("notes.ifc", b"just some text\n", "not an IFC-SPF file"),
        ("notes.txt", b"ISO-10303-21;", "not an .ifc file"),
        ("broken.ifc", b"ISO-10303-21;\nHEADER;\nthis is damaged", "could not parse"),
    ],
)
async def test_wrong_or_damaged_files_are_refused_clearly(
    client, tmp_path: Path, name, content, expected
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = await client.call_tool("open_document", {"filePath": str(path)})
    assert result.is_error
    assert expected in text(result)
    assert "Traceback" not in text(result)


async def test_a_model_cut_short_near_its_end_says_so(client, house: Path, tmp_path: Path) -> None:
    """A model cut inside a list of its last instance (the Duplex model less its last 40 bytes ends in
    "(#") was refused as "Syntax error during parse, check logs": no log says more, while
    read_file_info knew it was cut short."""
    cut = tmp_path / "cut.ifc"
    data = house.read_bytes()
    cut.write_bytes(data[: data.rindex(b"(#") + 2])
    result = await client.call_tool("open_document", {"filePath": str(cut)})
    said = text(result)
    assert result.is_error and "ends without END-ISO-10303-21: the file looks cut short" in said, said
    assert "check logs" not in text(result)


async def test_missing_file_and_folder_are_refused(client, tmp_path: Path) -> None:
    missing = await client.call_tool("open_document", {"filePath": str(tmp_path / "nope.ifc")})
    assert missing.is_error and "File not found" in text(missing)
    folder = await client.call_tool("open_document", {"filePath": str(tmp_path)})
    assert folder.is_error and "folder" in text(folder)


async def test_unreadable_file_is_refused(client, house: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked.ifc"
    shutil.copyfile(house, locked)
    locked.chmod(0)
    try:
        if locked.open("rb"):  # running as root: permissions are not enforced
            pytest.skip("file permissions are not enforced for this user")
    except PermissionError:
        pass
    result = await client.call_tool("open_document", {"filePath": str(locked)})
    assert result.is_error and "Cannot read" in text(result)


async def test_several_documents_with_one_active_and_separate_histories(
    client, house: Path, tmp_path
) -> None:
    second = tmp_path / "second.ifc"
    shutil.copyfile(house, second)
    await run(client, "model.by_type('IfcWall')[0].Name = 'edited in house'", description="edit house")
    opened = await client.call_tool("open_document", {"filePath": str(second)})
    assert opened.structured_content == {
        "success": True,
        "message": opened.structured_content["message"],
        "documentTitle": "second.ifc",
    }
    listing = (await client.call_tool("list_documents", {})).structured_content
    assert listing["active"] == "second.ifc"
    assert [(d["title"], d["active"], d["modified"]) for d in listing["documents"]] == [
        ("house.ifc", False, True),
        ("second.ifc", True, False),
    ]
    empty = (await client.call_tool("navigate_history", {"direction": "back"})).structured_content
    assert empty["navigated"] == 0 and empty["message"].startswith("Nothing to undo")

    activated = await client.call_tool("activate_document", {"document": "house.ifc"})
    assert activated.structured_content["documentTitle"] == "house.ifc"
    undone = (await client.call_tool("navigate_history", {"direction": "back"})).structured_content
    assert undone["operations"] == ["edit house"]
    listing = (await client.call_tool("list_documents", {})).structured_content
    assert listing["documents"][0]["modified"] is False

    by_path = await client.call_tool("activate_document", {"document": str(second)})
    assert by_path.structured_content["documentTitle"] == "second.ifc"
    unknown = await client.call_tool("activate_document", {"document": "garage.ifc"})
    assert unknown.is_error and "house.ifc" in text(unknown) and "second.ifc" in text(unknown)


async def test_opening_an_open_file_again_activates_it(client, house: Path) -> None:
    again = await client.call_tool("open_document", {"filePath": str(house)})
    assert "Already open" in again.structured_content["message"]
    listing = (await client.call_tool("list_documents", {})).structured_content
    assert len(listing["documents"]) == 1


async def test_save_and_save_as_write_real_ifc(client, house: Path, tmp_path: Path) -> None:
    await run(client, ADD_WALL, description="add wall")
    saved = (await client.call_tool("save_document", {})).structured_content
    assert saved["success"] and saved["path"] == str(house.resolve())
    assert len(ifcopenshell.open(str(house)).by_type("IfcWall")) == 11

    copy = tmp_path / "copy.ifc"
    result = (await client.call_tool("save_document", {"filePath": str(copy)})).structured_content
    assert result["path"] == str(copy.resolve())
    listing = (await client.call_tool("list_documents", {})).structured_content
    assert listing["active"] == "copy.ifc" and listing["documents"][0]["modified"] is False

    bad = await client.call_tool("save_document", {"filePath": str(tmp_path / "copy.dwg")})
    assert bad.is_error and ".ifc" in text(bad)
    nowhere = await client.call_tool("save_document", {"filePath": str(tmp_path / "no" / "such" / "x.ifc")})
    assert nowhere.is_error and "does not exist" in text(nowhere)


async def test_history_is_bounded_and_validated(client) -> None:
    for n in range(3):
        await run(client, f"model.by_type('IfcWall')[0].Name = 'n{n}'", description=f"step {n}")
    back = (await client.call_tool("navigate_history", {"direction": "back", "steps": 10})).structured_content
    assert back["navigated"] == 3 and back["operations"] == ["step 2", "step 1", "step 0"]
    assert back["back_remaining"] == 0 and back["forward_available"] == 3
    forward = (
        await client.call_tool("navigate_history", {"direction": "forward", "steps": 2})
    ).structured_content
    assert forward["operations"] == ["step 0", "step 1"] and forward["forward_available"] == 1
    names = await run(client, "model.by_type('IfcWall')[0].Name")
    assert "'n1'" in text(names)
    bad = await client.call_tool("navigate_history", {"direction": "back", "steps": 0})
    assert bad.is_error
    nothing = (
        await client.call_tool("navigate_history", {"direction": "forward", "steps": 5})
    ).structured_content
    assert nothing["navigated"] == 1
    again = (await client.call_tool("navigate_history", {"direction": "forward"})).structured_content
    assert again["navigated"] == 0 and again["message"].startswith("Nothing to redo")


async def test_a_damaged_start_up_file_is_reported_on_first_use(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ifc"
    broken.write_text("ISO-10303-21;\nHEADER;\nthis is damaged\n")
    async with Client(create_server([str(broken)]).server) as client:
        first = await client.call_tool("list_documents", {})
        assert first.is_error and "could not parse" in text(first)
        then = await client.call_tool("execute_python_code", {"code": "1"})
        assert then.is_error and "open_document" in text(then)


@pytest.mark.parametrize("schema", ["IFC2X3", "IFC4", "IFC4X3_ADD2"])
def test_a_steps_changes_are_named_in_every_schema_ifcopenshell_reads(schema: str) -> None:
    """An IFC4X3 file's ``schema`` is "IFC4X3", which names no IfcOpenShell schema: every script
    that changed such a model ended "its changes could not be recorded" and was rolled back."""
    import ifcopenshell.guid

    from cadmcp.hosts.ifc.documents import changes_of

    model = ifcopenshell.file(schema=schema)
    wall = model.createIfcWall(ifcopenshell.guid.new(), Name="Old")
    model.begin_transaction()
    transaction = model.transaction
    new = model.createIfcWall(ifcopenshell.guid.new(), Name="New")
    wall.Name = "Renamed"
    model.createIfcCartesianPoint((1.0, 2.0, 3.0))  # not a product: not named
    model.end_transaction()
    changes = changes_of(model, transaction)
    assert changes.created == (str(new.id()),) and changes.modified == (str(wall.id()),)


def _with_a_class_its_schema_lacks(folder: Path) -> Path:
    """An IFC4X3_ADD2 model whose two beams are written as IFCBEAMSTANDARDCASE, an IFC4 class the
    IFC4X3 schema no longer has (as IfcOpenShell's own beam-standard-case test file has them)."""
    import ifcopenshell.guid

    model = ifcopenshell.file(schema="IFC4X3_ADD2")
    site = model.createIfcSite(ifcopenshell.guid.new(), Name="S")
    beams = [model.createIfcBeam(ifcopenshell.guid.new(), Name=f"B{n}") for n in (1, 2)]
    model.createIfcRelContainedInSpatialStructure(ifcopenshell.guid.new(), None, None, None, beams, site)
    model.createIfcWall(ifcopenshell.guid.new(), Name="Kept")
    path = folder / "beams.ifc"
    model.write(str(path))
    written = path.read_text()
    for beam in beams:
        written = written.replace(f"#{beam.id()}=IFCBEAM(", f"#{beam.id()}=IFCBEAMSTANDARDCASE(")
    path.write_text(written)
    assert written.count("IFCBEAMSTANDARDCASE(") == 2
    return path


async def test_entities_ifcopenshell_leaves_out_are_said_and_the_file_is_not_saved_over(
    tmp_path: Path,
) -> None:
    """IfcOpenShell drops an instance of a class the file's schema lacks without a word: an IFC4X3
    file's 18 IFCBEAMSTANDARDCASE opened as a model with no beam, no warning, and a save in place
    wrote the file without them."""
    from cadmcp.fileinfo import read_file_info

    path = _with_a_class_its_schema_lacks(tmp_path)
    before = path.read_bytes()
    info = read_file_info(str(path), detail="full")  # the counts say what they lack, too
    assert info["leftOut"] == {"IFCBEAMSTANDARDCASE": 2} and "IfcOpenShell leaves out 2" in info["note"]
    async with Client(create_server().server) as client:
        opened = await client.call_tool("open_document", {"filePath": str(path)})
        said = text(opened)
        assert not opened.is_error, said
        assert "IfcOpenShell left out 2 IFCBEAMSTANDARDCASE (not entities of IFC4X3_ADD2)" in said, said
        context = await read_json(client, "ifc://model/context")
        assert any("2 IFCBEAMSTANDARDCASE" in w for w in context["readWarnings"]), context
        await run(client, "model.createIfcWall(ifcopenshell.guid.new(), Name='New')")
        in_place = await client.call_tool("save_document", {})
        assert in_place.is_error and "was read without part of it (2 IFCBEAMSTANDARDCASE" in text(in_place)
        assert path.read_bytes() == before  # nothing was written over it
        elsewhere = tmp_path / "copy.ifc"
        saved = await client.call_tool("save_document", {"filePath": str(elsewhere)})
        assert not saved.is_error and "Not written: 2 IFCBEAMSTANDARDCASE" in text(saved), text(saved)
    assert len(ifcopenshell.open(str(elsewhere)).by_type("IfcWall")) == 2
