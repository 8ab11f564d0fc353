"""Helpers shared by the DXF host tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "floorplan.dxf"


def export_tags(doc: Any) -> list[Any]:
    """The whole document as DXF tags, without the metadata updates a real save makes."""
    from ezdxf.lldxf.tagwriter import TagCollector

    collector = TagCollector(dxfversion=doc.dxfversion)
    doc.export_sections(collector)
    return collector.tags


def text_of(result: Any) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "type", "") == "text")
