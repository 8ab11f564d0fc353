"""Text an exporter wrote as raw UTF-8 or Windows-1252 bytes (STEP allows only escapes), and a
byte-order mark before the header: IfcOpenShell dropped the bytes without a word ("Erdgeschoß
Über" read "Erdgescho ber", and a save wrote that back over the file) and refused the mark.
Files are generated here in those shapes (a trial's were third-party models edited so)."""

from __future__ import annotations

import json
from pathlib import Path

import ifcopenshell
import pytest
from mcp import Client
from tests.hosts.ifc.test_ifc_other_writers import _model

from cadmcp.hosts.ifc import create_server, encoding
from cadmcp.hosts.ifc.documents import load_model

pytestmark = pytest.mark.anyio

STOREY, WALL = "Erdgeschoß Über", "Küche café 樓"


def _written(tmp_path: Path, codec: str, bom: bool = False) -> Path:
    """A model whose storey and first wall are named with raw bytes of `codec`."""
    path = tmp_path / f"raw-{codec}.ifc"
    _model("IFC4", path)
    text = path.read_bytes().replace(b"'Level 1'", b"'" + STOREY.encode(codec) + b"'", 1)
    wall = WALL if codec == "utf-8" else "Küche café €"
    text = text.replace(b"'W0'", b"'" + wall.encode(codec) + b"'", 1)
    path.write_bytes((encoding.BOM if bom else b"") + text)
    return path


def test_an_ascii_file_is_read_as_it_is() -> None:
    sample = Path(__file__).resolve().parents[3] / "samples" / "house.ifc"
    assert encoding.scan(sample) is None


@pytest.mark.parametrize("codec", ["utf-8", "cp1252"])
def test_raw_bytes_are_read_in_the_writers_encoding_and_said(tmp_path: Path, codec: str) -> None:
    path = _written(tmp_path, codec)
    assert ifcopenshell.open(str(path)).by_type("IfcBuildingStorey")[0].Name == "Erdgescho ber"  # the trap
    model, warnings, lacking = load_model(path)
    assert model.by_type("IfcBuildingStorey")[0].Name == STOREY and not lacking
    names = {w.Name for w in model.by_type("IfcWall")}
    assert (WALL if codec == "utf-8" else "Küche café €") in names
    named = "UTF-8" if codec == "utf-8" else "Windows-1252"
    assert f"raw {named} bytes" in warnings[0] and f"e.g. '{STOREY}'" in warnings[0], warnings


def test_a_byte_order_mark_is_left_out_and_said(tmp_path: Path) -> None:
    path = _written(tmp_path, "utf-8", bom=True)
    model, warnings, _ = load_model(path)
    assert model.by_type("IfcBuildingStorey")[0].Name == STOREY
    assert "byte-order mark" in warnings[0]


def test_runs_cut_by_the_read_chunks_stay_whole_and_other_planes_escape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plain.ifc"
    path.write_bytes("'ß€樓😀x'".encode())
    whole = encoding.scan(path)
    assert whole is not None and whole.example == "ß€樓😀x"
    monkeypatch.setattr(encoding, "CHUNK", 7)  # every run straddles a chunk
    raw = encoding.scan(path)
    assert raw is not None and raw.codec == "utf-8" and raw.runs == 1
    with encoding.readable(path, raw) as copy:
        assert copy.read_bytes() == b"'\\X2\\00DF20AC6A13\\X0\\\\X4\\0001F600\\X0\\x'"
    assert not copy.exists()


async def test_a_save_over_the_file_keeps_the_text_encoded_as_step_requires(tmp_path: Path) -> None:
    path = _written(tmp_path, "cp1252")
    async with Client(create_server([str(path)], exec_timeout=20).server) as client:
        context = json.loads((await client.read_resource("ifc://model/context")).contents[0].text)
        assert STOREY in json.dumps(context, ensure_ascii=False)
        assert "raw Windows-1252 bytes" in " ".join(context["readWarnings"])
        edit = "model.by_type('IfcDoor')[0].Name = 'Tür 1'"
        assert not (await client.call_tool("execute_python_code", {"code": edit})).is_error
        saved = await client.call_tool("save_document", {})
        assert not saved.is_error, saved.content
    assert max(path.read_bytes()) < 0x80  # STEP-encoded now
    again = ifcopenshell.open(str(path))
    assert again.by_type("IfcBuildingStorey")[0].Name == STOREY
    assert again.by_type("IfcDoor")[0].Name == "Tür 1"
    assert "Küche café €" in {w.Name for w in again.by_type("IfcWall")}


def test_each_run_is_read_in_its_own_encoding_in_a_file_that_mixes_them(tmp_path: Path) -> None:
    """A file whose author a tool wrote in Windows-1252 and whose model text another wrote in UTF-8
    was read whole as Windows-1252: 'ErdgeschoÃŸ Ãœber', and a save wrote that back."""
    path = _written(tmp_path, "utf-8")
    text = path.read_bytes()
    text = text.replace(b"FILE_NAME('", b"FILE_NAME('" + "Jürgen ".encode("cp1252"), 1)
    path.write_bytes(text)
    raw = encoding.scan(path)
    assert raw is not None and raw.codec == "mixed"
    model, warnings, _ = load_model(path)
    assert model.by_type("IfcBuildingStorey")[0].Name == STOREY
    assert WALL in {w.Name for w in model.by_type("IfcWall")}
    assert model.header.file_name.name.startswith("Jürgen ")
    assert "raw UTF-8 and Windows-1252 bytes" in warnings[0], warnings


def test_steps_own_high_half_directive_is_left_as_written(tmp_path: Path) -> None:
    """'\\S\\' followed by a raw byte (STEP's "next character + 128") failed to parse once the byte
    became an escape; IfcOpenShell reads it as it stands."""
    path = tmp_path / "s.ifc"
    path.write_bytes(b"'a\\S\\\xe4b' '\xc3\xa4'")
    raw = encoding.scan(path)
    with encoding.readable(path, raw) as copy:
        assert copy.read_bytes() == b"'a\\S\\\xe4b' '\\X2\\00E4\\X0\\'"
