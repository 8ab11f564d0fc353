"""Revit file metadata (.rvt/.rfa/.rte/.rft) from the OLE compound file, no Revit needed.

``BasicFileInfo`` (version, build, worksharing, paths, locale, GUID) is read with olefile
and a regex over its UTF-16LE text at either byte alignment, so pre-2019 layouts without
``Format:`` read too; the ``rvt`` package's reader fills anything the text lacks and
counts elements for ``full``. ``PartAtom`` (families) is Atom XML; ``TransmissionData``
is scanned for the paths of linked files.
"""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from cadmcp.fileinfo.errors import FileInfoError, corrupt, shown_name
from cadmcp.fileinfo.paths import Detail, capped

FILE_TYPES = {".rvt": "project", ".rfa": "family", ".rte": "project template", ".rft": "family template"}
_KNOWN_KEYS = (
    "Worksharing", "Username", "Central Model Path", "Format", "Build", "Revit Build", "Last Save Path",
    "Locale when saved", "Unique Document GUID", "Unique Document Increments", "Open Workset Default",
)  # fmt: skip
_LINE = re.compile(r"([A-Z][A-Za-z0-9'’ ]{0,90}?): ?([^\r\n\x00]*)")
_YEAR = re.compile(r"Revit(?:\s+[A-Z][A-Za-z]*)*\s+(\d{4})")
_PRODUCT = re.compile(r"(Autodesk Revit[^(]*?)\s*\(")
_BUILD = re.compile(r"(\d{8}_\d{4}(?:\(x\d{2}\))?)")
_PRINTABLE = re.compile(r"[\x20-\x7e\u00a0-\u024f]{3,}")
_PATH_START = re.compile(r"[A-Za-z]:\\|\\\\|\.{1,2}\\|/|[A-Za-z]:/")
_PATH_END = re.compile(r"\.[A-Za-z0-9]{2,5}$")
_PATH_TYPES = ("Relative", "Absolute", "Server")
_LOAD_STATES = ("LocallyUnloaded", "Unloaded", "Loaded", "NotFound", "Unknown")
_LINK_KINDS = {
    ".rvt": "Revit link", ".rfa": "Revit family", ".dwg": "CAD link", ".dxf": "CAD link", ".dgn": "CAD link",
    ".sat": "CAD link", ".skp": "CAD link", ".3dm": "CAD link", ".ifc": "IFC link", ".nwd": "Navisworks",
    ".nwc": "Navisworks", ".rcp": "point cloud", ".rcs": "point cloud", ".pdf": "PDF", ".txt": "table",
    ".png": "image", ".jpg": "image", ".jpeg": "image", ".bmp": "image", ".tif": "image",
    ".dwf": "DWF markup", ".dwfx": "DWF markup",
}  # fmt: skip
_ATOM = "{http://www.w3.org/2005/Atom}"
_PARTATOM = "{urn:schemas-autodesk-com:partatom}"
_SUMMARY_LINKS = 5
_FREESECT = 0xFFFFFFFF


def read(path: Path, detail: Detail) -> dict[str, Any]:
    """The Revit answer for ``path`` at the given detail level."""
    streams = _read_streams(path)
    properties = _basic_file_info(streams["BasicFileInfo"])
    metadata, reader_note = _rvt_metadata(path)
    out: dict[str, Any] = {"fileType": FILE_TYPES.get(path.suffix.lower())}
    out.update(_identity(properties, metadata))
    out["reader"] = "rvt+olefile" if metadata is not None else "olefile"
    if reader_note and detail == "full":
        out["rvtNote"] = reader_note
    if streams.get("PartAtom"):
        out["partAtom"] = _part_atom(streams["PartAtom"], detail)
    links = _links(streams.get("TransmissionData", b""))
    out["hasPreview"] = "RevitPreview4.0" in streams["_names"]
    if detail == "summary":
        out["externalReferences"] = capped(links, _SUMMARY_LINKS) if links else None
        return out
    out["externalReferences"] = links
    out["basicFileInfo"] = [{"key": k, "value": v} for k, v in properties]
    out["streams"] = streams["_names"]
    out.update(_element_counts(path))
    return out


def _read_streams(path: Path) -> dict[str, Any]:
    import olefile

    if not olefile.isOleFile(str(path)):
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} is not an OLE compound file, so it is not a Revit file (or it is damaged); "
            "check the file, or rename it if it is another format.",
        )
    try:
        with olefile.OleFileIO(str(path)) as ole:
            _check_size(path, ole)
            names = ["/".join(parts) for parts in ole.listdir(streams=True, storages=False)]
            if not ole.exists("BasicFileInfo"):
                raise FileInfoError(
                    "corrupt_file",
                    f"{shown_name(path)} is a compound file without a BasicFileInfo stream, so it is "
                    "not a Revit file (perhaps another OLE document renamed); check its origin.",
                )
            found: dict[str, Any] = {"_names": sorted(names)}
            for name in ("BasicFileInfo", "PartAtom", "TransmissionData"):
                if ole.exists(name):
                    found[name] = ole.openstream(name).read()
            return found
    except FileInfoError:
        raise
    except Exception as exc:  # olefile raises OSError/struct.error on damaged sectors
        raise corrupt(path, "a Revit compound file", exc) from None


def _check_size(path: Path, ole: Any) -> None:
    """A compound file cut short still opens; its sector table shows how long it should be."""
    size = path.stat().st_size
    sector = ole.sector_size
    needed = 0
    with path.open("rb") as fp:
        header = fp.read(512)
        fat_sectors = struct.unpack_from("<I", header, 44)[0]
        difat = struct.unpack_from("<109I", header, 76)[: min(fat_sectors, 109)]
        for fat_sector in difat:
            needed = max(needed, (fat_sector + 2) * sector)
            fp.seek((fat_sector + 1) * sector)
            entries = fp.read(sector)
            count = len(entries) // 4
            for index, nxt in enumerate(struct.unpack_from(f"<{count}I", entries)):
                if nxt != _FREESECT:
                    needed = max(needed, (fat_sector * (sector // 4) + index + 2) * sector)
    if size < needed:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} is truncated: it is {size} bytes but its sector table needs {needed}. "
            "Re-copy the file or open it in Revit to repair it.",
        )


def _basic_file_info(data: bytes) -> list[tuple[str, str]]:
    """The ``Key: value`` lines of BasicFileInfo, read at whichever byte alignment holds them."""
    best: list[tuple[str, str]] = []
    best_score = -1
    for offset in (0, 1):
        text = data[offset : len(data) - (len(data) - offset) % 2].decode("utf-16-le", errors="replace")
        # Keys of one or two letters are drive letters of paths in the binary prefix.
        pairs = [
            (m.group(1).strip(), m.group(2).strip()) for m in _LINE.finditer(text) if len(m.group(1)) > 2
        ]
        score = sum(1 for key, _ in pairs if key in _KNOWN_KEYS)
        if score > best_score:
            best, best_score = pairs, score
    if best_score <= 0:
        return []
    return best


def _rvt_metadata(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``rvt.read_metadata`` when it can read the file (it rejects some pre-2019 layouts)."""
    try:
        import rvt

        return rvt.read_metadata(str(path)), None
    except (ValueError, OSError) as exc:
        return None, f"the rvt reader could not read this file's metadata ({type(exc).__name__}); olefile did"


def _identity(pairs: list[tuple[str, str]], metadata: dict[str, Any] | None) -> dict[str, Any]:
    props = dict(pairs)
    meta = metadata or {}
    revit_build = props.get("Revit Build", "")
    version: int | None = None
    if props.get("Format", "").isdigit():
        version = int(props["Format"])
    elif match := _YEAR.search(revit_build):
        version = int(match.group(1))
    elif isinstance(meta.get("revit_version"), int):
        version = meta["revit_version"]
    build = props.get("Build") or _first(_BUILD, revit_build) or meta.get("build")
    if not pairs and metadata is None:
        raise FileInfoError(
            "corrupt_file",
            "BasicFileInfo holds no readable Key: value text, so the Revit version is unknown; "
            "the file may be damaged or from a Revit release this reader does not know.",
        )
    worksharing = props.get("Worksharing") or meta.get("worksharing")
    out: dict[str, Any] = {
        "revitVersion": version,
        "build": build,
        "product": _first(_PRODUCT, revit_build) or _product(props.get("Author"), version),
        "worksharing": worksharing,
        "workshared": None if worksharing is None else worksharing.strip().lower() != "not enabled",
        "username": props.get("Username") or meta.get("username") or None,
        "centralModelPath": props.get("Central Model Path") or meta.get("central_model_path") or None,
        "lastSavePath": props.get("Last Save Path") or meta.get("last_save_path") or None,
        "locale": props.get("Locale when saved") or meta.get("locale"),
        "documentGuid": props.get("Unique Document GUID") or meta.get("document_guid"),
        "documentIncrements": _int(props.get("Unique Document Increments"))
        or meta.get("document_increments"),
    }
    if meta.get("last_saved"):
        out["lastSaved"] = meta["last_saved"]
    cloud = props.get("IsSingleUserCloudModel")
    if cloud is not None:
        out["singleUserCloudModel"] = cloud.strip().upper() in ("T", "TRUE", "1")
    return out


def _product(author: str | None, version: int | None) -> str | None:
    if not author:
        return None
    return f"{author} {version}" if version and str(version) not in author else author


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1).strip() if match else None


def _int(value: str | None) -> int | None:
    return int(value) if value and value.strip().isdigit() else None


def _part_atom(data: bytes, detail: Detail) -> dict[str, Any]:
    """Title, category, product version and family types from the PartAtom Atom entry."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line, column = getattr(exc, "position", (0, 0))
        return {
            "error": f"PartAtom is not well-formed XML (at line {line}, column {column}); "
            "the rest of the file read fine."
        }
    categories = [
        {
            "term": (c.findtext(f"{_ATOM}term") or "").strip(),
            "scheme": (c.findtext(f"{_ATOM}scheme") or "").strip(),
        }
        for c in root.findall(f"{_ATOM}category")
    ]
    design = root.find(f"{_ATOM}link/{_PARTATOM}design-file")
    types = [(p.findtext(f"{_ATOM}title") or "").strip() for p in root.iter(f"{_PARTATOM}part")]
    out: dict[str, Any] = {
        "title": (root.findtext(f"{_ATOM}title") or "").strip() or None,
        "updated": (root.findtext(f"{_ATOM}updated") or "").strip() or None,
        "category": next((c["term"] for c in categories if c["scheme"] == "adsk:revit:grouping"), None),
        "omniClass": next((c["term"] for c in categories if c["scheme"].startswith("std:oc")), None),
        "product": design.findtext(f"{_PARTATOM}product") if design is not None else None,
        "productVersion": design.findtext(f"{_PARTATOM}product-version") if design is not None else None,
        "familyTypes": capped(types, 10) if detail == "summary" else types,
    }
    if detail == "full":
        out["categories"] = categories
        out["taxonomies"] = [
            (t.findtext(f"{_ATOM}term") or "").strip() for t in root.findall(f"{_PARTATOM}taxonomy")
        ]
    return out


def _links(data: bytes) -> list[dict[str, Any]]:
    """Linked-file paths found among TransmissionData's UTF-16LE strings (best effort: the
    record layout is not published), with the path type and load state that follow them."""
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    for offset in (0, 1):
        text = data[offset : len(data) - (len(data) - offset) % 2].decode("utf-16-le", errors="replace")
        runs = list(_PRINTABLE.finditer(text))
        for i, run in enumerate(runs):
            start = _PATH_START.search(run.group(0))
            candidate = run.group(0)[start.start() :] if start else run.group(0)
            if not (("\\" in candidate or "/" in candidate) and _PATH_END.search(candidate)):
                continue
            extension = "." + candidate.rsplit(".", 1)[-1].lower()
            link: dict[str, Any] = {"path": candidate, "kind": _LINK_KINDS.get(extension, "file")}
            for follower in runs[i + 1 : i + 3]:
                if word := _word(follower.group(0), _PATH_TYPES):
                    link["pathType"] = word
                elif word := _word(follower.group(0), _LOAD_STATES):
                    link["loadState"] = word
            position = offset + 2 * run.start()
            if candidate not in found or position < found[candidate][0]:
                found[candidate] = (position, link)
    return [link for _, link in sorted(found.values(), key=lambda item: item[0])]


def _word(run: str, vocabulary: tuple[str, ...]) -> str | None:
    """The vocabulary word a string run starts with (the bytes after it may decode as letters)."""
    return next((word for word in vocabulary if run.startswith(word)), None)


def _element_counts(path: Path) -> dict[str, Any]:
    """Decoded element counts from ``rvt`` (Revit 2023-2025 files; older ones may not decode)."""
    try:
        import rvt

        counts = rvt.RevitFile(str(path)).element_counts()
    except (ValueError, OSError) as exc:
        return {
            "elementCounts": None,
            "elementCountsNote": f"elements could not be decoded ({type(exc).__name__}): the rvt reader "
            "decodes Revit 2023-2025 files; others may not decode",
        }
    return {"elementCounts": {"total": counts.get("total"), "byClass": counts.get("by_class")}}
