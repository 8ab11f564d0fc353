"""DWG release and header fields from file headers laid out as AutoCAD writes them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from ezdxf.dwginfo import dwg_file_info
from ezdxf.lldxf.const import acad_release

from cadmcp.fileinfo import FileInfoError, read_file_info
from cadmcp.fileinfo.releases import RELEASES

KEY_START = bytes.fromhex("2923be84e16cd6ae529049f1f1bbe9eb")
"""The first bytes every R2004+ DWG's header block is XORed with (seen in AutoCAD's files)."""


def r2004_header(code: str = "AC1032", maintenance: int = 4, codepage: int = 30, security: int = 0) -> bytes:
    """The fixed 0x80-byte prefix of an R2004+ DWG (a block that is not a header block follows it)."""
    head = bytearray(0x100)
    head[0:6] = code.encode()
    head[0x0B] = maintenance
    head[0x0C] = 0x03
    struct.pack_into("<I", head, 0x0D, 0x1C0)  # preview image address
    head[0x11] = 0x21  # version of the application that saved it
    head[0x12] = maintenance
    struct.pack_into("<H", head, 0x13, codepage)
    struct.pack_into("<I", head, 0x18, security)
    struct.pack_into("<I", head, 0x20, 0x300)  # summary info address
    struct.pack_into("<I", head, 0x28, 0x80)
    head[0x80:] = bytes((i * 37 + 11) % 256 for i in range(0x80))  # stands in for the encrypted block
    return bytes(head)


def r2000_header(code: str = "AC1015", codepage: int = 29) -> bytes:
    """An R13–R2000 header: version, image seeker, codepage and the section locators."""
    head = bytearray(code.encode() + bytes(5))
    head += bytes([0x00, 0x01])  # maintenance version, constant 1
    head += struct.pack("<I", 0)  # no preview image
    head += bytes([0x1F, 0x00])  # unknown
    head += struct.pack("<H", codepage)
    locators = [(0, 0x58, 0x6D3), (1, 0x72B, 0x1F2), (2, 0x91D, 0x35)]
    head += struct.pack("<I", len(locators))
    for number, seeker, size in locators:
        head += struct.pack("<BII", number, seeker, size)
    head += b"\x95\xa0"  # CRC
    head += bytes.fromhex("95A04E2846A57A41A9082BA4BFC2C5F2")  # end-of-header sentinel
    return bytes(head).ljust(0x91D + 0x35, b"\x00")  # as long as the furthest section's end


def paged_drawing(code: str = "AC1032", second_header: int = 0x7000) -> bytes:
    """An R2004+ DWG as long as its header says: the header block at 0x80 (encrypted) names
    where its copy starts, and that copy closes the file."""
    block = bytearray(0x6C)
    block[0:12] = b"AcFssFcAJMB\x00"
    struct.pack_into("<3I", block, 0x0C, 0, 0x6C, 4)
    struct.pack_into("<Q", block, 0x34, second_header)
    struct.pack_into("<Q", block, 0x54, second_header - 0x200)  # the section page map, before it
    encrypted = bytes(b ^ k for b, k in zip(block, _key(len(block)), strict=True))
    head = bytearray(r2004_header(code)[:0x80]) + encrypted
    return bytes(head.ljust(second_header, b"\x5a")) + encrypted


def _key(length: int) -> bytes:
    """The XOR sequence: the C runtime's rand() from seed 1, one byte of each draw."""
    seed, out = 1, bytearray()
    for _ in range(length):
        seed = (seed * 214013 + 2531011) % 2**32
        out.append(seed >> 16 & 0xFF)
    assert out.startswith(KEY_START[:length])
    return bytes(out)


def write(tmp_path: Path, data: bytes, name: str = "drawing.dwg") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_r2018_header_gives_release_products_codepage_and_maintenance(tmp_path: Path) -> None:
    path = write(tmp_path, r2004_header("AC1032", maintenance=4, codepage=30))

    info = read_file_info(path)

    assert dwg_file_info(path).release == "R2018"  # the fixture is a DWG to ezdxf too
    assert info["format"] == "dwg"
    assert info["acadVersion"] == "AC1032"
    assert info["release"] == "R2018"
    assert info["products"] == "AutoCAD 2018/2019/2020/2021/2022/2023/2024/2025"
    assert info["codepage"] == "ANSI_1252"
    assert info["maintenanceVersion"] == 4
    assert "header" not in info


def test_full_adds_raw_header_fields(tmp_path: Path) -> None:
    path = write(tmp_path, r2004_header("AC1027", security=0x1))

    header = read_file_info(path, "full")["header"]

    assert header["hasPreview"] is True
    assert header["appVersion"] == 0x21
    assert header["encrypted"] is True
    assert header["signed"] is False


def test_r2000_header_layout_gives_its_codepage(tmp_path: Path) -> None:
    info = read_file_info(write(tmp_path, r2000_header("AC1015", codepage=29)), "full")

    assert info["release"] == "R2000"
    assert info["products"] == "AutoCAD 2000/2000i/2002"
    assert info["codepage"] == "ANSI_1251"
    assert info["header"]["hasPreview"] is False


@pytest.mark.parametrize("code", sorted(RELEASES))
def test_every_known_format_code_is_named(tmp_path: Path, code: str) -> None:
    data = code.encode().ljust(6, b"\x00") + bytes(0x1FA)

    info = read_file_info(write(tmp_path, data))

    assert info["acadVersion"] == code
    assert info["release"] == RELEASES[code].name
    if code in acad_release:  # agree with ezdxf wherever it knows the code
        assert info["release"] == acad_release[code]


@pytest.mark.parametrize("code", ["MC0.0", "AC1.2", "AC2.10", "AC1004", "AC1009"])
def test_pre_r13_drawings_report_only_the_version(tmp_path: Path, code: str) -> None:
    info = read_file_info(write(tmp_path, code.encode() + b"\x00\x01" * 20))
    assert info["headerLayout"].startswith("pre-R13")
    assert "codepage" not in info


def test_header_cut_after_the_version_is_cut_short_naming_the_release(tmp_path: Path) -> None:
    with pytest.raises(FileInfoError) as caught:
        read_file_info(write(tmp_path, b"AC1018\x00\x00"))
    assert caught.value.code == "corrupt_file"
    said = caught.value.message
    assert "(R2004, AC1018) cut short: it is 8 bytes, but its fixed header alone is 128" in said


@pytest.mark.parametrize("code", ["AC1018", "AC1024", "AC1027", "AC1032"])
def test_a_paged_dwg_is_as_long_as_its_header_copy_says(tmp_path: Path, code: str) -> None:
    whole = paged_drawing(code)
    assert read_file_info(write(tmp_path, whole), "full")["header"]["endsAt"] == len(whole)
    for keep in (len(whole) - 1, len(whole) // 2, 0x100):
        with pytest.raises(FileInfoError) as caught:
            read_file_info(write(tmp_path, whole[:keep]))
        assert f"cut short: it is {keep} bytes, but its header places its end at {len(whole)}" in (
            caught.value.message
        )
        assert "Re-copy" in caught.value.message
    longer = read_file_info(write(tmp_path, whole + bytes(512)))  # more than it needs is not a fault
    assert longer["acadVersion"] == code


def test_an_r2000_dwg_written_by_ezdwg_is_whole_and_its_cut_copies_are_not(tmp_path: Path) -> None:
    """A DWG from another program's writer: whole it reads, cut anywhere it is said to be cut short."""
    ezdwg = pytest.importorskip("ezdwg")
    drawing = ezdwg.new("AC1015")
    for n in range(40):
        drawing.modelspace().add_line((0, n), (10, n))
    path = tmp_path / "ezdwg.dwg"
    drawing.save(str(path))
    data = path.read_bytes()
    assert read_file_info(path, "full")["header"]["endsAt"] == len(data)
    for keep in (len(data) - 1, len(data) * 3 // 4, 0x90):
        with pytest.raises(FileInfoError) as caught:
            read_file_info(write(tmp_path, data[:keep], "cut.dwg"))
        assert "(R2000, AC1015) cut short" in caught.value.message


def test_an_r2007_dwg_is_not_checked_and_says_so(tmp_path: Path) -> None:
    info = read_file_info(write(tmp_path, r2004_header("AC1021")[:0x100]), "full")
    assert info["release"] == "R2007" and "endsAt" not in info["header"]
    assert info["lengthChecked"] is False and "is not checked for R2007 (AC1021)" in info["note"]
    whole = read_file_info(write(tmp_path, paged_drawing("AC1032")))
    assert "lengthChecked" not in whole and "not checked" not in whole["note"]


def test_a_dwg_of_a_newer_release_is_named_as_one_with_what_to_do(tmp_path: Path) -> None:
    """A DWG of a release newer than R2018 was called "not a DWG drawing or its header is damaged"."""
    info = read_file_info(write(tmp_path, paged_drawing("AC1036")))
    assert info["format"] == "dwg" and info["acadVersion"] == "AC1036"
    assert info["release"] == "newer than R2018" and info["lengthChecked"] is False
    assert "a DWG drawing of a release this reader does not know (AC1036, newer than AC1032" in info["note"]
    assert "made by a newer AutoCAD" in info["note"]
    assert "Save it as DXF, or as a DWG of an older release" in info["note"]
    odd = read_file_info(write(tmp_path, paged_drawing("AC1016"), "odd.dwg"))
    assert odd["release"] == "unknown" and "names no AutoCAD release known here" in odd["note"]


@pytest.mark.parametrize(
    "data",
    [b"", b"PK\x03\x04zipfile", b"AC99990000", b"0\nSECTION\n"],
    ids=["empty", "zip", "bad-code", "dxf"],
)
def test_content_that_is_not_a_dwg_is_corrupt(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(FileInfoError) as caught:
        read_file_info(write(tmp_path, data))
    assert caught.value.code == "corrupt_file"
    if data.startswith(b"0\nSECTION"):  # the start of a DXF: read as one, which it is not whole
        assert caught.value.message.startswith("'drawing.dwg' is named '.dwg' but holds a DXF drawing, read ")
        assert "not a complete DXF drawing" in caught.value.message
    else:
        assert "DWG" in caught.value.message


def test_an_r2000_preview_image_after_the_last_section_counts_in_its_length(tmp_path: Path) -> None:
    """R13-R2000 may put the preview image last (LibreDWG's r14/v.dwg does): cut inside it, the
    drawing is cut short though every section is whole."""
    sections = bytearray(r2000_header())
    sentinel = bytes.fromhex("1F256D07D43628289D57CA3F9D44102B")
    struct.pack_into("<I", sections, 0x0D, len(sections))
    image = bytes(range(256)) * 8
    whole = bytes(sections) + sentinel + struct.pack("<I", len(image)) + image + bytes(16)
    assert read_file_info(write(tmp_path, whole), "full")["header"]["endsAt"] == len(whole)
    for keep in (len(whole) - 1, len(sections) + 10):
        with pytest.raises(FileInfoError) as caught:
            read_file_info(write(tmp_path, whole[:keep]))
        assert "cut short" in caught.value.message
    struct.pack_into("<I", sections, 0x0D, 0x200)  # pointing at no image: not trusted, not counted
    assert read_file_info(write(tmp_path, bytes(sections)))["release"] == "R2000"
