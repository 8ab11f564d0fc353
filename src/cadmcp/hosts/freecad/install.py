"""``cadmcp freecad install`` and ``cadmcp freecad check``: serve the FreeCAD a user already has open.

``install`` asks FreeCAD (``freecadcmd``) which Python it runs and where its macro folder is,
checks that cadmcp's environment suits that Python, and writes two macros there:
``cadmcp_start.FCMacro`` (serve this session; again: restart) and ``cadmcp_stop.FCMacro``.
They hold the paths of this cadmcp installation; run ``install`` again after moving it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cadmcp import __version__
from cadmcp.hosts.freecad import siteimport
from cadmcp.hosts.freecad.launcher import FreeCADNotFound, find_freecad, paths

__all__ = ["MACROS", "macro_text", "main", "probe"]

PROBE = (
    "import json, sys, FreeCAD\n"
    "print('CADMCP-PROBE ' + json.dumps({'python': list(sys.version_info[:2]), 'prefix': sys.prefix, "
    "'macros': FreeCAD.getUserMacroDir(True), 'version': '.'.join(FreeCAD.Version()[:3])}))\n"
)
MACROS = ("cadmcp_start.FCMacro", "cadmcp_stop.FCMacro")

_PRELUDE = '''# {title}
# Installed by `cadmcp freecad install` (cadmcp {version}); run it again after moving cadmcp.
import importlib.util
import sys

CADMCP = {paths}


def _cadmcp_ready():
    """Make cadmcp importable in FreeCAD's Python (only cadmcp and its runtime libraries)."""
    spec = importlib.util.spec_from_file_location(
        "cadmcp_freecad_siteimport", CADMCP["cadmcp"] + "/hosts/freecad/siteimport.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.install(CADMCP["cadmcp"], CADMCP["site"])


try:
    _cadmcp_ready()
except Exception as exc:
    import FreeCAD

    FreeCAD.Console.PrintError(f"cadmcp: cannot start: {{exc}}\\n")
    try:
        from PySide2 import QtWidgets

        QtWidgets.QMessageBox.warning(None, "cadmcp", f"cadmcp cannot start in this FreeCAD:\\n\\n{{exc}}")
    except Exception:
        pass
else:
'''

_BODIES = {
    "cadmcp_start.FCMacro": (
        "cadmcp: serve this FreeCAD session to AI agents (running it again restarts the server)",
        "    from cadmcp.hosts.freecad import session\n\n    session.start()\n",
    ),
    "cadmcp_stop.FCMacro": (
        "cadmcp: stop serving this FreeCAD session",
        "    from cadmcp.hosts.freecad import session\n\n    session.stop()\n",
    ),
}


def macro_text(name: str, where: dict[str, Any] | None = None) -> str:
    """The source of one installed macro, with this installation's paths written in."""
    title, body = _BODIES[name]
    chosen = where or paths()
    baked = {"cadmcp": chosen["cadmcp"], "site": chosen["site"], "python": chosen["python"]}
    return _PRELUDE.format(title=title, version=__version__, paths=json.dumps(baked, indent=4)) + body


def probe(binary: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
    """Ask FreeCAD for its Python version, prefix, macro folder and version."""
    freecadcmd = binary or find_freecad(gui=False)
    run = subprocess.run(
        [freecadcmd, "-c", PROBE], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    for line in (run.stdout + "\n" + run.stderr).splitlines():
        if line.startswith("CADMCP-PROBE "):
            return json.loads(line.split(" ", 1)[1])
    raise RuntimeError(
        f"{freecadcmd} did not answer (exit {run.returncode}): {(run.stderr or run.stdout)[-300:]}"
    )


def main(action: str, macro_dir: str | None = None) -> int:
    """`cadmcp freecad install|check`; prints what it did or what to do."""
    try:
        info = probe()
    except (FreeCADNotFound, RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"cadmcp freecad {action}: {exc}", file=sys.stderr)
        return 2
    where = paths()
    running = tuple(info["python"])
    print(f"FreeCAD {info['version']} runs Python {running[0]}.{running[1]} ({info['prefix']}).")
    print(f"cadmcp {__version__} is installed for Python {where['python']} ({where['site'][0]}).")
    try:
        siteimport.check([Path(p) for p in where["site"]], running=running)  # type: ignore[arg-type]
    except siteimport.VersionMismatch as exc:
        print(f"\n{exc}", file=sys.stderr)
        return 1
    chosen = siteimport.plan(Path(where["cadmcp"]), [Path(p) for p in where["site"]])
    if chosen.missing:
        print(f"cadmcp's environment lacks {', '.join(chosen.missing)}: reinstall cadmcp.", file=sys.stderr)
        return 1
    print(f"OK: FreeCAD can import cadmcp and the {len(chosen.dists)} libraries its host runtime needs.")
    folder = Path(macro_dir or info["macros"]).expanduser()
    if action == "check":
        present = [m for m in MACROS if (folder / m).is_file()]
        print(f"Macros in {folder}: {', '.join(present) or 'none (run cadmcp freecad install)'}.")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    for name in MACROS:
        (folder / name).write_text(macro_text(name, where), encoding="utf-8")
    print(f"Installed {' and '.join(MACROS)} in {folder}.")
    print(
        "In FreeCAD: Macro > Macros..., pick cadmcp_start.FCMacro, Execute (or put it on a toolbar with "
        "Tools > Customize > Macros). The status bar then shows the socket and PID it serves on; "
        "cadmcp_stop.FCMacro stops it, cadmcp_start.FCMacro again restarts it."
    )
    return 0
