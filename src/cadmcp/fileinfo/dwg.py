"""DWG metadata from the fixed file header: the format code and, where the layout is
known (R13 and later), the maintenance version and drawing codepage.

A DWG cut short (a copy or download that stopped) still starts like a whole one, so its
length is checked against where the header places the file's last part: the end of the
furthest section (R13 to R2000), or the end of the header's copy that closes the file
(R2004, R2010, R2013, R2018, whose header block is XOR-encrypted with a fixed sequence).
R2007 files (AC1021) and those before R13 are not checked."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any, BinaryIO

from cadmcp.fileinfo import releases
from cadmcp.fileinfo.errors import FileInfoError, shown_name
from cadmcp.fileinfo.paths import Detail

# The header's codepage field indexes this table (R13 and later).
CODEPAGES: tuple[str, ...] = (
    "UTF8", "US_ASCII", "ISO_8859_1", "ISO_8859_2", "ISO_8859_3", "ISO_8859_4", "ISO_8859_5",
    "ISO_8859_6", "ISO_8859_7", "ISO_8859_8", "ISO_8859_9", "DOS437", "DOS850", "DOS852", "DOS855",
    "DOS857", "DOS860", "DOS861", "DOS863", "DOS864", "DOS865", "DOS869", "DOS932", "MACINTOSH",
    "BIG5", "KSC5601", "JOHAB", "DOS866", "ANSI_1250", "ANSI_1251", "ANSI_1252", "GB2312",
    "ANSI_1253", "ANSI_1254", "ANSI_1255", "ANSI_1256", "ANSI_1257", "ANSI_874", "ANSI_932",
    "ANSI_936", "ANSI_949", "ANSI_950", "ANSI_1361", "ANSI_1200", "ANSI_1258",
)  # fmt: skip
_HEADER_BYTES = 0x80
_FIRST_SECTIONED = "AC1012"  # R13: first release with the fixed header layout read here
_LOCATOR_CODES = ("AC1012", "AC1014", "AC1015")
"""Releases whose header lists section locators (number, seeker, size) from 0x15."""
_MAX_LOCATORS = 16
_PAGED_HEADER = 0x6C
"""Length of the encrypted header block at 0x80 (R2004 and later); a copy of it ends the file."""
_PAGED_MAGIC = b"AcFssFcAJMB\x00"
_SECOND_HEADER_AT = 0x34
_PREVIEW_SENTINEL = bytes.fromhex("1F256D07D43628289D57CA3F9D44102B")
"""Starts the preview image section; another sentinel of the same length ends it."""


_NEWEST_KNOWN = "AC1032"
"""The newest release known here (R2018, written by AutoCAD 2018 to 2025)."""
_WELL_FORMED = re.compile(rb"AC10[0-9]{2}")


def unknown_release(head: bytes) -> str | None:
    """The format code a DWG header starts with when it is well formed (``AC10`` and two digits) but
    names no release known here (``AC1036``), else None."""
    if not _WELL_FORMED.match(head) or releases.match_header(head) is not None:
        return None
    return head[:6].decode("ascii")


def unknown_release_message(name: str, code: str) -> str:
    """What to say of a DWG drawing whose release this reader does not know, and what to do."""
    if code > _NEWEST_KNOWN:
        what = (
            f"a DWG drawing of a release this reader does not know ({code}, newer than {_NEWEST_KNOWN}, "
            "the R2018 format AutoCAD 2018 to 2025 write): it was made by a newer AutoCAD"
        )
    else:
        what = (
            f"a DWG drawing whose version code ({code}) names no AutoCAD release known here (or whose "
            "header is damaged)"
        )
    return (
        f"{name} is {what}. Save it as DXF, or as a DWG of an older release (AutoCAD 2018 or earlier), "
        "in AutoCAD or the application that wrote it, and use that file."
    )


class CutShort(FileInfoError):
    """A DWG file shorter than where its header places its end (code ``corrupt_file``)."""


def cut_short(path: Path) -> str | None:
    """Why the DWG at ``path`` is cut short, as read_file_info says it (release, both lengths, what
    to do), or None: whole as far as its header tells, a release whose length is not checked, or no
    DWG. The one check behind read_file_info, launch_host and opening a drawing in a running host."""
    try:
        read(path, "summary")
    except CutShort as exc:
        return exc.message
    except (FileInfoError, OSError):
        return None
    return None


def read(path: Path, detail: Detail) -> dict[str, Any]:
    """The DWG answer for ``path``; ``full`` adds the raw header fields."""
    with path.open("rb") as fp:
        head = fp.read(_HEADER_BYTES + _PAGED_HEADER)
        size = fp.seek(0, 2)
        code = releases.match_header(head)
        preview_end = _preview_end(fp, head) if code in _LOCATOR_CODES and size >= _HEADER_BYTES else None
    unknown = unknown_release(head) if code is None else None
    if unknown is not None:
        return {
            "acadVersion": unknown,
            "release": "newer than R2018" if unknown > _NEWEST_KNOWN else "unknown",
            "products": "a newer AutoCAD" if unknown > _NEWEST_KNOWN else "unknown (no release known here)",
            "lengthChecked": False,
            "note": unknown_release_message(shown_name(path), unknown),
        }
    if code is None:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} does not start with a DWG version code (AC1xxx, 6 characters); it is not a "
            "DWG drawing or its header is damaged. Check the file, or rename it if it is another format.",
        )
    out: dict[str, Any] = {"acadVersion": code, **_names(code)}
    if not code.startswith("AC1") or len(code) != 6 or code < _FIRST_SECTIONED:
        out["headerLayout"] = "pre-R13 (only the version code is read)"
        out["lengthChecked"] = False
        return out
    needed = needed_size(head, code) if size >= _HEADER_BYTES else _HEADER_BYTES
    if needed is not None and preview_end is not None:
        needed = max(needed, preview_end)
    if needed is None:
        out["lengthChecked"] = False  # a cut-short R2007 drawing answers like a whole one: say so
    if needed is not None and size < needed:
        where = "its fixed header alone is" if size < _HEADER_BYTES else "its header places its end at"
        raise CutShort(
            "corrupt_file",
            f"{shown_name(path)} is a DWG drawing ({out['release']}, {code}) cut short: it is {size} bytes, "
            f"but {where} {needed}. Re-copy or download it again, or open it in AutoCAD (RECOVER) to "
            "save what is left.",
        )
    maintenance = head[0x0B]
    (codepage_index,) = struct.unpack_from("<H", head, 0x13)
    out["maintenanceVersion"] = maintenance
    out["codepage"] = CODEPAGES[codepage_index] if codepage_index < len(CODEPAGES) else None
    if detail == "full":
        (preview,) = struct.unpack_from("<I", head, 0x0D)
        out["header"] = {
            "codepageIndex": codepage_index,
            "previewAddress": preview,
            "hasPreview": preview != 0,
        }
        if needed is not None:
            out["header"]["endsAt"] = needed
        if code >= "AC1018":
            out["header"]["appVersion"] = head[0x11]
            out["header"]["appMaintenanceVersion"] = head[0x12]
            if len(head) >= 0x1C:
                (security,) = struct.unpack_from("<I", head, 0x18)
                out["header"]["encrypted"] = bool(security & 0x1)
                out["header"]["propertiesEncrypted"] = bool(security & 0x2)
                out["header"]["signed"] = bool(security & 0x10)
    out["note"] = (
        "read_file_info reads a DWG's header only (its release, code page, preview and length); its "
        "layers and entities are read when launch_host opens it in a DXF host, through the DWG reader "
        "(launch_host says how to install it where it is missing)."
    )
    if needed is None:
        out["note"] += (
            f" Whether the file is whole is not checked for {out['release']} ({code}) drawings: open it "
            "(launch_host) to see what it holds."
        )
    return out


def _names(code: str) -> dict[str, str]:
    described = releases.describe(code)
    return {"release": described["release"], "products": described["products"]}


def needed_size(head: bytes, code: str) -> int | None:
    """How long the file must be by its header (at least its first 0x80 bytes, up to 0xEC),
    or None where the layout is not checked (R2007, before R13, a block that does not decrypt)."""
    if code in _LOCATOR_CODES:
        (count,) = struct.unpack_from("<I", head, 0x15)
        count = min(count, _MAX_LOCATORS, (len(head) - 0x19) // 9)
        locators = struct.iter_unpack("<BII", head[0x19 : 0x19 + 9 * count])
        ends = [seeker + size for _, seeker, size in locators]
        return max(ends, default=_HEADER_BYTES)
    if code < "AC1018" or code == "AC1021":
        return None
    if len(head) < _HEADER_BYTES + _PAGED_HEADER:
        return _HEADER_BYTES + _PAGED_HEADER
    block = decrypt(head[_HEADER_BYTES : _HEADER_BYTES + _PAGED_HEADER])
    if not block.startswith(_PAGED_MAGIC):
        return None
    (second,) = struct.unpack_from("<Q", block, _SECOND_HEADER_AT)
    return second + _PAGED_HEADER


def _preview_end(fp: BinaryIO, head: bytes) -> int | None:
    """Where the preview image ends (R13 to R2000 may put it after the last section), or None:
    no preview, or none where the header points (only a sentinel-framed image is trusted)."""
    (start,) = struct.unpack_from("<I", head, 0x0D)
    if start == 0:
        return None
    framing = len(_PREVIEW_SENTINEL) + 4  # the sentinel and the section's size
    fp.seek(start)
    frame = fp.read(framing)
    if len(frame) < framing:  # the file ends before the image it points at
        return start + framing
    if not frame.startswith(_PREVIEW_SENTINEL):
        return None
    (size,) = struct.unpack_from("<I", frame, len(_PREVIEW_SENTINEL))
    return start + framing + size + len(_PREVIEW_SENTINEL)


def decrypt(block: bytes) -> bytes:
    """The R2004+ header block: XOR with the bytes of the C runtime's rand() sequence from seed 1."""
    seed = 1
    out = bytearray(block)
    for index in range(len(out)):
        seed = (seed * 0x343FD + 0x269EC3) & 0xFFFFFFFF
        out[index] ^= (seed >> 16) & 0xFF
    return bytes(out)
