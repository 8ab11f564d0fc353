"""Real FreeCAD for the FreeCAD host tests: the Debian package (.ci/deps/freecad.sh), Xvfb for its GUI.

FreeCAD runs with a private HOME (its preferences and macro folder stay out of the user's) whose
preferences start FreeCAD's window in the Part workbench instead of the web start page.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import SAMPLE, xvfb
from tests.conftest import require_component

USER_CFG = """<?xml version="1.0" encoding="UTF-8" standalone="no" ?>
<FCParameters>
  <FCParamGroup Name="Root">
    <FCParamGroup Name="BaseApp">
      <FCParamGroup Name="Preferences">
        <FCParamGroup Name="General">
          <FCText Name="AutoloadModule">PartWorkbench</FCText>
        </FCParamGroup>
      </FCParamGroup>
    </FCParamGroup>
  </FCParamGroup>
</FCParameters>
"""


def freecad_missing() -> str | None:
    if shutil.which("freecadcmd") is None or shutil.which("freecad") is None:
        return "FreeCAD is not installed (bash .ci/deps/freecad.sh, or apt-get install freecad)"
    return None


def xvfb_missing() -> str | None:
    return None if shutil.which("Xvfb") else "Xvfb is not installed (bash .ci/deps/freecad.sh)"


@pytest.fixture(scope="session")
def freecad() -> None:
    require_component("freecad", freecad_missing())


@pytest.fixture(scope="session")
def display(freecad: None) -> Iterator[str]:
    """A private X display (Xvfb) for FreeCAD's window, stopped after the session."""
    require_component("xvfb", xvfb_missing())
    with xvfb() as name:
        yield name


@pytest.fixture
def freecad_env(freecad: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Environment for FreeCAD processes: a private HOME with quick-start preferences."""
    home = Path(tempfile.mkdtemp(prefix="cfh"))
    config = home / ".config" / "FreeCAD"
    config.mkdir(parents=True)
    (config / "user.cfg").write_text(USER_CFG, encoding="utf-8")
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def gui_env(display: str, freecad_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """FreeCAD's environment with the private display, for hosts started with --gui."""
    monkeypatch.setenv("DISPLAY", display)
    return {**freecad_env, "DISPLAY": display}


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A writable copy of samples/bracket.FCStd."""
    target = tmp_path / "bracket.FCStd"
    shutil.copyfile(SAMPLE, target)
    return target


@pytest.fixture
def daemon(daemon_client: Callable[..., Any], freecad_env: dict[str, str]) -> Callable[..., Any]:
    """`async with daemon() as session`: a real daemon whose launched hosts get FreeCAD's environment."""

    @asynccontextmanager
    async def connect(**env: str) -> AsyncIterator[Any]:
        async with daemon_client(env={**freecad_env, **env}) as session:
            yield session

    return connect
