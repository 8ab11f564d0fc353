"""IFC metadata: the STEP header (parsed by IfcOpenShell from the first megabyte), the
project name and class counts from a byte scan for ``summary``, and a real IfcOpenShell
open for ``full``."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from cadmcp.fileinfo.errors import FileInfoError, corrupt, shown_name
from cadmcp.fileinfo.ifcleftout import left_out_entities, left_out_text
from cadmcp.fileinfo.paths import Detail
from cadmcp.fileinfo.steptext import RunEscaper

_HEAD_BYTES = 1 << 20
_CHUNK = 1 << 20
# Above this size the summary names the project but does not count instances.
SUMMARY_COUNT_LIMIT = 64 << 20
_SUMMARY_CLASSES = 10
_HEADER = re.compile(rb"HEADER\s*;(.*?)ENDSEC\s*;", re.S)
_SCHEMA = re.compile(rb"FILE_SCHEMA\s*\(\s*\(\s*'([^']*)'", re.S)
_INSTANCE = re.compile(rb"#\d+\s*=\s*(IFC[A-Z0-9_]*)\s*\(", re.I)
_PROJECT = re.compile(rb"#\d+\s*=\s*IFCPROJECT\s*\(", re.I)
_STRING = re.compile(rb"'(?:[^']|'')*'")
_VIEW = re.compile(r"ViewDefinition\s*\[([^\]]*)\]")


def read(path: Path, detail: Detail) -> dict[str, Any]:
    """The IFC answer for ``path`` at the given detail level."""
    with path.open("rb") as fp:
        head = fp.read(_HEAD_BYTES)
        fp.seek(max(0, path.stat().st_size - 4096))
        tail = fp.read()
    _check_spf(path, head, tail)
    out: dict[str, Any] = _header(path, head)
    if detail == "summary":
        out.update(_scan_summary(path, out["schema"]))
    else:
        out.update(_open_full(path))
    return out


def _check_spf(path: Path, head: bytes, tail: bytes) -> None:
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start.startswith(b"PK"):
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} is a zip archive (an .ifcZIP renamed to .ifc?); "
            "unzip it and read the .ifc inside.",
        )
    if start.startswith(b"<"):
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} is XML (ifcXML?), not an IFC-SPF text file; "
            "export it as .ifc (STEP) to read it.",
        )
    if not start.startswith(b"ISO-10303-21"):
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} does not start with ISO-10303-21, so it is not an IFC-SPF file; "
            "check that the file is an IFC model.",
        )
    if b"END-ISO-10303-21" not in tail.upper():
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} ends without END-ISO-10303-21; the file is truncated. "
            "Re-export or re-copy it.",
        )


def _header(path: Path, head: bytes) -> dict[str, Any]:
    block = _HEADER.search(head)
    if block is None:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} has no HEADER section in its first megabyte; "
            "the file is damaged or not IFC.",
        )
    schema_match = _SCHEMA.search(block.group(1))
    if schema_match is None:
        raise FileInfoError(
            "corrupt_file",
            f"{shown_name(path)} has no FILE_SCHEMA in its header, so its IFC schema is unknown; "
            "the file is damaged or was not written by an IFC exporter.",
        )
    schema = schema_match.group(1).decode("latin-1").strip()
    # Any schema name parses in the stub; the real one is reported from the text above.
    # raw UTF-8 or Windows-1252 bytes (no STEP) as escapes: IfcOpenShell would drop them
    text = RunEscaper().escape(_SCHEMA.sub(b"FILE_SCHEMA(('IFC4'", block.group(1))).decode("latin-1")
    stub = f"ISO-10303-21;\nHEADER;{text}ENDSEC;\nDATA;\nENDSEC;\nEND-ISO-10303-21;\n"
    import ifcopenshell

    try:
        parsed = ifcopenshell.file.from_string(stub)
        description = parsed.header.file_description
        name = parsed.header.file_name
        header = {
            "description": _names(description.description),
            "implementationLevel": description.implementation_level,
            "name": name.name,
            "timeStamp": name.time_stamp,
            "author": _names(name.author),
            "organization": _names(name.organization),
            "preprocessorVersion": name.preprocessor_version,
            "originatingSystem": name.originating_system,
            "authorization": name.authorization,
        }
    except Exception as exc:  # IfcOpenShell raises RuntimeError/AttributeError on bad headers
        raise corrupt(path, "an IFC header", exc) from None
    views = [m.group(1).strip() for d in header["description"] for m in [_VIEW.search(d)] if m]
    out: dict[str, Any] = {"schema": schema, "header": header}
    if views:
        out["viewDefinition"] = views[0]
    return out


def _names(values: Any) -> list[str]:
    """A header's list of strings; a single string where the schema wants a list (some exporters
    write FILE_DESCRIPTION('ViewDefinition [...]', '2;1')) is one entry, not its letters."""
    if isinstance(values, str):
        return [values] if values else []
    return [v for v in (values or ()) if v]


def _scan_summary(path: Path, schema: str | None) -> dict[str, Any]:
    """Project name and, for files up to the limit, instance counts from a byte scan."""
    count = path.stat().st_size <= SUMMARY_COUNT_LIMIT
    classes: Counter[str] = Counter()
    project_raw: bytes | None = None
    with path.open("rb") as fp:
        while True:
            chunk = fp.read(_CHUNK)
            if not chunk:
                break
            chunk += fp.readline()  # end on a line boundary so no instance is split
            if project_raw is None and (found := _PROJECT.search(chunk)):
                project_raw = _params(chunk, found.end(), fp)
            if count:
                classes.update(m.group(1).upper().decode("ascii") for m in _INSTANCE.finditer(chunk))
            elif project_raw is not None:
                break
    out: dict[str, Any] = {"project": _project(project_raw)}
    if count:
        out["instances"] = sum(classes.values())
        products = _products(classes, schema)
        if products is not None:
            out["elementCounts"] = dict(products.most_common(_SUMMARY_CLASSES))
            out["otherElementClasses"] = max(0, len(products) - _SUMMARY_CLASSES)
            kinds = _kinds(products)
            if kinds != products:  # IfcWallStandardCase beside IfcWall: the walls are both
                out["elementKinds"] = dict(kinds.most_common(_SUMMARY_CLASSES))
        else:
            out["note"] = (
                f"Element classes are not counted: IfcOpenShell has no schema for {schema or 'this file'}; "
                "countsByClass in detail='full' needs one too."
            )
    else:
        out["elementCounts"] = None
        out["note"] = "File too large to count classes in a summary; ask for detail='full'."
    return out


def _params(chunk: bytes, start: int, fp: Any) -> bytes:
    """The raw parameter text of the instance whose '(' ends at ``start``."""
    text = chunk[start:]
    while b";" not in text:  # an instance split over the chunk end
        more = fp.read(4096)
        if not more:
            break
        text += more
    return text


def _project(raw: bytes | None) -> dict[str, Any] | None:
    """IfcProject's Name, LongName and Phase from its raw parameters."""
    if raw is None:
        return None
    values = _split_params(raw)
    fields = {"name": 2, "description": 3, "longName": 5, "phase": 6}
    out: dict[str, Any] = {}
    for key, index in fields.items():
        token = values[index] if index < len(values) else b"$"
        out[key] = _decode_string(token) if token.startswith(b"'") else None
    return out


def _split_params(raw: bytes) -> list[bytes]:
    """Top-level comma-separated parameters up to the closing parenthesis."""
    params: list[bytes] = []
    depth = 0
    i = 0
    start = 0
    while i < len(raw):
        ch = raw[i : i + 1]
        if ch == b"'":
            match = _STRING.match(raw, i)
            i = match.end() if match else len(raw)
            continue
        if ch == b"(":
            depth += 1
        elif ch == b")":
            if depth == 0:
                params.append(raw[start:i].strip())
                return params
            depth -= 1
        elif ch == b"," and depth == 0:
            params.append(raw[start:i].strip())
            start = i + 1
        i += 1
    params.append(raw[start:].strip())
    return params


def _decode_string(token: bytes) -> str:
    """A STEP string literal decoded (\\X2\\ and friends) by IfcOpenShell's own parser."""
    import ifcopenshell

    stub = (
        "ISO-10303-21;\nHEADER;\nFILE_DESCRIPTION((''),'2;1');\n"
        f"FILE_NAME({RunEscaper().escape(token).decode('latin-1')},'',(''),(''),'','','');\n"
        "FILE_SCHEMA(('IFC4'));\nENDSEC;\nDATA;\nENDSEC;\nEND-ISO-10303-21;\n"
    )
    try:
        return str(ifcopenshell.file.from_string(stub).header.file_name.name or "")
    except Exception:  # an odd literal: show it as written rather than fail the whole read
        return token[1:-1].replace(b"''", b"'").decode("latin-1")


def _products(classes: Counter[str], schema: str | None) -> Counter[str] | None:
    """The counts of IfcProduct subtypes (walls, doors, storeys...), named as the schema spells them."""
    from ifcopenshell import ifcopenshell_wrapper

    from cadmcp.fileinfo.ifcschema import reader_schema

    release = reader_schema(schema or "")  # IFC4X3_RC2 is read with IFC4X3_ADD2's classes
    if release is None:
        return None
    try:
        declarations = ifcopenshell_wrapper.schema_by_name(release)
    except Exception:  # a schema IfcOpenShell does not know: no filter
        return None
    products: Counter[str] = Counter()
    for upper, n in classes.items():
        try:
            declaration = declarations.declaration_by_name(upper)
        except Exception:
            continue
        if _is_product(declaration):
            products[declaration.name()] = n
    return products


def _kinds(products: Counter[str]) -> Counter[str]:
    """Element counts with the standard and elemented cases (IfcWallStandardCase, IfcSlabElementedCase)
    counted in their kind (IfcWall, IfcSlab), as a person counts walls."""
    kinds: Counter[str] = Counter()
    for name, n in products.items():
        for case in ("StandardCase", "ElementedCase"):
            name = name.removesuffix(case)
        kinds[name] += n
    return kinds


def _is_product(declaration: Any) -> bool:
    current = declaration.as_entity() if hasattr(declaration, "as_entity") else None
    while current is not None:
        if current.name() == "IfcProduct":
            return True
        current = current.supertype()
    return False


def _open_full(path: Path) -> dict[str, Any]:
    import ifcopenshell

    try:
        model = ifcopenshell.open(str(path))
    except Exception as exc:
        raise corrupt(path, "an IFC model", exc) from None
    classes = Counter(entity.is_a() for entity in model)
    products = Counter(p.is_a() for p in model.by_type("IfcProduct"))
    projects = model.by_type("IfcProject")
    out: dict[str, Any] = {
        "project": _project_full(projects[0]) if projects else None,
        "instances": sum(classes.values()),
        "elementCounts": dict(products.most_common()),
        "countsByClass": dict(classes.most_common()),
        "spatialStructure": _spatial(model),
        "applications": [
            {"name": a.ApplicationFullName, "version": a.Version, "developer": _org(a.ApplicationDeveloper)}
            for a in model.by_type("IfcApplication")
        ],
        "lengthUnit": _length_unit(model),
    }
    if left_out := left_out_entities(path, model):
        out["leftOut"] = dict(left_out.most_common())
        out["note"] = (
            f"IfcOpenShell leaves out {left_out_text(left_out, model.schema_identifier)}: the counts above "
            "lack them, and a model opened from this file lacks them too."
        )
    return out


def _project_full(project: Any) -> dict[str, Any]:
    return {
        "name": project.Name,
        "description": project.Description,
        "longName": project.LongName,
        "phase": project.Phase,
        "globalId": project.GlobalId,
    }


def _spatial(model: Any) -> list[dict[str, Any]]:
    items = []
    for cls in ("IfcSite", "IfcBuilding", "IfcBuildingStorey"):
        for element in model.by_type(cls):
            item: dict[str, Any] = {"class": cls, "name": element.Name, "globalId": element.GlobalId}
            if cls == "IfcBuildingStorey":
                item["elevation"] = element.Elevation
            items.append(item)
    return items


def _org(organization: Any) -> str | None:
    return getattr(organization, "Name", None) if organization is not None else None


def _length_unit(model: Any) -> str | None:
    try:
        import ifcopenshell.util.unit

        unit = ifcopenshell.util.unit.get_project_unit(model, "LENGTHUNIT")
    except Exception:  # a model without a unit assignment
        return None
    if unit is None:
        return None
    prefix = getattr(unit, "Prefix", None) or ""
    return f"{prefix}{unit.Name}".lower() if unit.is_a("IfcSIUnit") else getattr(unit, "Name", None)
