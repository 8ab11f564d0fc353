"""Reads that leave the drawing as they found it.

ezdxf creates objects in the drawing while it reads some entities: a proxy graphic (what an
AutoCAD-made MULTILEADER or custom object carries to be drawn) adds a text style for each font
its texts name, when it is decomposed for a view or for the drawing's extents. Left in place,
such a style is in no undo step, the document does not say it is modified, and the next save
writes it; a preview's revision taken before it no longer matches. `unchanged` takes out what a
read created and gives the handle seed back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ezdxf.document import Drawing

__all__ = ["unchanged"]

_TABLES = {
    "STYLE": "styles",
    "LAYER": "layers",
    "LTYPE": "linetypes",
    "DIMSTYLE": "dimstyles",
    "APPID": "appids",
    "UCS": "ucs",
    "VIEW": "views",
    "VPORT": "viewports",
}
"""Table entries, by type, and the table of the drawing that holds them."""


@contextlib.contextmanager
def unchanged(doc: Drawing) -> Iterator[None]:
    """Inside the block, reading the drawing may create objects; they are taken out after it."""
    start = int(str(doc.entitydb.handles), 16)
    try:
        yield
    finally:
        end = int(str(doc.entitydb.handles), 16)
        if end > start:
            for number in range(start, end):
                entity = doc.entitydb.get(f"{number:X}")
                if entity is not None:
                    _take_out(doc, entity)
            doc.entitydb.handles.reset(f"{start:X}")


def _take_out(doc: Drawing, entity: Any) -> None:
    table = getattr(doc, _TABLES.get(entity.dxftype(), ""), None)
    name = entity.dxf.get("name") if table is not None else None
    with contextlib.suppress(Exception):
        if name and table.get(name) is entity:
            table.remove(name)
            return
    with contextlib.suppress(Exception):
        doc.entitydb.delete_entity(entity)
