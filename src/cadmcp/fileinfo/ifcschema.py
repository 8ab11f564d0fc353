"""Which IfcOpenShell schema reads a file that names a schema: the release its variant belongs to.

IfcOpenShell has one schema per IFC release (``IFC2X3``, ``IFC4``, ``IFC4X3_ADD2``), while files
name the exact variant their writer followed (``IFC4X3_RC2``, ``IFC2X3_TC1``...). Shared by file
info (which classes are products) and the IFC host (which schema reads the file).
"""

from __future__ import annotations

from functools import cache

__all__ = ["reader_schema", "supported_schemas"]

_RELEASES = (("IFC4X3", "IFC4X3_ADD2"), ("IFC4_", "IFC4"), ("IFC2X3_", "IFC2X3"))
"""The release each variant belongs to: (prefix of the variant's name, IfcOpenShell's schema)."""


@cache
def supported_schemas() -> tuple[str, ...]:
    """The schemas this IfcOpenShell reads, e.g. ``("IFC2X3", "IFC4", "IFC4X3_ADD2")``."""
    from ifcopenshell import ifcopenshell_wrapper

    return tuple(n for n in ifcopenshell_wrapper.schema_names() if n.upper().startswith("IFC"))


def reader_schema(schema: str) -> str | None:
    """The supported schema a file that names ``schema`` is read with, or None when none fits.

    ``IFC4X3_RC2`` -> ``IFC4X3_ADD2``; ``IFC4_ADD2`` -> ``IFC4``; ``IFC2X3_TC1`` -> ``IFC2X3``;
    a supported schema is itself; ``IFC4X1``, ``IFC4X2``, ``IFC2X2`` have no release here.
    """
    name = schema.strip().upper()
    supported = supported_schemas()
    if name in supported:
        return name
    for prefix, release in _RELEASES:
        if (name.startswith(prefix) or name == prefix.rstrip("_")) and release in supported:
            return release
    return None
