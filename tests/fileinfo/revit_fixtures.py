"""Revit-shaped compound files for tests: ``BasicFileInfo`` as Revit lays it out (length-
prefixed UTF-16LE fields, then the ``Key: value`` text block at an odd offset), an Atom
``PartAtom`` for families, and a ``TransmissionData`` stream of external references."""

from __future__ import annotations

import struct
from pathlib import Path

from .cfb import write_cfb

GUID = "c749ca88-5442-46eb-a706-04db158b688e"
SAVE_PATH_2024 = "C:\\Users\\ada\\Documents\\Projects\\Project1.rvt"
SAVE_PATH_2018 = "C:\\Projects\\Tower\\Tower_Central.rvt"
CENTRAL_2018 = "\\\\fileserver\\bim\\Tower\\Tower_Central.rvt"
LINKS = [
    ("RevitLink", "..\\Links\\Structure.rvt", "Relative", "Loaded"),
    ("CADLink", "C:\\Survey\\Site Plan.dwg", "Absolute", "Loaded"),
    ("IFCLink", "..\\Links\\MEP Model.ifc", "Relative", "NotFound"),
    ("KeynoteTable", "C:\\ProgramData\\Autodesk\\RVT 2024\\Libraries\\US Imperial\\RevitKeynotes.txt",
     "Absolute", "Loaded"),
]  # fmt: skip


def _u16(text: str) -> bytes:
    """A field as Revit writes it: a 32-bit character count, then UTF-16LE."""
    return struct.pack("<I", len(text)) + text.encode("utf-16-le")


def basic_file_info_2024(username: str = "ada") -> bytes:
    lines = [
        "Worksharing: Not enabled",
        f"Username: {username}",
        "Central Model Path: ",
        "Format: 2024",
        "Build: 20230308_1635(x64)",
        f"Last Save Path: {SAVE_PATH_2024}",
        "Open Workset Default: 3",
        "Project Spark File: 0",
        "Central Model Identity: 00000000-0000-0000-0000-000000000000",
        "Locale when saved: ENU",
        "All Local Changes Saved To Central: 0",
        "Central model's version number corresponding to the last reload latest: 12",
        f"Central model's episode GUID corresponding to the last reload latest: {GUID}",
        f"Unique Document GUID: {GUID}",
        "Unique Document Increments: 12",
        "Model Identity: 00000000-0000-0000-0000-000000000000",
        "IsSingleUserCloudModel: F",
        "Author: Autodesk Revit",
    ]
    prefix = struct.pack("<IB", 14, 0)  # record version, worksharing flag
    prefix += _u16("2024") + _u16("20230308_1635(x64)") + _u16(SAVE_PATH_2024)
    prefix += b"\x00\x01\x40" + _u16(GUID) + _u16("ENU") + _u16("Autodesk Revit")
    prefix += b"\x00"  # one byte more: the text block starts at an odd offset, as in real files
    text = "\r\n".join(lines) + "\r\n"
    return prefix + _u16(text) + b"\x00\x00\x00\x00"


def basic_file_info_2018() -> bytes:
    """A pre-2019 layout: ``Revit Build:`` instead of ``Format:``/``Build:``, workshared."""
    lines = [
        "Worksharing: Enabled",
        "Username: jsmith",
        f"Central Model Path: {CENTRAL_2018}",
        "Revit Build: Autodesk Revit 2018 (Build: 20170927_1515(x64))",
        f"Last Save Path: {SAVE_PATH_2018}",
        "Open Workset Default: 3",
        "Project Spark File: 0",
        "Central Model Identity: 0d3c8a9e-58b1-4f0c-9d5e-1f2a3b4c5d6e",
        "Locale when saved: DEU",
        "All Local Changes Saved To Central: 1",
        "Central model's version number corresponding to the last reload latest: 240",
        "Central model's episode GUID corresponding to the last reload latest: "
        "5b1e2f3a-0c4d-4e5f-8a9b-0c1d2e3f4a5b",
        "Unique Document GUID: 0d3c8a9e-58b1-4f0c-9d5e-1f2a3b4c5d6e",
        "Unique Document Increments: 240",
    ]  # fmt: skip
    prefix = struct.pack("<IBB", 10, 1, 0) + b"\x07"  # odd-sized binary prefix
    text = "\r\n".join(lines) + "\r\n"
    return prefix + _u16(text)


def part_atom(title: str = "Desk Chair", category: str = "Furniture", version: str = "2024") -> bytes:
    xml = f"""<?xml version="1.0" encoding="UTF-8"?>
<entry xmlns="http://www.w3.org/2005/Atom" xmlns:A="urn:schemas-autodesk-com:partatom">
  <title>{title}</title>
  <id></id>
  <updated>2023-05-01T10:00:00Z</updated>
  <A:taxonomy><term>adsk:revit</term><label>Autodesk Revit</label></A:taxonomy>
  <A:taxonomy><term>adsk:revit:grouping</term><label>Autodesk Revit Grouping</label></A:taxonomy>
  <category><term>{category}</term><scheme>adsk:revit:grouping</scheme></category>
  <category><term>23.40.20.14</term><scheme>std:oc1</scheme></category>
  <link rel="design-2d" type="application/rfa" href=".">
    <A:design-file>
      <A:title>{title}.rfa</A:title>
      <A:product>Revit</A:product>
      <A:product-version>{version}</A:product-version>
      <A:updated>2023-05-01T10:00:00Z</A:updated>
    </A:design-file>
  </link>
  <A:family type="user">
    <A:variationCount>2</A:variationCount>
    <A:part type="user"><title>Chair 450</title></A:part>
    <A:part type="user"><title>Chair 500</title></A:part>
  </A:family>
</entry>
"""
    return xml.encode("utf-8")


def transmission_data(links: list[tuple[str, str, str, str]] = LINKS) -> bytes:
    """External references, one record each: kind, path, path type, load state."""
    data = struct.pack("<II", 3, len(links))
    for number, (kind, path, path_type, state) in enumerate(links):
        data += struct.pack("<IB", number + 1, 1) + _u16(kind) + _u16(path) + _u16(path_type)
        data += _u16(state) + b"\x00" * (number % 2 + 1)  # records do not keep even alignment
    return data


def _common(info: bytes) -> dict[str, bytes]:
    return {
        "BasicFileInfo": info,
        "Contents": b"\x00" * 64,
        "Formats/Latest": b"\x1f\x8b\x08\x00" + bytes(60),
        "Global/Latest": b"\x1f\x8b\x08\x00" + bytes(200),
        "Global/ElemTable": bytes(96),
        "RevitPreview4.0": b"\x00" * 300 + b"\x89PNG\r\n\x1a\n" + bytes(5000),
    }


def write_project_2024(path: Path, *, with_links: bool = True) -> Path:
    streams = _common(basic_file_info_2024())
    if with_links:
        streams["TransmissionData"] = transmission_data()
    return write_cfb(path, streams)


def write_project_2018(path: Path) -> Path:
    return write_cfb(path, _common(basic_file_info_2018()))


def write_family_2024(path: Path) -> Path:
    streams = _common(basic_file_info_2024())
    streams["PartAtom"] = part_atom()
    return write_cfb(path, streams)
