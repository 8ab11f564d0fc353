"""Whether a drawing or model file ends as its format ends: a file cut short (a copy or a
download that stopped, a disk that filled) still reads, as far as it goes, in ezdxf's recovering
reader and in IfcOpenShell, and would then look complete while its end is missing."""

from __future__ import annotations

import re
from pathlib import Path

TAIL_BYTES = 1024
_BINARY_DXF = b"AutoCAD Binary DXF"
_DWG_CODE = re.compile(rb"(AC\d{4}|AC\d\.\d{1,2}|MC0\.0)")
"""The version code a DWG starts with (AC1032, AC2.10, MC0.0...)."""


def unfinished(path: Path) -> str | None:
    """Why `path` looks cut short (a DXF without its closing EOF tag, an IFC file without
    END-ISO-10303-21), or None: complete, or a format this does not know. Reads at most the
    first 32 bytes and the last `TAIL_BYTES`."""
    try:
        with path.open("rb") as stream:
            head = stream.read(32)
            size = stream.seek(0, 2)
            stream.seek(max(0, size - TAIL_BYTES))
            tail = stream.read()
    except OSError:
        return None
    if head.lstrip().upper().startswith(b"ISO-10303-21"):
        if b"END-ISO-10303-21" not in tail.upper():
            return "it ends without END-ISO-10303-21, so its end is missing"
        return None
    if _DWG_CODE.match(head):  # a DWG, whatever its name: its length is not told by its end
        return None
    if head.startswith(_BINARY_DXF):
        return None if b"EOF\x00" in tail[-16:] else "it ends without the EOF record of binary DXF"
    if path.suffix.lower() == ".dxf" and tail.rstrip().splitlines()[-1:] != [b"EOF"]:
        return "it ends without the closing EOF tag of DXF"
    return None
