"""``cadmcp host freecad``: start FreeCAD with the cadmcp host runtime inside it.

Runs in cadmcp's own Python. It finds FreeCAD (``freecadcmd`` headless, ``freecad`` with
``--gui``; ``CADMCP_FREECAD`` names another binary or its folder), tells it where cadmcp and
its environment live, and *replaces itself* with FreeCAD (``exec``): the host's PID is this
command's PID, which is what ``launch_host`` waits for.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cadmcp.applications import StartRequest

__all__ = ["FREECAD_ENV", "environment", "find_freecad", "launch", "paths", "start"]

FREECAD_ENV = "CADMCP_FREECAD"
"""A FreeCAD binary (freecadcmd or freecad) or the folder holding them."""
HEADLESS_NAMES = ("freecadcmd", "FreeCADCmd", "freecadcmd-daily", "FreeCADCmd-daily")
GUI_NAMES = ("freecad", "FreeCAD", "freecad-daily", "FreeCAD-daily")
INSTALL_HINT = (
    f"Install FreeCAD 0.20 or newer (Debian/Ubuntu: sudo apt-get install freecad) or set {FREECAD_ENV} to "
    "its freecadcmd/freecad binary or its bin folder."
)


class FreeCADNotFound(RuntimeError):
    """No FreeCAD binary was found; the message says how to install or name one."""


def find_freecad(gui: bool) -> str:
    """The FreeCAD binary to run: headless ``freecadcmd`` or the GUI ``freecad``."""
    names = GUI_NAMES if gui else HEADLESS_NAMES
    configured = os.environ.get(FREECAD_ENV, "").strip()
    if configured:
        path = Path(configured).expanduser()
        if path.is_dir():
            for name in names:
                if (path / name).is_file():
                    return str(path / name)
            raise FreeCADNotFound(f"{FREECAD_ENV}={configured} holds none of {', '.join(names)}.")
        if path.is_file():
            if gui == (path.name.lower().startswith("freecadcmd")):
                sibling = next((path.with_name(n) for n in names if path.with_name(n).is_file()), None)
                if sibling is not None:
                    return str(sibling)
            return str(path)
        raise FreeCADNotFound(f"{FREECAD_ENV}={configured} does not exist.")
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise FreeCADNotFound(f"FreeCAD ({' or '.join(names[:2])}) is not on PATH. {INSTALL_HINT}")


def paths() -> dict[str, Any]:
    """Where cadmcp and its environment live, for ``siteimport`` inside FreeCAD."""
    import cadmcp

    sites = [p for p in site.getsitepackages() if Path(p).is_dir()]
    user = site.getusersitepackages()
    if site.ENABLE_USER_SITE and user and Path(user).is_dir():
        sites.append(user)
    return {
        "cadmcp": str(Path(cadmcp.__file__).resolve().parent),
        "site": sites,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "bin": str(Path(sys.executable).parent),
    }


def environment(request: dict[str, Any], base: dict[str, str] | None = None) -> dict[str, str]:
    """FreeCAD's environment: cadmcp's paths and the request, uv on PATH, the web view usable as root."""
    from cadmcp.hosts.freecad.siteimport import PATHS_ENV, REQUEST_ENV

    env = dict(os.environ if base is None else base)
    where = paths()
    env[PATHS_ENV] = json.dumps(where)
    env[REQUEST_ENV] = json.dumps(request)
    env["PATH"] = os.pathsep.join([where["bin"], env.get("PATH", "")])
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # FreeCAD's start page is a Chromium web view, which refuses to run as root without this
        flags = env.get("QTWEBENGINE_CHROMIUM_FLAGS", "")
        if "--no-sandbox" not in flags:
            env["QTWEBENGINE_CHROMIUM_FLAGS"] = f"{flags} --no-sandbox".strip()
    return env


def start(request: StartRequest) -> int:
    """`cadmcp host freecad`: the registry's starter for FreeCAD (see :func:`launch`)."""
    options = {"exec_timeout": request.exec_timeout, "toolsets": request.toolsets, "verbose": request.verbose}
    return launch(request.files, gui=request.gui, **options)


def launch(
    files: list[str], *, gui: bool, exec_timeout: float | None, toolsets: list[str], verbose: bool
) -> int:
    """Replace this process with FreeCAD serving ``files``; returns only when that cannot happen."""
    try:
        binary = find_freecad(gui)
    except FreeCADNotFound as exc:
        print(f"cadmcp host freecad: {exc}", file=sys.stderr)
        return 2
    for file in files:
        if not Path(file).expanduser().exists():
            print(f"cadmcp host freecad: {file} not found", file=sys.stderr)
            return 2
    request = {
        "files": [str(Path(f).expanduser().resolve()) for f in files],
        "gui": gui,
        "exec_timeout": exec_timeout,
        "toolsets": [str(Path(t).expanduser().resolve()) for t in toolsets],
        "verbose": verbose,
    }
    if gui and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print(
            "cadmcp host freecad: --gui needs a display (DISPLAY is not set). Run it in your desktop "
            "session, under a virtual display (xvfb-run -a cadmcp host freecad --gui ...), or without --gui.",
            file=sys.stderr,
        )
        return 2
    bootstrap = Path(__file__).with_name("bootstrap.py")
    env = environment(request)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(binary, [binary, str(bootstrap)], env)
    except OSError as exc:
        print(
            f"cadmcp host freecad: cannot start {binary}: {exc.strerror or exc}. {INSTALL_HINT}",
            file=sys.stderr,
        )
        return 2
    return 0  # not reached
