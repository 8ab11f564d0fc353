"""What a drawing view shows: the entities drawn, left out of the frame, hidden or not drawable.

The renderer records what ezdxf's frontend visits and skips (:class:`Coverage`); this module
turns that into the notes beside the image and its structured content, so a picture that
leaves something out says what and why.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from cadmcp.wire.echo import echo

__all__ = ["Coverage", "describe", "xref_blocks"]

LISTED = 8
"""Entities named one by one in a note (all are counted)."""
STRUCTURED = 50
"""Entities listed in structured content."""
HIDDEN_SHARE = 4
"""A view says what it hides when at least 1 in this many of its entities is hidden."""
MAX_LACKING = 40
"""Characters without a glyph kept per entity."""
ACIS = frozenset(
    {
        "3DSOLID", "BODY", "REGION", "SURFACE", "EXTRUDEDSURFACE", "LOFTEDSURFACE", "REVOLVEDSURFACE",
        "SWEPTSURFACE", "PLANESURFACE", "NURBSURFACE",
    }
)  # fmt: skip
NOT_GEOMETRY = frozenset({"VIEWPORT", "ATTDEF"})
"""Entity kinds that draw nothing of their own in a view (their content is drawn elsewhere)."""


@dataclass
class Coverage:
    """Filled while a layout is drawn: top-level entities visited, and what the frontend skipped."""

    visited: list[Any] = field(default_factory=list)
    skipped: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    """Top-level handle -> (entity kind, reason) of each skipped entity or sub-entity."""
    current: str = ""
    lacking: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Top-level handle -> (characters its texts' font has no glyph for, that font's file)."""

    def visit(self, entity: Any) -> None:
        self.visited.append(entity)
        self.current = entity.dxf.handle or ""

    def skip(self, entity: Any, reason: str) -> None:
        """Frontend hook (``Frontend.skip_entity``)."""
        kind = entity.dxftype()
        if kind in ACIS and reason == "unsupported":
            reason = "ACIS solid, no modeller here to draw it"
        self.skipped[self.current].append((kind, reason))

    def lacks(self, chars: str, font: str) -> None:
        """Note characters the font drawing the current entity's text has no glyph for."""
        had, _ = self.lacking.get(self.current, ("", ""))
        if len(had) < MAX_LACKING:
            self.lacking[self.current] = (had + "".join(c for c in chars if c not in had), font)


def xref_blocks(doc: Any) -> dict[str, str]:
    """Block names of external references, with the referenced file's path."""
    out: dict[str, str] = {}
    for block_layout in doc.blocks:
        block = block_layout.block
        if block is not None and block.is_xref:
            out[block_layout.name] = block.dxf.get("xref_path", "") or "?"
    return out


def _xrefs_inside(doc: Any, xrefs: dict[str, str]) -> dict[str, set[str]]:
    """Block name -> the external references its content inserts, directly or through nested blocks."""
    if not xrefs:
        return {}
    direct: dict[str, set[str]] = {}
    for block_layout in doc.blocks:
        if block_layout.name not in xrefs:
            direct[block_layout.name] = {e.dxf.name for e in block_layout.query("INSERT")}
    reach = {name: inserted & xrefs.keys() for name, inserted in direct.items()}
    for _ in range(len(direct)):  # nesting depth is at most the number of blocks
        changed = False
        for name, inserted in direct.items():
            more = set().union(*(reach.get(child, set()) for child in inserted)) - reach[name]
            if more:
                reach[name] |= more
                changed = True
        if not changed:
            break
    return {name: found for name, found in reach.items() if found}


def layer_of(entity: Any) -> str | None:
    """The entity's layer (None for the few kinds that have none, e.g. SECTIONOBJECT)."""
    try:
        return str(entity.dxf.get("layer", "0"))
    except Exception:  # ezdxf raises for attributes a kind does not define
        return None


def _label(entity: Any) -> str:
    kind = entity.dxftype()
    text = f"{kind} #{entity.dxf.handle}"
    if kind == "INSERT":
        text += f" {echo(entity.dxf.name, 40)}"
    return text + f" on layer {echo(layer_of(entity), 40)}"


def _why_nothing(entity: Any, doc: Any, xrefs: dict[str, str], skipped: list[tuple[str, str]]) -> str | None:
    """Why a visible top-level entity produced no lines; None when it has nothing to show."""
    kind = entity.dxftype()
    if kind in NOT_GEOMETRY:
        return None
    if kind in ("TEXT", "MTEXT", "ATTRIB") and not (
        entity.plain_text() if kind == "MTEXT" else entity.dxf.text
    ):
        return None  # empty text
    if kind in ACIS:
        return "an ACIS solid or surface: ezdxf has no solid modeller to draw it and it has no proxy graphic"
    if kind == "INSERT":
        name = entity.dxf.name
        if name in xrefs:
            return f"external reference to {echo(xrefs[name], 80)}: the referenced drawing is not loaded here"
        block = doc.blocks.get(name)
        if block is None:
            return f"its block definition {echo(name, 40)} is missing"
        if not len(block):
            return f"its block {echo(name, 40)} is empty"
    reasons = sorted({f"{sub}: {reason}" for sub, reason in skipped if reason != "invisible"})
    if reasons:
        return "not drawn (" + "; ".join(reasons[:3]) + ")"
    if kind == "INSERT":
        return "nothing in its block produced lines (every part skipped, hidden or empty)"
    if kind == "ACAD_PROXY_ENTITY":
        return "a custom object of another application, without proxy graphic"
    if kind == "ACAD_TABLE":
        return "a table: ezdxf draws tables only from their proxy graphic, which this one lacks"
    return "ezdxf's renderer produced nothing for it"


def describe(
    doc: Any,
    coverage: Coverage,
    drawn: set[str],
    outside: list[tuple[str, Any, Any]],
    xrefs: dict[str, str],
) -> tuple[list[str], dict[str, Any]]:
    """Notes and structured content for a view.

    ``drawn`` holds the handles of top-level entities that produced lines; ``outside`` the
    (handle, box min, box max) of the ones left out of the frame.
    """
    hidden = 0
    hidden_on: Counter[str] = Counter()
    not_drawn: list[tuple[Any, str]] = []
    for entity in coverage.visited:
        handle = entity.dxf.handle or ""
        if handle in drawn:
            continue
        skipped = coverage.skipped.get(handle, [])
        if skipped and skipped[0] == (entity.dxftype(), "invisible"):
            hidden += 1
            hidden_on[layer_of(entity) or "?"] += 1
            continue
        reason = _why_nothing(entity, doc, xrefs, skipped)
        if reason is not None:
            not_drawn.append((entity, reason))
    partly: list[tuple[Any, str]] = []  # drawn, but parts of them were skipped
    nested_xrefs = _xrefs_inside(doc, xrefs)
    for entity in coverage.visited:
        handle = entity.dxf.handle or ""
        if handle not in drawn:
            continue
        skips = coverage.skipped.get(handle, [])
        reasons = Counter(f"{sub}: {reason}" for sub, reason in skips if reason != "invisible")
        missing = [f"{reason} x{n}" for reason, n in reasons.most_common(3)]
        if entity.dxftype() == "INSERT" and entity.dxf.name in nested_xrefs:
            missing += [
                f"external reference {echo(name, 40)} ({echo(xrefs[name], 60)}) in its block is not loaded"
                for name in sorted(nested_xrefs[entity.dxf.name])[:3]
            ]
        if missing:
            partly.append((entity, "; ".join(missing)))

    notes: list[str] = []
    if not_drawn or partly:
        by_reason: dict[str, list[Any]] = defaultdict(list)
        for entity, reason in [*not_drawn, *partly]:
            by_reason[reason].append(entity)
        parts = []
        for reason, entities in list(by_reason.items())[:LISTED]:
            names = ", ".join(_label(e) for e in entities[:3])
            more = f" and {len(entities) - 3} more" if len(entities) > 3 else ""
            parts.append(f"{names}{more}: {reason}")
        lead = f"{len(not_drawn)} entities are in the drawing but not in the picture"
        if partly:
            lead += f"; {len(partly)} are drawn without some of their parts"
        notes.append(f"[NOT DRAWN] {lead}. " + ". ".join(parts) + ".")
    if hidden and hidden * HIDDEN_SHARE >= len(coverage.visited):
        layers = ", ".join(f"{echo(name, 30)} ({n})" for name, n in hidden_on.most_common(LISTED))
        more = f" and {len(hidden_on) - LISTED} more layers" if len(hidden_on) > LISTED else ""
        notes.append(
            f"[HIDDEN] {hidden} of the {len(coverage.visited)} entities are not drawn because their layers "
            f"are off or frozen (or they are marked invisible), as AutoCAD shows the drawing: on {layers}"
            f"{more}. Pass layers=[...] naming the layers to draw them."
        )
    if outside:
        entities = [doc.entitydb.get(handle) for handle, _, _ in outside]
        listed = "; ".join(
            f"{_label(e)} at {_point(lo, hi)}" for e, (_, lo, hi) in zip(entities, outside, strict=True) if e
        )
        listed = "; ".join(listed.split("; ")[:LISTED])
        more = f"; and {len(outside) - LISTED} more" if len(outside) > LISTED else ""
        notes.append(
            f"[PARTLY FRAMED] Zoomed to where most of the drawing is; {len(outside)} entities far from it or "
            f"much larger than it are left out of the frame: {listed}{more}. Call view_screenshot with "
            "extents='all' to see everything, or window=[x1, y1, x2, y2] to look at a region."
        )
    lacking = {h: v for h, v in coverage.lacking.items() if h in drawn}
    if lacking:
        notes.append(_boxes_note(doc, lacking))
    structured = {
        "entities": {
            "visited": len(coverage.visited),
            "drawn": sum(1 for e in coverage.visited if (e.dxf.handle or "") in drawn),
            # a layout's viewports show model space: their content is drawn, not they themselves
            "viewports": sum(1 for e in coverage.visited if e.dxftype() == "VIEWPORT"),
            "hidden": hidden,
            "notDrawn": len(not_drawn),
            "outsideFrame": len(outside),
        },
        "notDrawn": [
            {"handle": e.dxf.handle, "type": e.dxftype(), "layer": layer_of(e), "reason": reason}
            for e, reason in not_drawn[:STRUCTURED]
        ],
        "partlyDrawn": [
            {"handle": e.dxf.handle, "type": e.dxftype(), "layer": layer_of(e), "reason": reason}
            for e, reason in partly[:STRUCTURED]
        ],
        "outsideFrame": [
            {
                "handle": handle,
                "type": entity.dxftype() if entity is not None else None,
                "layer": layer_of(entity) if entity is not None else None,
                "min": _round(lo),
                "max": _round(hi),
            }
            for (handle, lo, hi), entity in zip(
                outside[:STRUCTURED], [doc.entitydb.get(h) for h, _, _ in outside[:STRUCTURED]], strict=True
            )
        ],
    }
    if lacking:
        structured["textAsBoxes"] = [
            {"handle": h, "characters": chars, "font": font}
            for h, (chars, font) in list(lacking.items())[:STRUCTURED]
        ]
    return notes, structured


def _boxes_note(doc: Any, lacking: dict[str, tuple[str, str]]) -> str:
    """What a view drew as empty boxes: texts whose font here has no glyph for some characters."""
    chars = "".join(dict.fromkeys(c for found, _ in lacking.values() for c in found))
    fonts = sorted({font for _, font in lacking.values() if font})
    named = []
    for handle in list(lacking)[:LISTED]:
        entity = doc.entitydb.get(handle)
        named.append(_label(entity) if entity is not None else f"#{handle}")
    more = f" and {len(lacking) - LISTED} more" if len(lacking) > LISTED else ""
    return (
        f"[TEXT AS BOXES] {len(lacking)} entities hold text with characters no font used here has a glyph "
        f"for ({echo(chars[:20], 40)}), drawn as empty boxes: {', '.join(named)}{more}; font(s) "
        f"{', '.join(echo(f, 40) for f in fonts[:3])}. The drawing holds the text intact (read it with "
        "execute_python_code or dxf://element/{handle}); install a font that has these characters (for "
        "Chinese, Japanese or Korean: Noto Sans CJK, Debian's fonts-noto-cjk) to see it drawn."
    )


def _round(values: Any) -> list[float]:
    return [float(f"{float(v):.6g}") for v in values]


def _point(lo: Any, hi: Any) -> str:
    x, y = ((float(a) + float(b)) / 2 for a, b in zip(lo, hi, strict=True))
    return f"({x:.6g}, {y:.6g})"
