"""Run by FreeCAD itself (``freecadcmd bootstrap.py`` or ``freecad bootstrap.py``): start the host.

``cadmcp host freecad`` starts FreeCAD with this file and two environment variables:
``CADMCP_FREECAD_PATHS`` (where cadmcp and its environment live, JSON) and
``CADMCP_FREECAD_REQUEST`` (files, GUI or not, time limit, toolsets; JSON). This file uses the
standard library only until :mod:`siteimport` has made cadmcp importable in FreeCAD's Python.
A Python version mismatch or a missing library is reported on stderr (and in FreeCAD's
report view) with what to do, and the process exits with code 3.
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

SETUP_FAILED = 3


def load_siteimport(here: Path):  # type: ignore[no-untyped-def]
    """The ``siteimport`` module beside this file, loaded by path (cadmcp is not importable yet)."""
    spec = importlib.util.spec_from_file_location("cadmcp_freecad_siteimport", here / "siteimport.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def fail(message: str) -> None:
    """Say why the host cannot start, where the user and the launcher will see it, and exit."""
    text = f"cadmcp host freecad: {message}\n"
    sys.stderr.write(text)
    sys.stderr.flush()
    try:
        import FreeCAD

        FreeCAD.Console.PrintError(text)
    except Exception:
        pass
    os._exit(SETUP_FAILED)  # FreeCAD's GUI would otherwise stay open without a host


def main() -> None:
    here = Path(__file__).resolve().parent
    siteimport = load_siteimport(here)
    try:
        paths = json.loads(os.environ[siteimport.PATHS_ENV])
        request = json.loads(os.environ.get(siteimport.REQUEST_ENV) or "{}")
    except (KeyError, ValueError) as exc:
        fail(
            f"start FreeCAD through `cadmcp host freecad` ({siteimport.PATHS_ENV} is missing or invalid: "
            f"{exc})."
        )
        return
    try:
        siteimport.install(Path(paths["cadmcp"]), [Path(p) for p in paths["site"]])
    except (siteimport.VersionMismatch, ImportError) as exc:
        fail(str(exc))
        return
    from cadmcp.hosts.freecad.host import main as host_main

    host_main(request)


main()
