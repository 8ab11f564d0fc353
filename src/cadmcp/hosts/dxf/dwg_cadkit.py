"""The second DWG reader: pycadkit (MIT/Apache-2.0, PyPI, in process), for R13+ drawings LibreDWG cannot read.

Its DXF leaves out several kinds (MULTILEADER, IMAGE, 3DSOLID, REGION, ACAD_TABLE, WIPEOUT, MLINE,
TOLERANCE, surfaces, proxies...), so what it read is compared with what its DXF carried, by kind,
and the difference is reported like LibreDWG's. Optional: ``pip install pycadkit``.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ezdxf.document import Drawing

__all__ = ["available", "convert", "describe", "not_carried_over"]

# pycadkit's kinds of entity and the DXF types they can come out as
_KINDS: dict[str, set[str]] = {
    "line": {"LINE"}, "arc": {"ARC"}, "circle": {"CIRCLE"}, "ellipse": {"ELLIPSE"}, "point": {"POINT"},
    "text": {"TEXT"}, "m_text": {"MTEXT"}, "insert": {"INSERT"}, "dimension": {"DIMENSION"},
    "hatch": {"HATCH"}, "spline": {"SPLINE"}, "polyline": {"LWPOLYLINE", "POLYLINE"},
    "mesh": {"POLYLINE", "MESH"}, "face": {"3DFACE", "SOLID", "TRACE"}, "viewport": {"VIEWPORT"},
    "leader": {"LEADER"}, "image": {"IMAGE"}, "ray": {"RAY"}, "xline": {"XLINE"},
}  # fmt: skip


_DAMAGE = ("error", "mismatch", "truncated", "corrupt", "invalid", "object_map")
"""Words in pycadkit's warning codes that mean the file is damaged (``dwg.sentinel_mismatch``...)."""


def available() -> bool:
    return importlib.util.find_spec("cadkit") is not None


def describe() -> str:
    from importlib.metadata import version

    return f"pycadkit {version('pycadkit')} (in process)"


def convert(dwg: Path, dxf: Path) -> dict[str, Counter[str]]:
    """Write ``dwg`` as DXF to ``dxf``; returns what pycadkit read, by DXF type, per space.

    Raises ValueError with pycadkit's reason when it cannot read the drawing.
    """
    import cadkit

    try:
        document = cadkit.read(str(dwg))
        damage = [w for w in document.warnings or [] if any(d in str(w.get("code")) for d in _DAMAGE)]
        if damage:  # it reads past damage and returns what is left: not a drawing to work on
            raise ValueError(str(damage[0].get("message"))[:200])
        dxf.write_bytes(document.to_dxf_bytes())
        data = document.to_dict()
    except Exception as exc:  # CadkitError and the like: say why
        raise ValueError(str(exc)[:200] or type(exc).__name__) from None
    found: dict[str, Counter[str]] = {"model space": Counter(), "blocks and paper space": Counter()}
    for model in data.get("models") or []:
        where = "model space" if model.get("kind") == "model" else "blocks and paper space"
        found[where].update(_type(e) for e in model.get("entities") or [])
    for block in data.get("blocks") or []:
        found["blocks and paper space"].update(_type(e) for e in block.get("entities") or [])
    return found


def _type(entity: dict[str, Any]) -> str:
    kind = entity.get("kind") or {}
    if kind.get("type") == "unknown":
        return str(kind.get("type_name") or "UNKNOWN").removeprefix("dwg.")
    return str(kind.get("type") or "UNKNOWN")


def not_carried_over(found: dict[str, Counter[str]], doc: Drawing) -> list[dict[str, Any]]:
    """What pycadkit read beyond what the ezdxf drawing has, per group of DXF types it may become."""
    have = {
        "model space": Counter(e.dxftype() for e in doc.modelspace()),
        "blocks and paper space": Counter(),
    }
    for block in doc.blocks:
        if not block.block_record.is_modelspace:
            have["blocks and paper space"].update(e.dxftype() for e in block)
    lost = []
    for where, counts in found.items():
        groups: dict[frozenset[str], int] = {}
        for kind, count in counts.items():
            types = frozenset(_KINDS.get(kind, {kind.upper()}))
            merged = next((g for g in groups if g & types), None)
            if merged is not None:
                groups[merged | types] = groups.pop(merged) + count
            else:
                groups[types] = count
        for types, count in sorted(groups.items(), key=lambda item: sorted(item[0])):
            missing = count - sum(have[where].get(t, 0) for t in types)
            if missing > 0:
                lost.append({"type": "/".join(sorted(types)), "count": missing, "where": where})
    return lost
