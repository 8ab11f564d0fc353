"""DWG metadata from the fixed file header: the format code and, where the layout is
known (R13 and later), the maintenance version and drawing codepage."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

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


def read(path: Path, detail: Detail) -> dict[str, Any]:
    """The DWG answer for ``path``; ``full`` adds the raw header fields."""
    with path.open("rb") as fp:
        head = fp.read(_HEADER_BYTES)
    code = releases.match_header(head)
    if code is None:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} does not start with a DWG version code (AC1xxx, 6 characters); it is not a "
            "DWG drawing or its header is damaged. Check the file, or rename it if it is another format.",
        )
    out: dict[str, Any] = {"acadVersion": code, **_names(code)}
    if not code.startswith("AC1") or len(code) != 6 or code < _FIRST_SECTIONED:
        out["headerLayout"] = "pre-R13 (only the version code is read)"
        return out
    if len(head) < 0x15:
        out["headerLayout"] = "truncated (only the version code is read)"
        return out
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
        if code >= "AC1018":
            out["header"]["appVersion"] = head[0x11]
            out["header"]["appMaintenanceVersion"] = head[0x12]
            if len(head) >= 0x1C:
                (security,) = struct.unpack_from("<I", head, 0x18)
                out["header"]["encrypted"] = bool(security & 0x1)
                out["header"]["propertiesEncrypted"] = bool(security & 0x2)
                out["header"]["signed"] = bool(security & 0x10)
    out["note"] = "DWG content (layers, entities) cannot be read without AutoCAD or a DWG converter."
    return out


def _names(code: str) -> dict[str, str]:
    described = releases.describe(code)
    return {"release": described["release"], "products": described["products"]}
