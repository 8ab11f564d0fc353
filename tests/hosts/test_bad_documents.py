"""Huge, zero-filled or garbage documents fail fast with a short error that never quotes the file,
before any parser runs out of memory (the same on every document host)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cadmcp.hosts import dxf, ifc

pytestmark = pytest.mark.anyio

DXF_HEAD = b"  0\nSECTION\n  2\nHEADER\n"
IFC_HEAD = b"ISO-10303-21;\nHEADER;\nFILE_DESCRIPTION((''),'2;1');\n"
MAX_MESSAGE = 600


def sparse(path: Path, head: bytes, size: int) -> Path:
    """A file of ``size`` bytes: ``head`` then zeros (sparse: it takes no disk space)."""
    with path.open("wb") as stream:
        stream.write(head)
        stream.truncate(size)
    return path


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


HOSTS: dict[str, tuple[Callable[..., Any], str, bytes]] = {
    "dxf": (dxf.create_server, ".dxf", DXF_HEAD),
    "ifc": (ifc.create_server, ".ifc", IFC_HEAD),
}


async def refusal(kind: str, path: Path) -> tuple[str, float]:
    create, _, _ = HOSTS[kind]
    async with Client(create().server) as client:
        await client.call_tool("list_documents", {})  # the blank start-up document (imports the library)
        started = time.perf_counter()
        result = await client.call_tool("open_document", {"filePath": str(path)})
        elapsed = time.perf_counter() - started
        assert result.is_error
        listed = (await client.call_tool("list_documents", {})).structured_content
        assert len(listed["documents"]) == 1  # only the blank start-up document: nothing half-opened
    return text_of(result), elapsed


@pytest.mark.parametrize("kind", sorted(HOSTS))
async def test_a_zero_filled_file_is_refused_at_once_without_quoting_it(kind: str, tmp_path: Path) -> None:
    _, suffix, _ = HOSTS[kind]
    path = tmp_path / f"zeros{suffix}"
    path.write_bytes(bytes(10_000_000))
    message, elapsed = await refusal(kind, path)
    assert elapsed < 1.0, elapsed
    assert len(message) < MAX_MESSAGE and "\x00" not in message and "\\x00" not in message
    assert "zeros" in message


@pytest.mark.parametrize("kind", sorted(HOSTS))
async def test_a_good_start_then_megabytes_of_zeros_is_refused_at_once(kind: str, tmp_path: Path) -> None:
    _, suffix, head = HOSTS[kind]
    path = sparse(tmp_path / f"tail{suffix}", head, 10_000_000)
    message, elapsed = await refusal(kind, path)
    assert elapsed < 1.0, elapsed
    assert "binary data" in message and "damaged" in message
    assert len(message) < MAX_MESSAGE


@pytest.mark.parametrize("kind", sorted(HOSTS))
async def test_a_file_too_big_for_the_memory_budget_is_refused_unread(kind: str, tmp_path: Path) -> None:
    _, suffix, head = HOSTS[kind]
    path = sparse(tmp_path / f"huge{suffix}", head, 2_000_000_000)
    message, elapsed = await refusal(kind, path)
    assert elapsed < 1.0, elapsed
    assert "2.0 GB" in message and "CADMCP_DOCUMENT_MEMORY_MB" in message


async def test_the_memory_budget_follows_its_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ezdxf import new

    drawing = new()
    for i in range(2000):
        drawing.modelspace().add_line((i, 0), (i, 1))
    path = tmp_path / "plan.dxf"
    drawing.saveas(path)
    monkeypatch.setenv("CADMCP_DOCUMENT_MEMORY_MB", "1")
    message, _ = await refusal("dxf", path)
    assert "more than this host allows (1.0 MB)" in message


async def test_a_parser_error_about_a_huge_line_is_clipped(tmp_path: Path) -> None:
    path = tmp_path / "junk.dxf"
    path.write_bytes(DXF_HEAD + b"X" * 60_000 + b"\n" + b"0\nEOF\n")
    message, _ = await refusal("dxf", path)
    assert "not a readable DXF file" in message
    assert len(message) < MAX_MESSAGE and "X" * 200 not in message


async def test_a_long_line_without_breaks_is_refused_without_parsing(tmp_path: Path) -> None:
    path = tmp_path / "oneline.dxf"
    path.write_bytes(DXF_HEAD + b"X" * 10_000_000)
    message, elapsed = await refusal("dxf", path)
    assert elapsed < 1.0 and "no line break" in message and len(message) < MAX_MESSAGE


@pytest.mark.parametrize("kind", sorted(HOSTS))
@pytest.mark.parametrize(
    ("file_path", "expected"),
    [
        ("~nosuchuser-cadmcp/x", "no such user"),
        ("/tmp/\x00nul", "NUL"),
        ("/no/such/folder/" + "a" * 5000, "File name too long"),
        ("/no/such/folder/x", "File not found"),
    ],
)
async def test_bad_paths_get_short_typed_errors(kind: str, file_path: str, expected: str) -> None:
    create, suffix, _ = HOSTS[kind]
    async with Client(create().server) as client:
        result = await client.call_tool("open_document", {"filePath": file_path + suffix})
        blank = await client.call_tool("open_document", {"filePath": "   "})
    assert blank.is_error and "filePath is empty" in text_of(blank)
    assert result.is_error and expected in text_of(result)
    assert len(text_of(result)) < MAX_MESSAGE


@pytest.mark.parametrize("kind", sorted(HOSTS))
async def test_a_start_up_file_that_fails_is_said_on_every_use_until_a_document_is_open(
    kind: str, tmp_path: Path, served: Any
) -> None:
    """Through a real runtime, whose state publishing reads the documents after the warm-up."""
    create, suffix, head = HOSTS[kind]
    broken = tmp_path / f"broken{suffix}"
    broken.write_bytes(head + b"this is no drawing or model at all\n" * 20)
    good = tmp_path / f"good{suffix}"
    async with served(create([str(broken)]), kind.upper()) as session:
        for _ in range(2):  # the state publisher must not have used the error up
            ran = await session.call_tool("execute_python_code", {"code": "1"})
            assert ran.is_error and "broken" in text_of(ran) and "open_document" in text_of(ran), text_of(ran)
        if kind == "dxf":
            import ezdxf

            ezdxf.new().saveas(good)
        else:
            from cadmcp.hosts.ifc.modelgen import new_project

            new_project("Good").file.write(str(good))
        opened = await session.call_tool("open_document", {"filePath": str(good)})
        assert not opened.is_error, text_of(opened)
        ran = await session.call_tool("execute_python_code", {"code": "1"})
        assert not ran.is_error, text_of(ran)
