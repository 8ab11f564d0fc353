"""Saving a drawing writes the file and leaves the live drawing as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import ezdxf
import pytest
from dxf_helpers import text_of
from ezdxf.lldxf.encoding import decode_dxf_unicode
from mcp import Client

from cadmcp.hosts.dxf import create_server

pytestmark = pytest.mark.anyio

R12_ENTITIES_ONLY = "\n".join(
    [
        *("0", "SECTION", "2", "HEADER", "9", "$ACADVER", "1", "AC1009", "0", "ENDSEC"),
        *("0", "SECTION", "2", "ENTITIES"),
        *("0", "LINE", "8", "WALLS", "10", "0", "20", "0", "11", "500", "21", "0"),
        *("0", "CIRCLE", "8", "0", "10", "250", "20", "250", "40", "100"),
        *("0", "ENDSEC", "0", "EOF", ""),
    ]
)
"""An R12 drawing as small exporters write it: no tables, no APPIDs, no handles."""

FINGERPRINT = """
import hashlib
state = sorted((h, e.dxftype()) for h, e in doc.entitydb.items())
header = sorted((k, str(doc.header.get(k))) for k in doc.header.varnames())
classes = sorted(str(k) for k in doc.classes.classes)
text = repr((state, str(doc.entitydb.handles), header, classes))
len(state), hashlib.sha1(text.encode()).hexdigest()
"""


def r2000_without_save_preparation(path: Path) -> None:
    """An R2000 drawing as another program writes it: without the APPIDs and metadata ezdxf adds."""
    from ezdxf.lldxf.tagwriter import TagWriter

    doc = ezdxf.new("R2000")
    msp = doc.modelspace()
    for i in range(20):
        msp.add_line((i * 10, 0), (i * 10, 50), dxfattribs={"layer": "GRID"})
    for name in ("EZDXF", "HATCHBACKGROUNDCOLOR"):
        if name in doc.appids:
            doc.appids.remove(name)
    doc.rootdict.discard("EZDXF_META")
    with path.open("wt", encoding=doc.output_encoding, errors="dxfreplace") as stream:
        doc.export_sections(TagWriter(stream, dxfversion=doc.dxfversion))


def other_writers_drawing(folder: Path, kind: str) -> Path:
    """``folder/<kind>.dxf`` as another program writes it: ``r12`` (entities only) or ``r2000``;
    any other kind names a path left unwritten."""
    path = folder / f"{kind}.dxf"
    if kind == "r12":
        path.write_text(R12_ENTITIES_ONLY)
    elif kind == "r2000":
        r2000_without_save_preparation(path)
    return path


async def fingerprint(client: Client) -> str:
    result = await client.call_tool("execute_python_code", {"code": FINGERPRINT})
    assert not result.is_error, text_of(result)
    return text_of(result).split("Result:", 1)[1].strip()


@pytest.mark.parametrize("kind", ["r12", "r2000"])
async def test_save_and_save_as_leave_entities_handles_and_header_as_they_were(
    kind: str, tmp_path: Path
) -> None:
    path = other_writers_drawing(tmp_path, kind)
    original = hashlib.sha1(path.read_bytes()).hexdigest()
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        before = await fingerprint(client)
        assert not (await client.call_tool("save_document", {})).is_error
        assert hashlib.sha1(path.read_bytes()).hexdigest() != original  # it did write
        assert await fingerprint(client) == before
        copy = tmp_path / "copy.dxf"
        assert not (await client.call_tool("save_document", {"filePath": str(copy)})).is_error
        assert await fingerprint(client) == before
        history = (await client.call_tool("navigate_history", {"direction": "back"})).structured_content
        assert history["navigated"] == 0  # the save recorded nothing either
    # what was written is complete: the APPIDs and metadata ezdxf wants are in the file
    written = ezdxf.readfile(copy)
    assert "EZDXF" in written.appids
    assert len(written.modelspace()) == (2 if kind == "r12" else 20)


async def test_a_save_from_agent_code_is_undone_with_its_step(tmp_path: Path) -> None:
    path = tmp_path / "drawing.dxf"
    path.write_text(R12_ENTITIES_ONLY)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        code = "doc.modelspace().add_point((1, 1))\ndoc.saveas(r'%s')" % (tmp_path / "inside.dxf")
        result = await client.call_tool("execute_python_code", {"code": code})
        assert not result.is_error and "[UNDO STEP]" in text_of(result)
        await client.call_tool("navigate_history", {"direction": "back"})
        count = await client.call_tool("execute_python_code", {"code": "len(msp), 'EZDXF' in doc.appids"})
        assert "Result: (2, False)" in text_of(count)


def pre_r12_release(path: Path, acadver: str) -> None:
    """An R12 drawing whose header names an earlier release (LibreDWG writes $ACADVER AC2.10 for its
    r2.10 test drawings): a block, an insert of it, lines and a circle."""
    doc = ezdxf.new("R12")
    block = doc.blocks.new("MARK")
    block.add_circle((0, 0), 1)
    msp = doc.modelspace()
    msp.add_line((0, 0), (7, 8))
    msp.add_circle((3, 3), 2)
    msp.add_blockref("MARK", (5, 5))
    text = path.with_suffix(".tmp")
    doc.saveas(text)
    path.write_text(text.read_text().replace("$ACADVER\n  1\nAC1009\n", f"$ACADVER\n  1\n{acadver}\n", 1))
    text.unlink()


@pytest.mark.parametrize("acadver", ["AC2.10", "AC2.22"])
async def test_a_drawing_of_a_release_before_r12_saves_after_a_change_and_its_undo_as_without_them(
    acadver: str, tmp_path: Path
) -> None:
    from cadmcp.corpus.probes import source

    probe: dict[str, object] = {}
    exec(source("dxf"), probe)
    path = tmp_path / "old.dxf"
    pre_r12_release(path, acadver)
    plain, after_undo = tmp_path / "plain.dxf", tmp_path / "after-undo.dxf"
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        assert not (await client.call_tool("save_document", {"filePath": str(plain)})).is_error
        change = source("dxf") + "\nprint(change(doc, msp))\n"
        result = await client.call_tool("execute_python_code", {"code": change})
        assert not result.is_error and "[UNDO STEP]" in text_of(result), text_of(result)
        back = await client.call_tool("navigate_history", {"direction": "back"})
        assert back.structured_content["navigated"] == 1
        assert not (await client.call_tool("save_document", {"filePath": str(after_undo)})).is_error
    dump = probe["dump"]
    assert callable(dump)
    saved = dump(ezdxf.readfile(plain))  # the VPORT record read back without its name: DXFTypeError
    assert saved == dump(ezdxf.readfile(after_undo))
    assert ezdxf.readfile(plain).dxfversion == "AC1009"
    assert saved["summary"]["entities"] == 4


@pytest.mark.parametrize("kind", ["r12", "r2000", "new"])
async def test_a_save_between_a_preview_and_its_approval_leaves_the_previewed_revision(
    kind: str, tmp_path: Path
) -> None:
    """A person who saves while deciding on a preview can still approve it: saving is no change."""
    path = other_writers_drawing(tmp_path, kind)
    code = "msp.add_circle((5, 5), 2, dxfattribs={'layer': 'MARKS'})"
    files = [] if kind == "new" else [str(path)]  # no file: the host starts on a new drawing
    async with Client(create_server(files, exec_timeout=10).server) as client:
        preview = await client.call_tool("execute_python_code", {"code": code, "dryRun": True})
        assert not preview.is_error, text_of(preview)
        previewed = preview.structured_content["applyWith"]["previewed"]
        saved = await client.call_tool("save_document", {"filePath": str(tmp_path / "saved.dxf")})
        assert not saved.is_error, text_of(saved)
        applied = await client.call_tool("execute_python_code", {"code": code, "previewed": previewed})
        assert not applied.is_error, text_of(applied)
        assert "[NOT APPLIED]" not in text_of(applied)
        marks = "len(msp.query('CIRCLE[layer==\"MARKS\"]'))"
        count = await client.call_tool("execute_python_code", {"code": marks})
        assert "Result: 1" in text_of(count)


async def test_saving_units_an_r12_drawing_cannot_hold_says_so(tmp_path: Path) -> None:
    """Setting $INSUNITS on an R12 drawing was an undo step and the model said "Meters", but the save
    said only "Saved": R12 DXF has no units, so the file read back unitless."""
    path = tmp_path / "old.dxf"
    path.write_text(R12_ENTITIES_ONLY)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        plain = await client.call_tool("save_document", {})
        assert "Not written" not in plain.structured_content["message"]
        edit = await client.call_tool("execute_python_code", {"code": "doc.header['$INSUNITS'] = 6"})
        assert not edit.is_error, text_of(edit)
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, text_of(saved)
        said = saved.structured_content["message"]
        assert "Not written: the drawing units ($INSUNITS 6, Meters): DXF R12 has no units" in said, said
        upgraded = await client.call_tool("execute_python_code", {"code": "doc.dxfversion = 'R2000'"})
        assert not upgraded.is_error, text_of(upgraded)
        again = await client.call_tool("save_document", {})
        assert "Not written" not in again.structured_content["message"]
    assert ezdxf.readfile(path).header.get("$INSUNITS") == 6


@pytest.mark.parametrize("acadver", ["AC1006", "AC2.10"])
async def test_a_drawing_of_an_older_release_says_it_is_read_and_saved_as_r12(
    acadver: str, tmp_path: Path
) -> None:
    """ezdxf's AC1003_LINE drawing (R2.6) was listed as R12 and saved in place as R12 without a word."""
    path = tmp_path / "old.dxf"
    pre_r12_release(path, acadver)
    server = create_server([str(path)], exec_timeout=10)
    async with Client(server.server) as client:
        assert not (await client.call_tool("list_documents", {})).is_error
        (asked,) = server.adapter.requested()  # what launch_host answers for the file
        said = f"The file's header says '{acadver}'; ezdxf reads it as AC1009 (R12)"
        assert any(said in w for w in asked.get("warnings", [])), asked
        again = tmp_path / "again.dxf"
        again.write_bytes(path.read_bytes())
        opened = await client.call_tool("open_document", {"filePath": str(again)})
        assert said in text_of(opened), text_of(opened)


async def test_text_a_drawings_code_page_lacks_is_saved_as_autocad_reads_it(tmp_path: Path) -> None:
    """A Chinese R12 drawing (ANSI_936) with attributes edited to "ändern 改": the saved file held
    '\\xe4ndern', which AutoCAD shows as it stands (ezdxf escapes only characters past 255)."""
    path = tmp_path / "chinese.dxf"
    ezdxf.new("R12").saveas(path)
    path.write_bytes(path.read_bytes().replace(b"ANSI_1252", b"ANSI_936"))  # as a Chinese AutoCAD writes it
    assert ezdxf.readfile(path).encoding == "gbk"
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        code = "msp.add_text('ändern 改 Übung')"
        assert not (await client.call_tool("execute_python_code", {"code": code})).is_error
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, text_of(saved)
    raw = path.read_bytes()
    assert b"\\U+00e4ndern" in raw and b"\\xe4" not in raw
    (text,) = [e.dxf.text for e in ezdxf.readfile(path).modelspace().query("TEXT")]
    assert decode_dxf_unicode(text) == "ändern 改 Übung"  # AutoCAD's escapes, as it reads them


async def test_a_drawing_undone_back_to_its_file_is_unmodified(tmp_path: Path) -> None:
    """`./dev demo` undid its own change, and stopping the host still wrote a recovery copy of the
    sample: the drawing stayed 'modified' after any undo."""
    path = tmp_path / "plan.dxf"
    ezdxf.new("R2018").saveas(path)

    async def modified(client: Client) -> bool:
        listed = await client.call_tool("list_documents", {})
        return bool(listed.structured_content["documents"][0]["modified"])

    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        assert not await modified(client)
        await client.call_tool("execute_python_code", {"code": "msp.add_line((0, 0), (1, 1))"})
        assert await modified(client)
        await client.call_tool("navigate_history", {"direction": "back"})
        assert not await modified(client)  # as the file holds it
        await client.call_tool("navigate_history", {"direction": "forward"})
        assert not (await client.call_tool("save_document", {})).is_error
        assert not await modified(client)
        await client.call_tool("navigate_history", {"direction": "back"})
        assert await modified(client)  # the file holds the line now


async def test_saving_names_the_objects_the_dxf_version_cannot_hold(tmp_path: Path) -> None:
    """example_2000.dwg keeps a SUN object (with ACAD xdata); saved as R2000 DXF it was left out and
    the save named only the LIGHT entity: objects were not looked at."""
    path = tmp_path / "lit.dxf"
    ezdxf.new("R2000").saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        added = await client.call_tool("execute_python_code", {"code": "doc.objects.new_entity('SUN', {})"})
        assert not added.is_error, text_of(added)
        saved = await client.call_tool("save_document", {})
        said = saved.structured_content["message"]
        assert "Not written: 1 SUN" in said and "AC1015" in said, said
    assert not ezdxf.readfile(path).objects.query("SUN")
