"""DWG drawings in the DXF host (in process): opened through the converter, saved as DXF beside the
.dwg, refused clearly when damaged, old or when no converter is installed."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import ezdxf
import pytest
from dwg_helpers import counts, require_reader, write_pair, write_text_kinds, write_texts
from dxf_helpers import text_of
from mcp import Client

from cadmcp.fileinfo import read_file_info
from cadmcp.hosts.dxf import create_server
from cadmcp.hosts.dxf.dwg import READER_ENV, close_workers, dwg_release

pytestmark = pytest.mark.anyio


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = require_reader()
    monkeypatch.setenv(READER_ENV, str(folder))
    return folder


@pytest.fixture(scope="module", autouse=True)
def stop_converters() -> object:
    yield None
    close_workers()  # the worker processes these tests started


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_dwg_opens_with_its_release_and_reader_and_saves_as_dxf_beside_it(
    reader: Path, tmp_path: Path
) -> None:
    dwg, twin = write_pair(tmp_path)
    original = digest(dwg)
    async with Client(create_server([str(dwg)], exec_timeout=30).server) as client:
        context = (await client.read_resource("dxf://model/context")).contents[0]
        import json

        state = json.loads(context.text)
        assert state["title"] == "plan.dwg" and state["path"] == str(dwg.resolve())
        source = state["source"]
        assert source["release"] == "R2000" and source["version"] == "AC1015"
        assert source["reader"].startswith("LibreDWG") and source["not_carried_over"] == []
        warnings = json.loads((await client.read_resource("dxf://model/warnings")).contents[0].text)
        assert warnings["dwg"]["release"] == "R2000" and warnings["dwg"]["entities_not_carried_over"] == 0

        edit = await client.call_tool(
            "execute_python_code",
            {
                "code": "msp.add_line((0, 0), (5, 5), dxfattribs={'layer': 'WALLS'})",
                "description": "Diagonal",
            },
        )
        assert not edit.is_error, text_of(edit)
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, text_of(saved)
        beside = tmp_path / "plan.dxf"
        assert saved.structured_content["path"] == str(beside.resolve())
        message = saved.structured_content["message"]
        assert "plan.dwg was not overwritten" in message and "no DWG writer" in message
        assert digest(dwg) == original  # the DWG is untouched
        expected = counts(ezdxf.readfile(twin))
        expected["model"]["LINE"] += 1
        assert counts(ezdxf.readfile(beside)) == expected

        again = await client.call_tool("save_document", {})  # later saves go to the .dxf
        assert not again.is_error and again.structured_content["path"] == str(beside.resolve())
        assert "not overwritten" not in again.structured_content["message"]
        listed = (await client.call_tool("list_documents", {})).structured_content
        assert listed["active"] == "plan.dxf"


async def test_an_existing_dxf_beside_the_dwg_is_not_replaced_unless_named(
    reader: Path, tmp_path: Path
) -> None:
    dwg, _ = write_pair(tmp_path)
    beside = tmp_path / "plan.dxf"
    beside.write_text("mine")
    async with Client(create_server([str(dwg)], exec_timeout=30).server) as client:
        refused = await client.call_tool("save_document", {})
        assert refused.is_error and "plan.dxf already exists" in text_of(refused)
        assert "filePath" in text_of(refused) and beside.read_text() == "mine"
        named = await client.call_tool("save_document", {"filePath": str(beside)})
        assert not named.is_error and ezdxf.readfile(beside).modelspace()


async def test_open_document_takes_a_dwg_and_says_what_it_read(reader: Path, tmp_path: Path) -> None:
    dwg, _ = write_pair(tmp_path)
    async with Client(create_server(exec_timeout=30).server) as client:
        opened = await client.call_tool("open_document", {"filePath": str(dwg)})
        assert not opened.is_error, text_of(opened)
        message = opened.structured_content["message"]
        assert "DWG R2000 (AC1015) read by LibreDWG" in message and "10 modelspace entities" in message
        assert "Everything the reader found in the DWG was carried over" in message


def damaged(dwg: Path) -> bytes:
    """The generated DWG with its body overwritten past the header: sections point at garbage."""
    data = bytearray(dwg.read_bytes())
    for i in range(0x40, len(data), 7):
        data[i] = (data[i] * 31 + 17) & 0xFF
    return bytes(data)


def map_zeroed(dwg: Path) -> bytes:
    """The generated DWG with its object map (handles section) zeroed: LibreDWG then reads it as
    holding nothing at all, as it reads an R2007 drawing cut short."""
    data = bytearray(dwg.read_bytes())
    (count,) = struct.unpack_from("<I", data, 0x15)
    _, seeker, size = next(
        loc for loc in (struct.unpack_from("<BII", data, 0x19 + 9 * i) for i in range(count)) if loc[0] == 2
    )
    data[seeker : seeker + size] = bytes(size)
    return bytes(data)


def map_checksum_broken(dwg: Path) -> bytes:
    """The generated DWG with the last byte of its object map flipped: LibreDWG reads every object,
    but flags that a section checksum did not match."""
    data = bytearray(dwg.read_bytes())
    (count,) = struct.unpack_from("<I", data, 0x15)
    _, seeker, size = next(
        loc for loc in (struct.unpack_from("<BII", data, 0x19 + 9 * i) for i in range(count)) if loc[0] == 2
    )
    data[seeker + size - 1] ^= 0xFF
    return bytes(data)


async def test_a_dwg_the_reader_flags_as_damaged_opens_with_a_warning(reader: Path, tmp_path: Path) -> None:
    """A DWG with a checksum mismatch opened with "Everything the reader found in the DWG was carried
    over" and no warning; what LibreDWG flagged was only in dxf://model/context's reader_notes."""
    dwg, twin = write_pair(tmp_path)
    flagged = tmp_path / "flagged.dwg"
    flagged.write_bytes(map_checksum_broken(dwg))
    async with Client(create_server(exec_timeout=30).server) as client:
        opened = await client.call_tool("open_document", {"filePath": str(flagged)})
        assert not opened.is_error, text_of(opened)
        message = opened.structured_content["message"]
        assert "The DWG reader flagged the file while reading it: a section checksum did not match" in message
        assert "AUDIT, or RECOVER" in message, message
        fine = await client.call_tool("open_document", {"filePath": str(dwg)})
        assert "flagged" not in fine.structured_content["message"]
    server = create_server([str(flagged)], exec_timeout=30)
    async with Client(server.server) as client:
        assert not (await client.call_tool("list_documents", {})).is_error
        (asked,) = server.adapter.requested()  # what launch_host answers for the file
        assert any("a section checksum did not match" in w for w in asked["warnings"]), asked
        read = server.adapter.documents_set.active.doc
        assert counts(read)["model"] == counts(ezdxf.readfile(twin))["model"]  # read whole all the same


@pytest.mark.parametrize(
    ("name", "make", "expected"),
    [
        ("damaged.dwg", damaged, ["R2000", "damaged", "RECOVER"]),
        ("nothing.dwg", map_zeroed, ["R2000", "found nothing in it, not even the tables", "cut short"]),
        ("cut.dwg", lambda dwg: dwg.read_bytes()[:200], ["R2000", "cut short: it is 200 bytes", "not read"]),
        ("disguised.dxf", damaged, ["R2000", "damaged"]),
        ("newer.dwg", lambda dwg: b"AC1036" + dwg.read_bytes()[6:], ["AC1036", "newer AutoCAD", "as DXF"]),
        ("newer.dxf", lambda dwg: b"AC1036" + dwg.read_bytes()[6:], ["release this reader does not know"]),
        (
            "old.dwg",
            lambda dwg: b"AC1009" + bytes(range(256)) * 4,
            ["R11/R12", "before R13", "Convert it to DXF"],
        ),
    ],
)
async def test_bad_and_old_dwg_files_are_refused_naming_the_release(
    reader: Path, tmp_path: Path, name: str, make: object, expected: list[str]
) -> None:
    dwg, _ = write_pair(tmp_path)
    bad = tmp_path / name
    bad.write_bytes(make(dwg))  # type: ignore[operator]
    async with Client(create_server(exec_timeout=30).server) as client:
        result = await client.call_tool("open_document", {"filePath": str(bad)})
        assert result.is_error
        text = text_of(result)
        assert all(part in text for part in expected), text
        assert "Traceback" not in text
        fine = await client.call_tool("open_document", {"filePath": str(dwg)})  # the converter recovered
        assert not fine.is_error, text_of(fine)


async def test_opening_a_dwg_cut_short_says_so_as_read_file_info_does(reader: Path, tmp_path: Path) -> None:
    """open_document in a running host said only that the file "may be damaged or cut short", where
    read_file_info and launch_host named both lengths."""
    from cadmcp.fileinfo import FileInfoError

    dwg, _ = write_pair(tmp_path)
    cut = tmp_path / "cut.dwg"
    cut.write_bytes(dwg.read_bytes()[: len(dwg.read_bytes()) // 2])
    with pytest.raises(FileInfoError) as info:
        read_file_info(cut)
    async with Client(create_server([str(dwg)], exec_timeout=30).server) as client:
        result = await client.call_tool("open_document", {"filePath": str(cut)})
        assert result.is_error
        said = text_of(result)
        assert info.value.message in said and "cut short: it is" in said, said
        assert "may be damaged or cut short" not in said, said


async def test_without_the_converter_a_dwg_says_what_to_install_and_file_info_still_works(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dwg, _ = write_pair(tmp_path)
    monkeypatch.setenv(READER_ENV, str(tmp_path / "no-reader"))
    async with Client(create_server(exec_timeout=30).server) as client:
        result = await client.call_tool("open_document", {"filePath": str(dwg)})
        assert result.is_error
        text = text_of(result)
        assert "No DWG reader is installed" in text and "npm install --prefix" in text
        assert "@mlightcad/libredwg-web@" in text and "convert the drawing to DXF" in text
    info = read_file_info(dwg)  # a header read: no converter involved
    assert info["format"] == "dwg" and "R2000" in str(info)


def test_every_dwg_release_header_is_named() -> None:
    assert dwg_release(b"AC1032\x00") == ("AC1032", "R2018")
    assert dwg_release(b"AC1012") == ("AC1012", "R13")
    assert dwg_release(b"AC1009") == ("AC1009", "R11/R12")
    assert dwg_release(b"AC2.10") == ("AC2.10", "R2.10")
    assert dwg_release(b"0\nSECTION") is None


def test_a_dwg_whose_dxf_carries_none_of_its_entities_is_refused_not_opened_empty(
    reader: Path, tmp_path: Path
) -> None:
    """LibreDWG's DXF of an R11 drawing (ACEB10.dwg of its test data: 1,593 entities) ended blocks
    where none began; ezdxf kept nothing, and the drawing opened empty with `opened: true`, to be
    worked on and saved over. Here the converter reads a generated drawing, and the DXF it wrote is
    read as holding nothing (as ezdxf read that one); the second reader's, too."""
    from cadmcp.hosts.dxf.documents import load_drawing
    from cadmcp.hosts.dxf.dwg import DwgError, read_dwg

    dwg, twin = write_pair(tmp_path)

    def nothing(dxf: Path) -> tuple[object, object]:
        doc = ezdxf.new(dxfversion="R2000")
        return doc, doc.audit()

    with pytest.raises(DwgError) as caught:
        read_dwg(dwg, nothing)
    said = str(caught.value)
    assert "the DWG reader read it, but what it made of it is not a usable drawing" in said, said
    assert "none of the" in said and "entities the reader counted came over" in said, said
    doc, _, source = read_dwg(dwg, lambda dxf: load_drawing(str(dxf))[:2])  # read as the host reads it
    assert counts(doc)["model"] == counts(ezdxf.readfile(twin))["model"] and source.lost == []


def test_the_second_reader_carries_a_drawing_and_says_it_read_it(tmp_path: Path) -> None:
    """pycadkit reads the R13+ drawings LibreDWG cannot; here it reads a generated one by itself."""
    from cadmcp.hosts.dxf import dwg_cadkit
    from cadmcp.hosts.dxf.documents import load_drawing
    from cadmcp.hosts.dxf.dwg import DwgError, _second_reader

    if not dwg_cadkit.available():
        pytest.skip("pycadkit is not installed (pip install 'cadmcp[dwg]')")
    dwg, twin = write_pair(tmp_path)
    refusal = DwgError(
        f"{dwg.name} ... could not read (it stopped on damaged or unsupported data). Open ...",
        "x",
        "it stopped on damaged or unsupported data",
    )
    doc, _, source = _second_reader(
        dwg, "AC1015", "R2000", lambda dxf: load_drawing(str(dxf))[:2], refusal, tmp_path
    )
    assert source.reader.startswith("pycadkit") and "LibreDWG could not read it" in source.reader
    assert source.read_notes == ["LibreDWG: it stopped on damaged or unsupported data"]
    said = source.notes()  # the open answer names the second reader, and the version it saves in
    assert any(n.startswith("Read by pycadkit") and "LibreDWG could not read it" in n for n in said), said
    if doc.dxfversion != "AC1015":
        assert source.as_json()["heldAs"] == doc.dxfversion
        assert any("held as a DXF" in n and "(the DWG is R2000, AC1015)" in n for n in said), said
    assert source.warning == ""
    _, _, after_nothing = _second_reader(  # LibreDWG read nothing at all: as it reads an R2007 cut short
        dwg, "AC1015", "R2000", lambda dxf: load_drawing(str(dxf))[:2], refusal, tmp_path, nothing_read=True
    )
    assert after_nothing.warning.startswith(
        f"LibreDWG found nothing in '{dwg.name}', as it reads a drawing cut"
    )
    assert counts(doc)["model"] == counts(ezdxf.readfile(twin))["model"] and source.lost == []
    (tmp_path / "bad.dwg").write_bytes(damaged(dwg))
    with pytest.raises(DwgError) as caught:  # damage pycadkit reads past is still a refusal
        _second_reader(tmp_path / "bad.dwg", "AC1015", "R2000", load_drawing, refusal, tmp_path)
    assert caught.value is refusal


async def test_saving_names_what_the_dxf_version_cannot_hold(reader: Path, tmp_path: Path) -> None:
    dwg, _ = write_pair(tmp_path)
    async with Client(create_server([str(dwg)], exec_timeout=30).server) as client:
        added = await client.call_tool(
            "execute_python_code", {"code": "msp.new_entity('LIGHT', {}).dxftype()", "description": "Light"}
        )
        assert not added.is_error, text_of(added)
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, text_of(saved)
        assert "Not written: 1 LIGHT" in saved.structured_content["message"]
        assert "AC1015" in saved.structured_content["message"]
    assert "LIGHT" not in {e.dxftype() for e in ezdxf.readfile(tmp_path / "plan.dxf").modelspace()}


def test_a_converted_drawing_decodes_unicode_escapes_as_a_saved_and_reopened_one_does(tmp_path: Path) -> None:
    """LibreDWG writes characters outside the code page as \\U+XXXX (TS1.dwg's diameter sign): the
    live drawing reads them as the characters, as the same drawing does once saved and reopened."""
    from cadmcp.hosts.dxf.documents import load_converted, load_drawing

    doc = ezdxf.new("R2000")
    doc.modelspace().add_mtext("\\A1;\u22052.3794 \u00b0 plain")
    doc.modelspace().add_text("\u2300 50")
    path = tmp_path / "converted.dxf"
    doc.saveas(path)
    assert b"\\U+2205" in path.read_bytes()
    converted, _ = load_converted(path)
    reopened, _, _ = load_drawing(str(path))
    texts = [e.dxf.text if e.dxftype() == "TEXT" else e.text for e in converted.modelspace()]
    assert texts == ["\\A1;\u22052.3794 \u00b0 plain", "\u2300 50"]
    assert texts == [e.dxf.text if e.dxftype() == "TEXT" else e.text for e in reopened.modelspace()]


def test_queueing_a_dwg_starts_the_converter_before_the_drawing_is_read(reader: Path, tmp_path: Path) -> None:
    import time

    from cadmcp.hosts.dxf import dwg
    from cadmcp.hosts.dxf.documents import DocumentSet

    dwg_path, twin = write_pair(tmp_path)
    close_workers()
    documents = DocumentSet()
    documents.open_later(str(dwg_path))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(w._proc for w in dwg._workers.values()):
        time.sleep(0.05)
    (worker,) = dwg._workers.values()
    started = worker._proc
    assert started is not None and started.poll() is None  # running, nothing read yet
    assert documents.requested == []
    assert counts(documents.active.doc)["model"] == counts(ezdxf.readfile(twin))["model"]
    assert worker._proc is started  # the drawing was read by the converter started in advance


def test_what_a_drawing_reads_does_not_depend_on_the_drawings_read_before_it(
    reader: Path, tmp_path: Path
) -> None:
    """The converter stays up for the next drawing, and LibreDWG's DXF writer reads past the end of a
    text holding a line break into memory an earlier conversion left: the same DWG opened again in a
    host that had converted another drawing came out with stray characters after such texts (a
    TOLERANCE of LibreDWG's example_2000.dwg read '...^J10' first, then '...^J101', '...^J10M')."""
    from cadmcp.hosts.dxf.documents import DocumentSet

    short = [f"{'x' * n}\n{'y' * (n % 7)}" for n in range(1, 60)]
    write_texts(tmp_path / "short.dwg", short)
    write_texts(tmp_path / "long.dwg", [("Q" * (n % 40) + "\n") * 3 + "Z" * (n % 70) for n in range(2000)])
    (tmp_path / "short-again.dwg").write_bytes((tmp_path / "short.dwg").read_bytes())

    def texts(name: str) -> list[str]:
        doc = DocumentSet().open(str(tmp_path / name)).doc
        return [e.dxf.text for e in doc.modelspace().query("TEXT")]

    first = texts("short.dwg")
    texts("long.dwg")
    assert texts("short-again.dwg") == first


async def test_texts_with_line_breaks_read_as_the_dwg_holds_them_and_the_mending_is_said(
    reader: Path, tmp_path: Path
) -> None:
    """LibreDWG's DXF writer added stray characters after some texts holding a line break, even in a
    fresh instance ('xx^JyyNTRO', 'aa^JbbQEND': 24 of the 152 texts here), and garbled a line-broken
    text's characters outside ASCII ('Caf\u00e9 \u00fc' lost): nothing flagged it, so the agent read,
    and a save wrote, the corrupted text. Every text now equals the DWG's, a line break in caret
    notation as DXF writes it, and the open answer says how many were set from the DWG."""
    from cadmcp.hosts.dxf.documents import DocumentSet

    written = write_text_kinds(tmp_path / "texts.dwg")
    expected = {
        kind: [value.replace("\n", "^J").replace("\\U+2205", "\u2205") for value in values]
        for kind, values in written.items()
    }
    doc = DocumentSet().open(str(tmp_path / "texts.dwg")).doc
    msp = doc.modelspace()
    read = {
        "TEXT": [e.dxf.text for e in msp.query("TEXT")],
        "MTEXT": [e.text for e in msp.query("MTEXT")],
        "ATTRIB": [a.dxf.text for e in msp.query("INSERT") for a in e.attribs],
        "ATTDEF": [e.dxf.text for e in doc.blocks["TAGGED"].query("ATTDEF")],
        "DIMENSION": [e.dxf.text for e in msp.query("DIMENSION")],
    }
    assert read == expected

    async with Client(create_server(exec_timeout=30).server) as client:
        opened = await client.call_tool("open_document", {"filePath": str(tmp_path / "texts.dwg")})
        assert not opened.is_error, text_of(opened)
        message = opened.structured_content["message"]
        state = json.loads((await client.read_resource("dxf://model/context")).contents[0].text)
    checked = state["source"]["texts"]
    assert checked["checked"] >= sum(len(values) for values in written.values()), checked  # + the dim's block
    assert checked["unchecked"] == []
    if checked["mended"]:  # this LibreDWG build's writer garbles some of them
        count = sum(checked["mended"].values())
        assert f"{count} text(s) (" in message and "were set to the DWG's own text" in message, message


def test_texts_the_reader_could_not_give_are_named_as_unchecked() -> None:
    from cadmcp.hosts.dxf.dwg_texts import dxf_form, mend_texts

    doc = ezdxf.new("R2000")
    text = doc.modelspace().add_text("a^Jbgarbage")
    check = mend_texts(doc, [[text.dxf.handle, "TEXT", "a\nb", 0]], [["2F", "MTEXT"], ["30", "TOLERANCE"]])
    assert text.dxf.text == "a^Jb" and check.mended == {"TEXT": 1} and check.checked == 1
    (mended, unchecked) = check.notes()
    assert mended.startswith("1 text(s) (1 TEXT) came out of the reader's DXF unlike the DWG")
    assert unchecked.startswith("The text of 2 entities could not be read from the DWG to check it (MTEXT 2F")
    assert dxf_form("\tx\r\n\x01\\U+00e9") == "\tx^M^J^A\u00e9"


async def test_a_dwg_named_dxf_is_said_to_be_one_and_never_written_over(reader: Path, tmp_path: Path) -> None:
    """A DWG named .dxf opened without a word, and saving it said to name "that .dxf" beside it,
    which was the DWG itself: following the advice wrote DXF over the user's DWG."""
    dwg, _ = write_pair(tmp_path)
    named = tmp_path / "named.dxf"
    named.write_bytes(dwg.read_bytes())
    original = digest(named)
    server = create_server([str(named)], exec_timeout=30)
    async with Client(server.server) as client:
        assert not (await client.call_tool("list_documents", {})).is_error  # the file is read
        (asked,) = server.adapter.requested()  # what launch_host answers for the file
        assert asked["opened"] and any("holds a DWG drawing" in w for w in asked["warnings"]), asked
        refused = await client.call_tool("save_document", {"filePath": str(named)})
        assert refused.is_error and "never written over" in text_of(refused), text_of(refused)
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, text_of(saved)
        assert saved.structured_content["path"] == str((tmp_path / "named.converted.dxf").resolve())
        as_dwg = await client.call_tool("save_document", {"filePath": str(tmp_path / "out.dwg")})
        assert as_dwg.is_error and "writes .dxf files only" in text_of(as_dwg), text_of(as_dwg)
    assert digest(named) == original
    assert ezdxf.readfile(tmp_path / "named.converted.dxf").modelspace()


def test_proxy_entities_with_nothing_to_draw_are_said() -> None:
    """2 of the 25 proxy entities of LibreDWG's 2013/gh109_1.dwg hold an 8-byte proxy graphic (its
    size, and zero primitives): the open answer called all of them carried "their graphics only",
    and only a picture showed that nothing draws those two."""
    import struct

    from cadmcp.hosts.dxf.dwg import DwgSource, _without_graphics

    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    for graphics in (struct.pack("<2L", 8, 0), struct.pack("<2L", 8, 0), b"\x28" + bytes(39)):
        msp.new_entity("ACAD_PROXY_ENTITY", {}).proxy_graphic = graphics
    empty = _without_graphics(doc)
    assert empty == 2
    source = DwgSource(
        Path("plan.dwg"),
        "AC1027",
        "R2013",
        "reader",
        as_proxies={"TCH_WALL": 3},
        proxies_without_graphics=empty,
    )
    assert source.notes()[-1].endswith("3 TCH_WALL. 2 of them have no graphics at all: nothing shows them.")
    assert source.as_json()["proxies_without_graphics"] == 2
