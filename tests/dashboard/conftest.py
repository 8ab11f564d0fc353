"""One real HTTP daemon with a DXF, an IFC and (where FreeCAD is installed) a headless FreeCAD host,
and headless Chromium logged into its dashboard.

Shared by the module's tests (the rig costs seconds to start); each test leaves the documents
as it found them or says what it added.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cadmcp.daemon import httpauth
from cadmcp.daemon.launching import CONFIG_ENV
from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.userdirs import CONFIG_DIR_ENV, LOG_DIR_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints
from tests.conftest import WHOLE_VIEWS, require_component

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
POLICY = {
    "profile": "trusted",
    "confirmTimeoutSeconds": 400,
    "rules": [
        {
            "name": "review IFC scripts",
            "decision": "confirm",
            "hostApp": "IFC",
            "capability": "execute_python_code",
            "reason": "a person looks at model changes first",
        }
    ],
}


def freecad_missing() -> str | None:
    if shutil.which("freecadcmd") is None:
        return "FreeCAD is not installed (bash .ci/deps/freecad.sh, or apt-get install freecad)"
    return None


def browser_missing() -> str | None:
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return "chromium and chromedriver are not installed (bash .ci/deps/browser.sh)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@dataclass
class Rig:
    """The running parts: environment, daemon URL and token, host pids, the files."""

    env: dict[str, str]
    url: str
    token: str
    base: str
    dxf_pid: int
    ifc_pid: int
    drawing: Path
    model: Path
    part: Path
    freecad_pid: int | None
    """None where FreeCAD is not installed (its tests say so and skip)."""

    @property
    def hosts(self) -> int:
        """How many hosts the daemon lists once every one is connected."""
        return 2 if self.freecad_pid is None else 3

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cadmcp", *args], env=self.env, capture_output=True, text=True, timeout=60
        )

    def login_link(self) -> str:
        done = self.cli("dashboard", "--no-open")
        assert done.returncode == 0, done.stderr
        return done.stdout.split("open ", 1)[1].split()[0]

    @contextlib.asynccontextmanager
    async def agent(self, era: str = "modern", **kw: Any) -> AsyncIterator[Any]:
        """A real MCP SDK client of the daemon over HTTP (`legacy`: 2025-11-25, no elicitation)."""
        from mcp.client.session import ClientSession

        async with (
            httpauth.connect(self.url, token=self.token) as (read, write, *_),
            ClientSession(read, write, **kw) as session,
        ):
            if era == "modern":
                await session.discover()
            else:
                await session.initialize()
            yield session


def _wait_endpoint(runtime: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(ep.pid == proc.pid for ep in list_endpoints(runtime)):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"host exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        time.sleep(0.05)
    raise TimeoutError("host did not start")


@pytest.fixture(scope="package")
def rig() -> Iterator[Rig]:
    require_component("browser", browser_missing())
    top = Path(tempfile.mkdtemp(prefix="cmd"))
    runtime, logs, config, files = top / "r", top / "l", top / "c", top / "f"
    for folder in (runtime, logs, config, files):
        folder.mkdir(mode=0o700)
    drawing, model, part = files / "plan.dxf", files / "house.ifc", files / "bracket.FCStd"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    shutil.copy(SAMPLES / "house.ifc", model)
    shutil.copy(SAMPLES / "bracket.FCStd", part)
    home = top / "h"  # FreeCAD's preferences and macro folder stay out of the user's
    (home / ".config").mkdir(parents=True)
    (config / "hosts.json").write_text(json.dumps({"policy": POLICY}))
    env = {
        **os.environ,
        RUNTIME_DIR_ENV: str(runtime),
        LOG_DIR_ENV: str(logs),
        CONFIG_DIR_ENV: str(config),
        CONFIG_ENV: str(config / "hosts.json"),
        SEMANTIC_ENV: "off",
        **WHOLE_VIEWS,
    }
    kinds = [("dxf", drawing), ("ifc", model)] + ([] if freecad_missing() else [("freecad", part)])
    procs: list[subprocess.Popen[Any]] = []
    try:
        for kind, path in kinds:
            host_env = (
                env
                if kind != "freecad"
                else {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
            )
            proc = subprocess.Popen(
                [sys.executable, "-m", "cadmcp", "host", kind, str(path)],
                env=host_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            procs.append(proc)
        for proc in procs:
            _wait_endpoint(runtime, proc)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0", "--scan-interval", "0.5"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(daemon)
        assert daemon.stdout is not None
        first = daemon.stdout.readline()
        assert " at " in first, (first, daemon.stderr.read() if daemon.stderr else "")
        url = first.split(" at ", 1)[1].split()[0]
        token = httpauth.read_token(config / httpauth.TOKEN_FILE)
        yield Rig(
            env,
            url,
            token,
            url.removesuffix("/mcp"),
            procs[0].pid,
            procs[1].pid,
            drawing,
            model,
            part,
            procs[2].pid if len(kinds) == 3 else None,
        )
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(top, ignore_errors=True)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium (Debian's) through its chromedriver."""
    require_component("browser", browser_missing())
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900"):
        options.add_argument(arg)
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="package")
def browser(rig: Rig) -> Iterator[Any]:
    """Headless Chromium logged in with a one-time link."""
    with chromium() as driver:
        driver.get(rig.login_link())
        yield driver
