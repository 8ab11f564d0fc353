"""Code the corpus runner sends into a host with execute_python_code, one module per application.

Each module is plain Python that needs only its application's library (ezdxf, IfcOpenShell,
FreeCAD): it is read as text and run in the host's script scope, so it imports nothing from
cadmcp. Each defines ``dump(...)`` (a canonical, JSON-ready state of the document, derived
geometry included) and ``change(...)`` (one typical edit, returning what it did).
"""

from __future__ import annotations

from importlib import resources

__all__ = ["source"]


def source(app: str) -> str:
    """The text of the probe module for ``app`` ('dxf', 'ifc' or 'freecad')."""
    return resources.files(__package__).joinpath(f"{app}.py").read_text(encoding="utf-8")
