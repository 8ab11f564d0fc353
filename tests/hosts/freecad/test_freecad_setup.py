"""Making cadmcp importable in FreeCAD's Python, and saying exactly what to do when it cannot be."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

import cadmcp
from cadmcp.hosts.freecad import siteimport
from cadmcp.hosts.freecad.install import MACROS, macro_text

SITES = [Path(p) for p in site.getsitepackages()]
CADMCP_DIR = Path(cadmcp.__file__).resolve().parent


def test_the_finder_serves_the_runtime_closure_and_nothing_else() -> None:
    chosen = siteimport.plan(CADMCP_DIR, SITES)
    assert chosen.missing == []
    served = set(chosen.modules)
    assert {"cadmcp", "mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "watchfiles", "uv"} <= served
    assert "cryptography" in served  # mcp asks for pyjwt[crypto]: extras of requirements are followed
    # FreeCAD keeps its own numpy, Pillow, PySide: none of them is served from cadmcp's environment
    assert not {"numpy", "PIL", "ifcopenshell", "ezdxf", "PySide2"} & served
    assert chosen.modules["cadmcp"] == CADMCP_DIR.parent


def test_the_finder_imports_in_a_python_that_cannot_see_cadmcp(tmp_path: Path) -> None:
    """A bare interpreter (no site-packages, like FreeCAD's) gets mcp and cadmcp through the finder."""
    module = CADMCP_DIR / "hosts" / "freecad" / "siteimport.py"
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('si', {str(module)!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['si'] = m; spec.loader.exec_module(m)\n"
        "try:\n    import mcp\nexcept ImportError:\n    print('no mcp before')\n"
        f"m.install({str(CADMCP_DIR)!r}, {[str(s) for s in SITES]!r})\n"
        "import mcp, cadmcp.host.builtins, importlib.metadata as md\n"
        "print(md.version('mcp'))\n"
        "try:\n    import ezdxf\nexcept ImportError:\n    print('no ezdxf')\n"
    )
    run = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split()
    assert lines[0:2] == ["no", "mcp"] and lines[-2:] == ["no", "ezdxf"]


def test_a_python_version_mismatch_says_exactly_what_to_do() -> None:
    other = [Path("/opt/cadmcp/lib/python3.12/site-packages")]
    with pytest.raises(siteimport.VersionMismatch) as caught:
        siteimport.check(other, running=(3, 11))
    message = str(caught.value)
    assert "installed for Python 3.12" in message and "runs Python 3.11" in message
    assert "python3.11 -m venv ~/.local/share/cadmcp/freecad-env" in message
    assert "freecad-env/bin/cadmcp freecad install" in message
    siteimport.check(other, running=(3, 12))  # the same versions: fine


def test_macros_hold_this_installation_and_start_or_stop_the_session() -> None:
    start, stop = (macro_text(name) for name in MACROS)
    compile(start, "cadmcp_start.FCMacro", "exec")
    compile(stop, "cadmcp_stop.FCMacro", "exec")
    assert str(CADMCP_DIR) in start and "session.start()" in start and "session.stop()" in stop


def test_the_launcher_says_why_it_cannot_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    missing = subprocess.run(
        [sys.executable, "-m", "cadmcp", "host", "freecad"],
        env={**env, "CADMCP_FREECAD": str(tmp_path / "nowhere")},
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    if (
        not os.environ.get("CADMCP_FREECAD")
        and subprocess.run(["which", "freecad"], capture_output=True).returncode
    ):
        return
    no_display = subprocess.run(
        [sys.executable, "-m", "cadmcp", "host", "freecad", "--gui"], env=env, capture_output=True, text=True
    )
    assert (
        no_display.returncode == 2
        and "needs a display" in no_display.stderr
        and "xvfb-run" in no_display.stderr
    )


def test_check_asks_the_real_freecad(freecad: None, freecad_env: dict[str, str], tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cadmcp", "freecad", "check", "--macro-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "runs Python 3." in run.stdout and "OK: FreeCAD can import cadmcp" in run.stdout
    assert "none (run cadmcp freecad install)" in run.stdout
