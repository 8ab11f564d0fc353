"""AutoCAD drawing format codes (the DWG header's first six bytes, DXF's ``$ACADVER``) and
the releases that write them."""

from __future__ import annotations

from typing import NamedTuple


class Release(NamedTuple):
    """One drawing format: its short release name and the AutoCAD products that save it."""

    name: str
    products: str


# Early codes come from the DWG headers of the releases themselves (the first is
# MicroCAD's); alpha/beta codes are listed because such files do exist in archives.
RELEASES: dict[str, Release] = {
    "MC0.0": Release("R1.1", "MicroCAD / AutoCAD Release 1.1"),
    "AC1.2": Release("R1.2", "AutoCAD Release 1.2"),
    "AC1.3": Release("R1.3", "AutoCAD Release 1.3"),
    "AC1.40": Release("R1.4", "AutoCAD Release 1.4"),
    "AC1.50": Release("R2.0", "AutoCAD Release 2.0"),
    "AC2.10": Release("R2.10", "AutoCAD Release 2.10"),
    "AC2.21": Release("R2.21", "AutoCAD Release 2.21"),
    "AC2.22": Release("R2.22", "AutoCAD Release 2.22"),
    "AC1001": Release("R2.4", "AutoCAD Release 2.4"),
    "AC1002": Release("R2.5", "AutoCAD Release 2.5"),
    "AC1003": Release("R2.6", "AutoCAD Release 2.6"),
    "AC1004": Release("R9", "AutoCAD Release 9"),
    "AC1005": Release("R9", "AutoCAD Release 9 (c1)"),
    "AC1006": Release("R10", "AutoCAD Release 10"),
    "AC1007": Release("R11", "AutoCAD Release 11 beta"),
    "AC1008": Release("R11", "AutoCAD Release 11 beta"),
    "AC1009": Release("R12", "AutoCAD Release 11/12"),
    "AC1010": Release("R13", "AutoCAD Release 13 beta"),
    "AC1011": Release("R13", "AutoCAD Release 13 beta"),
    "AC1012": Release("R13", "AutoCAD Release 13"),
    "AC1013": Release("R14", "AutoCAD Release 14 beta"),
    "AC1014": Release("R14", "AutoCAD Release 14"),
    "AC1500": Release("R2000", "AutoCAD 2000 beta"),
    "AC1015": Release("R2000", "AutoCAD 2000/2000i/2002"),
    "AC402a": Release("R2004", "AutoCAD 2004 alpha"),
    "AC402b": Release("R2004", "AutoCAD 2004 alpha"),
    "AC1018": Release("R2004", "AutoCAD 2004/2005/2006"),
    "AC701a": Release("R2007", "AutoCAD 2007 alpha"),
    "AC1021": Release("R2007", "AutoCAD 2007/2008/2009"),
    "AC1024": Release("R2010", "AutoCAD 2010/2011/2012"),
    "AC1027": Release("R2013", "AutoCAD 2013/2014/2015/2016/2017"),
    "AC1032": Release("R2018", "AutoCAD 2018/2019/2020/2021/2022/2023/2024/2025"),
}

# Codes shorter than six characters (the oldest headers pad with other bytes).
_SHORT_CODES = tuple(sorted((c for c in RELEASES if len(c) < 6), key=len, reverse=True))


def lookup(code: str) -> Release | None:
    """The release for a format code, or ``None`` when the code is not one AutoCAD wrote."""
    return RELEASES.get(code.strip())


def match_header(head: bytes) -> str | None:
    """The format code a DWG file starts with, or ``None`` if it starts with none."""
    six = head[:6].decode("latin-1")
    if six in RELEASES:
        return six
    for code in _SHORT_CODES:
        if six.startswith(code):
            return code
    return None


def describe(code: str) -> dict[str, str]:
    """``{"version", "release", "products"}`` for a code; unknown codes say so."""
    release = lookup(code)
    if release is None:
        return {"version": code, "release": "unknown", "products": "unknown (not an AutoCAD format code)"}
    return {"version": code, "release": release.name, "products": release.products}
