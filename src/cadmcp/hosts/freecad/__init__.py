"""The FreeCAD host: the cadmcp host runtime inside FreeCAD's own process and Python.

Three ways in (docs/hosts/freecad.md):

- ``cadmcp host freecad [FILE...]`` starts ``freecadcmd`` (headless) with the runtime inside;
  ``--gui`` starts FreeCAD's window instead, and every call runs on its Qt GUI thread;
- ``cadmcp freecad install`` puts a macro in FreeCAD's macro folder that serves the FreeCAD
  session a user already has open (start, stop, restart; status in the status bar);
- in code: :func:`cadmcp.hosts.freecad.session.start` from FreeCAD's Python console.

FreeCAD runs its own Python; :mod:`cadmcp.hosts.freecad.siteimport` makes cadmcp's runtime
importable there without touching FreeCAD's own libraries. Importing this package is cheap
and needs no FreeCAD: the launcher runs in cadmcp's environment.
"""

from __future__ import annotations

HOST_APP = "FreeCAD"
SUFFIXES = (".fcstd",)
"""FreeCAD documents; open_document also imports the formats in IMPORT_SUFFIXES."""
IMPORT_SUFFIXES = (".step", ".stp", ".iges", ".igs", ".brep", ".brp", ".stl", ".obj", ".ply", ".off", ".dxf")

__all__ = ["HOST_APP", "IMPORT_SUFFIXES", "SUFFIXES"]
