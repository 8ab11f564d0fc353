"""Documents: open, list, activate, save, and clear errors for bad files."""

from __future__ import annotations

import os
from pathlib import Path

import ezdxf
import pytest
from dxf_helpers import SAMPLE, text_of
from mcp import Client

from cadmcp.hosts.dxf import HOST_APP, HOST_VERSION, create_server
from cadmcp.hosts.dxf.documents import DxfHostError

pytestmark = pytest.mark.anyio


def test_package_exports_host_identity() -> None:
    assert HOST_APP == "DXF"
    assert HOST_VERSION


async def test_new_host_without_paths_has_an_empty_active_document() -> None:
    async with Client(create_server().server) as client:
        listed = (await client.call_tool("list_documents", {})).structured_content
        assert listed["active"].startswith("Untitled")
        assert listed["documents"][0]["path"] is None
        saved = await client.call_tool("save_document", {})
        assert saved.is_error and "filePath" in text_of(saved)


async def test_open_second_document_list_and_activate(client: Client, tmp_path: Path) -> None:
    other = tmp_path / "other.dxf"
    doc = ezdxf.new()
    doc.modelspace().add_line((0, 0), (1, 1))
    doc.saveas(other)
    opened = await client.call_tool("open_document", {"filePath": str(other)})
    assert not opened.is_error
    assert opened.structured_content["success"] and opened.structured_content["documentTitle"] == "other.dxf"
    listed = (await client.call_tool("list_documents", {})).structured_content
    assert [d["title"] for d in listed["documents"]] == ["floorplan.dxf", "other.dxf"]
    assert listed["active"] == "other.dxf"
    switched = await client.call_tool("activate_document", {"document": "floorplan.dxf"})
    assert switched.structured_content["active"] == "floorplan.dxf"
    by_path = await client.call_tool("activate_document", {"document": str(other)})
    assert by_path.structured_content["active"] == "other.dxf"
    unknown = await client.call_tool("activate_document", {"document": "nope.dxf"})
    assert unknown.is_error and "floorplan.dxf" in text_of(unknown) and "other.dxf" in text_of(unknown)


async def test_save_and_save_as_write_readable_files(
    client: Client, sample_path: Path, tmp_path: Path
) -> None:
    await client.call_tool(
        "execute_python_code", {"code": "msp.add_circle((0, 0), 123, dxfattribs={'layer': 'X'})"}
    )
    listed = (await client.call_tool("list_documents", {})).structured_content
    assert listed["documents"][0]["modified"] is True
    saved = await client.call_tool("save_document", {})
    assert not saved.is_error and saved.structured_content["path"] == str(sample_path.resolve())
    assert any(c.dxf.radius == 123 for c in ezdxf.readfile(sample_path).modelspace().query("CIRCLE"))
    target = tmp_path / "copy.dxf"
    saved_as = await client.call_tool("save_document", {"filePath": str(target)})
    assert not saved_as.is_error and target.exists()
    listed = (await client.call_tool("list_documents", {})).structured_content
    assert listed["active"] == "copy.dxf" and listed["documents"][0]["modified"] is False
    bad = await client.call_tool("save_document", {"filePath": str(tmp_path / "missing" / "x.dxf")})
    assert bad.is_error and "does not exist" in text_of(bad)
    wrong = await client.call_tool("save_document", {"filePath": str(tmp_path / "x.dwg")})
    assert wrong.is_error and ".dxf" in text_of(wrong)
    # a relative path was saved in the host's working folder, which nobody chose (and the drawing
    # went on from there): it is refused, as launch_host refuses one
    relative = await client.call_tool("save_document", {"filePath": "rel.dxf"})
    assert relative.is_error and "is relative; pass an absolute path" in text_of(relative)
    assert not Path("rel.dxf").exists()


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("drawing.dwg", b"PK\x03\x04 not a drawing", "not a DWG file"),
        ("notes.txt", b"hello world, not a drawing", "not a DXF file"),
        ("truncated.dxf", SAMPLE.read_bytes()[:5000], "not a readable DXF file"),
        ("words.dxf", b"hello world\nthis is not dxf\n", "not a readable DXF file"),
        ("empty.dxf", b"", "empty"),
        ("garbage.dxf", bytes(range(256)) * 4, "DXF"),
    ],
)
async def test_bad_files_give_clear_errors(
    client: Client, tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = await client.call_tool("open_document", {"filePath": str(path)})
    assert result.is_error
    text = text_of(result)
    assert expected in text
    assert "Traceback" not in text


async def test_missing_file_and_directory(client: Client, tmp_path: Path) -> None:
    missing = await client.call_tool("open_document", {"filePath": str(tmp_path / "nope.dxf")})
    assert missing.is_error and "not found" in text_of(missing)
    directory = await client.call_tool("open_document", {"filePath": str(tmp_path)})
    assert directory.is_error and "directory" in text_of(directory)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read any file")
async def test_unreadable_file(client: Client, tmp_path: Path) -> None:
    path = tmp_path / "locked.dxf"
    path.write_text("0\nEOF\n")
    path.chmod(0)
    result = await client.call_tool("open_document", {"filePath": str(path)})
    assert result.is_error and "permission" in text_of(result).lower()


def test_create_server_with_bad_path_raises_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DxfHostError, match="not found"):
        create_server([str(tmp_path / "missing.dxf")])


def _polylines_sharing_handles_with_their_first_vertex(path: Path, count: int) -> None:
    """An R12 drawing as some exporters write it: each POLYLINE has the handle of its first VERTEX."""
    doc = ezdxf.new("R12")
    for i in range(count):
        doc.modelspace().add_polyline2d([(i, 0), (i + 1, 1), (i + 2, 0)], dxfattribs={"layer": f"L{i % 2}"})
    doc.saveas(path)
    lines = path.read_text().splitlines()
    pairs = list(zip(lines[::2], lines[1::2], strict=True))
    polyline_handle_at = None
    for at, (code, value) in enumerate(pairs):
        if code.strip() == "0":
            kind = value.strip()
        elif code.strip() == "5" and kind == "POLYLINE":
            polyline_handle_at = at
        elif code.strip() == "5" and kind == "VERTEX" and polyline_handle_at is not None:
            pairs[polyline_handle_at] = (pairs[polyline_handle_at][0], value)
            polyline_handle_at = None
    path.write_text("\n".join(f"{code}\n{value}" for code, value in pairs) + "\n")


async def test_entities_whose_handle_another_entity_took_are_renumbered_not_dropped(
    client: Client, tmp_path: Path
) -> None:
    path = tmp_path / "exported.dxf"
    _polylines_sharing_handles_with_their_first_vertex(path, 3)
    assert len(ezdxf.readfile(path).modelspace()) == 3  # a plain read keeps them; the audit used to drop them
    opened = await client.call_tool("open_document", {"filePath": str(path)})
    assert not opened.is_error and "3 modelspace entities" in text_of(opened), text_of(opened)
    counted = await client.call_tool(
        "execute_python_code", {"code": "sorted((e.dxf.layer, len(e)) for e in msp.query('POLYLINE'))"}
    )
    assert "[('L0', 3), ('L0', 3), ('L1', 3)]" in text_of(counted)
    warnings = await client.read_resource("dxf://model/warnings")
    assert "Renumbered POLYLINE" in warnings.contents[0].text
    saved = await client.call_tool("save_document", {})
    assert not saved.is_error
    reread = ezdxf.readfile(path)
    assert [len(p) for p in reread.modelspace().query("POLYLINE")] == [3, 3, 3]
    assert len(reread.audit().fixes) == 0


async def test_a_binary_dxf_opens_like_an_ascii_one(client: Client, tmp_path: Path) -> None:
    path = tmp_path / "binary.dxf"
    doc = ezdxf.new("R2018")
    doc.modelspace().add_circle((0, 0), 5, dxfattribs={"layer": "Holes"})
    doc.modelspace().add_line((0, 0), (10, 0))
    doc.saveas(path, fmt="bin")
    assert path.read_bytes().startswith(b"AutoCAD Binary DXF")
    opened = await client.call_tool("open_document", {"filePath": str(path)})
    assert not opened.is_error and "2 modelspace entities" in text_of(opened), text_of(opened)
    counted = await client.call_tool(
        "execute_python_code", {"code": "[e.dxf.layer for e in msp.query('CIRCLE')]"}
    )
    assert "['Holes']" in text_of(counted)
    damaged = tmp_path / "damaged.dxf"
    damaged.write_bytes(path.read_bytes()[:300])
    refused = await client.call_tool("open_document", {"filePath": str(damaged)})
    assert refused.is_error and "not a readable DXF file" in text_of(refused), text_of(refused)
    assert "Traceback" not in text_of(refused)
