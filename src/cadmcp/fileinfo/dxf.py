"""DXF metadata from one streaming pass over the tags: header variables, layers, blocks and
entity counts, without building an ezdxf document."""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadmcp.fileinfo import releases
from cadmcp.fileinfo.errors import FileInfoError, corrupt, shown_name
from cadmcp.fileinfo.paths import Detail, capped

BINARY_SENTINEL = b"AutoCAD Binary DXF\r\n\x1a\x00"
# ezdxf writes these into $EXTMIN/$EXTMAX until extents are computed.
_PLACEHOLDER = 1e19
# Sub-entities that belong to the entity before them, not to the layout.
_SUB_ENTITIES = frozenset({"VERTEX", "SEQEND", "ATTRIB"})
_SUMMARY_LIST = 20
_SUMMARY_TYPES = 10
_MEASUREMENT = {0: "imperial", 1: "metric"}


@dataclass
class _Block:
    name: str
    flags: int = 0
    xref_path: str = ""
    entities: int = 0


@dataclass
class _Scan:
    """What one pass over the tags collected."""

    header: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    tables: dict[str, list[dict[int, Any]]] = field(default_factory=dict)
    blocks: list[_Block] = field(default_factory=list)
    entity_types: Counter[str] = field(default_factory=Counter)
    paperspace_types: Counter[str] = field(default_factory=Counter)
    owned_types: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(owner handle, type) of the ENTITIES section's entities not marked paper space (67): an
    R2000+ file places the active layout's by their owner, its *Paper_Space block record."""
    entity_layers: Counter[str] = field(default_factory=Counter)
    sections: list[str] = field(default_factory=list)
    objects: int = 0
    layouts: list[str] = field(default_factory=list)
    """The names of the LAYOUT objects (the OBJECTS section: a full read only)."""
    saw_eof: bool = False
    last_section: str = ""
    stopped: bool = False  # the tag scan stopped at ENTITIES; the byte scan did the rest


def read(path: Path, detail: Detail) -> dict[str, Any]:
    """The DXF answer for ``path`` at the given detail level."""
    with path.open("rb") as fp:
        binary = fp.read(len(BINARY_SENTINEL)) == BINARY_SENTINEL
        if binary:  # cut short, its tags break off mid-value, and the reader says only that it failed
            fp.seek(max(fp.seek(0, 2) - 16, 0))
            if b"EOF\x00" not in fp.read():
                raise FileInfoError(
                    "corrupt_file",
                    f"{shown_name(path)} is not a complete binary DXF drawing: it ends without the EOF "
                    "record. The file is probably truncated; re-export or re-copy it.",
                )
    try:
        if binary:
            from ezdxf.lldxf.tagger import binary_tags_loader

            scan = _scan(binary_tags_loader(path.read_bytes(), errors="replace"))
            decode = _identity
        else:
            from ezdxf.lldxf.tagger import ascii_tags_loader

            # latin-1 never fails and keeps every byte; names are re-decoded once the
            # drawing's own encoding is known from the header.
            with path.open("rt", encoding="latin-1", newline=None) as stream:
                # A summary stops at ENTITIES and counts them with a byte scan (~20x faster).
                scan = _scan(ascii_tags_loader(stream), stop_at="ENTITIES" if detail == "summary" else "")
            if scan.stopped:
                _count_entities(path, scan)
            decode = _decoder(_encoding(scan))
    except FileInfoError:
        raise
    except Exception as exc:  # ezdxf raises DXFStructureError, ValueError, struct.error...
        raise corrupt(path, "a DXF drawing", exc) from None
    _check_complete(path, scan)
    return _answer(scan, decode, detail, binary)


def _scan(tags: Iterator[Any], stop_at: str = "") -> _Scan:
    scan = _Scan()
    section = ""
    table = ""
    record: dict[int, Any] | None = None
    block: _Block | None = None
    in_block_def = False  # between BLOCK and its first entity
    entity = ""
    expect_name = False  # the tag after (0, SECTION) names the section
    var = ""
    placed: list[Any] = ["", "", False]  # the ENTITIES section's current entity: type, owner, paper
    other_layout = False  # the current entity is in another paper layout's block (*Paper_Space0 ...)
    layout_name = False  # the next (1, name) of a LAYOUT object is its name (after AcDbLayout)
    for code, raw in tags:
        if code == 0:
            value = str(raw).strip()
            entity = value
            var = ""
            other_layout = layout_name = False
            if value == "SECTION":
                expect_name = True
                continue
            if value == "ENDSEC":
                _settle_entity(scan, placed)
                placed = ["", "", False]
                section = ""
                continue
            if value == "EOF":
                scan.saw_eof = True
                break
            if section == "TABLES":
                if value == "TABLE" or value == "ENDTAB":
                    table = ""
                    record = None
                elif table:
                    record = {}
                    scan.tables[table].append(record)
            elif section == "BLOCKS":
                if value == "BLOCK":
                    block = _Block(name="")
                    scan.blocks.append(block)
                    in_block_def = True
                elif value == "ENDBLK":
                    block = None
                    in_block_def = False
                elif block is not None and value not in _SUB_ENTITIES:
                    block.entities += 1
                    in_block_def = False
                    if _other_layout(block.name):  # the active layout's entities are in ENTITIES
                        scan.entity_types[value] += 1
                        scan.paperspace_types[value] += 1
                        other_layout = True
                else:
                    in_block_def = False
            elif section == "ENTITIES":
                _settle_entity(scan, placed)
                placed = [value, "", False] if value not in _SUB_ENTITIES else ["", "", False]
                if value not in _SUB_ENTITIES:
                    scan.entity_types[value] += 1
            elif section == "OBJECTS":
                scan.objects += 1
            continue
        if expect_name:
            expect_name = False
            if code == 2:
                section = str(raw).strip().upper()
                scan.sections.append(section)
                scan.last_section = section
                if section == stop_at:
                    scan.stopped = True
                    return scan
            continue
        if section == "HEADER":
            if code == 9:
                var = str(raw).strip()
                scan.header[var] = []
            elif var:
                scan.header[var].append((code, raw))
        elif section == "TABLES":
            if record is not None:
                record.setdefault(code, raw)
            elif code == 2 and not table and entity == "TABLE":
                table = str(raw).strip().upper()
                scan.tables.setdefault(table, [])
        elif section == "BLOCKS":
            if block is not None and in_block_def:
                if code == 2 and not block.name:
                    block.name = str(raw)
                elif code == 70:
                    block.flags = _int(raw)
                elif code == 1:
                    block.xref_path = str(raw)
            elif other_layout and code == 8:
                scan.entity_layers[str(raw)] += 1
        elif section == "OBJECTS" and entity == "LAYOUT":
            if code == 100 and str(raw).strip() == "AcDbLayout":
                layout_name = True
            elif code == 1 and layout_name:
                scan.layouts.append(str(raw))
                layout_name = False
        elif section == "ENTITIES" and entity not in _SUB_ENTITIES:
            if code == 8:
                scan.entity_layers[str(raw)] += 1
            elif code == 67 and _int(raw) == 1:
                placed[2] = True
            elif code == 330 and not placed[1]:
                placed[1] = str(raw).strip()
    _settle_entity(scan, placed)
    return scan


def _settle_entity(scan: _Scan, placed: list[Any]) -> None:
    """Count the entity just read (type, owner, marked paper space) by where it is placed."""
    kind, owner, paper = placed
    if not kind:
        return
    if paper:
        scan.paperspace_types[kind] += 1
    else:
        scan.owned_types[(owner, kind)] += 1
    placed[0] = ""


def _paper_by_owner(scan: _Scan) -> None:
    """Add the entities owned by a *Paper_Space block record to the paper space counts."""
    paper = {
        str(r.get(5, "")).strip()
        for r in scan.tables.get("BLOCK_RECORD", [])
        if str(r.get(2, "")).upper().startswith("*PAPER_SPACE")
    }
    paper.discard("")
    for (owner, kind), count in scan.owned_types.items():
        if owner in paper:
            scan.paperspace_types[kind] += count
    scan.owned_types.clear()


_ENTITIES_START = re.compile(rb"(?:^|\n)[ \t]*0\r?\nSECTION\r?\n[ \t]*2\r?\nENTITIES\r?\n")
# A "0" line followed by a word with a letter (3DFACE has digits too): group-code lines are
# all digits, so this is always an entity start (or ENDSEC), never a value reading "0".
_ENTITY_START = re.compile(rb"\n[ \t]*0\r?\n([0-9]*[A-Za-z_][A-Za-z0-9_]*)\r?(?=\n)")
_BYTE_CHUNK = 4 << 20


def _count_entities(path: Path, scan: _Scan) -> None:
    """Count ENTITIES by type straight from the bytes, then check the file ends with EOF."""
    with path.open("rb") as fp:
        carry = b""
        start: int | None = None
        while start is None:
            block = fp.read(_BYTE_CHUNK)
            if not block:
                return  # no ENTITIES header in the bytes: _check_complete reports it
            chunk = carry + block
            found = _ENTITIES_START.search(chunk)
            if found:
                start = found.end() - 1  # keep the newline the entity pattern starts with
                carry = chunk[start:]
            else:
                carry = chunk[-64:]
        ended = False
        while not ended:
            block = fp.read(_BYTE_CHUNK)
            chunk = carry + block
            cut = len(chunk) if not block else _third_last_newline(chunk)
            for match in _ENTITY_START.finditer(chunk, 0, len(chunk)):
                if match.start() >= cut:
                    break
                name = match.group(1).decode("latin-1")
                if name == "ENDSEC":
                    ended = True
                    break
                if name not in _SUB_ENTITIES:
                    scan.entity_types[name] += 1
            if not block:
                break
            carry = chunk[cut:]
        if not ended:
            return  # truncated inside ENTITIES: saw_eof stays False
        fp.seek(max(0, path.stat().st_size - 64))
        tail = fp.read().rstrip()
    scan.saw_eof = tail.endswith(b"EOF")
    scan.last_section = "ENTITIES"


def _third_last_newline(chunk: bytes) -> int:
    cut = len(chunk)
    for _ in range(3):
        cut = chunk.rfind(b"\n", 0, cut)
        if cut < 0:
            return 0
    return cut


def _check_complete(path: Path, scan: _Scan) -> None:
    if scan.saw_eof:
        return
    if not scan.sections:
        reason = "no DXF sections found (empty file or not a DXF drawing)"
    else:
        reason = f"it ends inside or after the {scan.last_section} section without the closing EOF tag"
    raise FileInfoError(
        "corrupt_file",
        f"{shown_name(path)} is not a complete DXF drawing: {reason}. The file is probably truncated; "
        "re-export or re-copy it.",
    )


def _answer(scan: _Scan, decode: Any, detail: Detail, binary: bool) -> dict[str, Any]:
    header = scan.header
    version = _text(header, "$ACADVER") or "AC1009"
    release = releases.describe(version)
    notes = []
    if not _text(header, "$ACADVER"):
        has = "has no HEADER section" if "HEADER" not in scan.sections else "names no $ACADVER"
        notes.append(
            f"The file {has}, so its version is not written in it: it is read as R12, as AutoCAD and "
            "ezdxf read such files."
        )
    if "ENTITIES" not in scan.sections:
        notes.append(
            f"The file has no ENTITIES section (sections: {', '.join(scan.sections[:8])}): it holds no "
            "model or paper space drawing of its own."
        )
    out: dict[str, Any] = {
        "dxfEncoding": "binary" if binary else "ascii",
        "acadVersion": version,
        "release": release["release"],
        "products": release["products"],
        "created": _julian(header, "$TDCREATE"),
        "updated": _julian(header, "$TDUPDATE"),
        "units": _units(header),
        "measurement": _MEASUREMENT.get(int(_number(header, "$MEASUREMENT", -1))),
        "extents": _extents(header),
    }
    codepage = _text(header, "$DWGCODEPAGE")
    if codepage:
        out["codepage"] = codepage
    last_saved_by = _text(header, "$LASTSAVEDBY")
    if last_saved_by:
        out["lastSavedBy"] = decode(last_saved_by)

    layers = [_layer(record, decode) for record in scan.tables.get("LAYER", [])]
    user_blocks = [b for b in scan.blocks if not _layout_block(b.name) and not _anonymous(b.name)]
    xrefs = [{"block": decode(b.name), "path": decode(b.xref_path)} for b in scan.blocks if b.flags & 4]
    _paper_by_owner(scan)
    entity_total = sum(scan.entity_types.values())
    paperspace_total = sum(scan.paperspace_types.values())
    entities: dict[str, Any] = {"total": entity_total}
    papers = sum(1 for b in scan.blocks if b.name.upper().startswith(("*PAPER_SPACE", "$PAPER_SPACE")))
    if papers:
        out["paperLayouts"] = papers
    if scan.layouts:
        out["layouts"] = [decode(n) for n in scan.layouts[:MAX_LAYOUTS] if n != "Model"]
    if detail == "summary":  # counted from the bytes (ASCII): the spaces are not told apart
        entities["spaces"] = "model and paper space together (detail 'full' counts each)"
    else:
        entities["modelSpace"] = entity_total - paperspace_total
        entities["paperSpace"] = paperspace_total
    if notes:
        out["notes"] = notes
    if detail == "summary":
        entities["byType"] = dict(scan.entity_types.most_common(_SUMMARY_TYPES))
        entities["otherTypes"] = max(0, len(scan.entity_types) - _SUMMARY_TYPES)
        out["layers"] = capped([layer["name"] for layer in layers], _SUMMARY_LIST)
        out["blocks"] = capped([decode(b.name) for b in user_blocks], _SUMMARY_LIST)
        out["blocks"]["anonymous"] = sum(1 for b in scan.blocks if _anonymous(b.name))
        out["entities"] = entities
        if xrefs:
            out["externalReferences"] = capped(xrefs, 5)
        return out

    entities["byType"] = dict(scan.entity_types.most_common())
    entities["paperSpaceByType"] = dict(scan.paperspace_types.most_common())
    entities["byLayer"] = {decode(k): v for k, v in scan.entity_layers.most_common()}
    out["entities"] = entities
    out["layers"] = layers
    out["blocks"] = [
        {
            "name": decode(b.name),
            "entities": b.entities,
            "anonymous": _anonymous(b.name),
            **({"xrefPath": decode(b.xref_path)} if b.flags & 4 else {}),
        }
        for b in scan.blocks
    ]
    out["externalReferences"] = xrefs
    out["tables"] = {
        name: [decode(str(r.get(2, ""))) for r in records] for name, records in scan.tables.items()
    }
    out["sections"] = scan.sections
    out["objects"] = scan.objects
    out["headerVariables"] = {name: _plain(tags, decode) for name, tags in header.items()}
    return out


def _layout_block(name: str) -> bool:
    """The blocks that hold model and paper space ("$MODEL_SPACE" in R12 drawings)."""
    return name.upper().startswith(("*MODEL_SPACE", "*PAPER_SPACE", "$MODEL_SPACE", "$PAPER_SPACE"))


MAX_LAYOUTS = 500
"""Layout names listed (a drawing has a handful; a damaged one may claim thousands)."""


def _other_layout(name: str) -> bool:
    """The blocks of the paper layouts that are not the active one (*Paper_Space0, ...): their
    entities are in the BLOCKS section, the active layout's (*Paper_Space) in ENTITIES."""
    upper = name.upper()
    return upper.startswith("*PAPER_SPACE") and upper != "*PAPER_SPACE"


def _anonymous(name: str) -> bool:
    """Anonymous blocks (hatches, dimensions, dynamic blocks), not the layout blocks."""
    return name.startswith("*") and not _layout_block(name)


def _layer(record: dict[int, Any], decode: Any) -> dict[str, Any]:
    color = _int(record.get(62, 7))
    flags = _int(record.get(70, 0))
    return {
        "name": decode(str(record.get(2, ""))),
        "color": abs(color),
        "linetype": decode(str(record.get(6, "Continuous"))),
        "on": color >= 0,
        "frozen": bool(flags & 1),
        "locked": bool(flags & 4),
        "plot": _int(record.get(290, 1)) != 0,
    }


def _encoding(scan: _Scan) -> str:
    version = _text(scan.header, "$ACADVER") or "AC1009"
    if version >= "AC1021":
        return "utf-8"
    from ezdxf.tools.codepage import toencoding

    return toencoding(_text(scan.header, "$DWGCODEPAGE") or "ANSI_1252")


def _decoder(encoding: str) -> Any:
    from ezdxf.lldxf.encoding import decode_dxf_unicode

    def decode(text: str) -> str:
        with contextlib.suppress(LookupError, UnicodeEncodeError):
            text = text.encode("latin-1").decode(encoding, errors="replace")
        # characters outside the code page are written \U+00FC, as AutoCAD and ezdxf read them
        return decode_dxf_unicode(text) if "\\U+" in text else text

    return decode


def _identity(text: str) -> str:
    return text


def _first(header: dict[str, list[tuple[int, Any]]], name: str) -> Any:
    tags = header.get(name)
    return tags[0][1] if tags else None


def _text(header: dict[str, list[tuple[int, Any]]], name: str) -> str:
    value = _first(header, name)
    return "" if value is None else str(value).strip()


def _number(header: dict[str, list[tuple[int, Any]]], name: str, default: float) -> float:
    try:
        return float(_first(header, name))
    except (TypeError, ValueError):
        return default


def _int(value: Any) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def _julian(header: dict[str, list[tuple[int, Any]]], name: str) -> str | None:
    value = _number(header, name, 0.0)
    if value <= 1.0:
        return None
    from ezdxf.tools import calendardate

    try:
        return calendardate(value).isoformat(timespec="seconds")
    except (ValueError, OverflowError):
        return None


def _units(header: dict[str, list[tuple[int, Any]]]) -> str | None:
    if "$INSUNITS" not in header:
        return None
    from ezdxf.units import unit_name

    code = int(_number(header, "$INSUNITS", 0))
    try:
        return unit_name(code)
    except (KeyError, IndexError):
        return f"unknown ({code})"


def _point(header: dict[str, list[tuple[int, Any]]], name: str) -> list[float] | None:
    coords = [float(v) for c, v in header.get(name, []) if c in (10, 20, 30)]
    return coords or None


def _extents(header: dict[str, list[tuple[int, Any]]]) -> dict[str, list[float]] | None:
    low, high = _point(header, "$EXTMIN"), _point(header, "$EXTMAX")
    if not low or not high or len(low) != len(high):
        return None
    if any(abs(v) >= _PLACEHOLDER for v in (*low, *high)) or any(
        a > b for a, b in zip(low, high, strict=True)
    ):
        return None  # never computed: the writer left its placeholders
    return {"min": low, "max": high}


def _plain(tags: list[tuple[int, Any]], decode: Any) -> Any:
    from ezdxf.lldxf.types import TYPE_TABLE

    values: list[Any] = []
    for code, value in tags:
        if isinstance(value, bytes):
            values.append(value.hex())
            continue
        kind = TYPE_TABLE.get(code, str)
        if isinstance(value, str):
            try:
                value = decode(value) if kind is str else kind(value)
            except ValueError:
                value = decode(value)
        values.append(value)
    return values[0] if len(values) == 1 else values
