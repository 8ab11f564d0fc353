"""FreeCAD host figures: launch to ready (headless and GUI), screenshot of the sample, undo of one
step, one script round trip through the daemon; beside neka-nat/freecad-mcp where it is installed.

    python bench/bench_freecad_host.py [--runs 3] [--calls 20]
        [--peer-addon PATH/addon/FreeCADMCP --peer-server PATH/bin/freecad-mcp]

FreeCAD runs with a private HOME whose preferences start the window in the Part workbench (no web
start page), under a private Xvfb display for the GUI figures. Nothing is asserted; the machine is
shared, so figures are noisy: compare ratios, and rerun.

The peer (MIT, not shipped here): its FreeCAD addon (`addon/FreeCADMCP` of its repository) is
copied into the private FreeCAD's Mod folder with its RPC auto-start switched on, and its MCP
server (PyPI `freecad-mcp`, Python >= 3.12) runs over stdio. Without those paths its figures are
skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xmlrpc.client
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from bench_host_startup import p50_min, start_to_ready
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.hosts.freecad.freecad_helpers import xvfb  # noqa: E402

SAMPLE = ROOT / "samples" / "bracket.FCStd"
USER_CFG = (
    '<?xml version="1.0" encoding="UTF-8" standalone="no" ?>\n<FCParameters><FCParamGroup Name="Root">'
    '<FCParamGroup Name="BaseApp"><FCParamGroup Name="Preferences"><FCParamGroup Name="General">'
    '<FCText Name="AutoloadModule">PartWorkbench</FCText></FCParamGroup></FCParamGroup></FCParamGroup>'
    "</FCParamGroup></FCParameters>\n"
)
PEER_PORT = 9875
PEER_VIEW = {"view_name": "Isometric", "width": 1280}
PYSIDE_COMPAT = (
    "import sys, PySide, PySide2.QtWidgets\n"
    "PySide.QtWidgets = sys.modules['PySide.QtWidgets'] = PySide2.QtWidgets\n"
)
EDIT = "doc.getObject('Params').set('thickness', str(8 + len(doc.UndoNames) % 5))"


def row(label: str, values: list[float], note: str = "") -> None:
    print(f"  {label:<52} {p50_min(values)}   {note}")


@contextmanager
def freecad_home() -> Iterator[dict[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="cadmcp-bench-fc-"))
    (home / ".config" / "FreeCAD").mkdir(parents=True)
    (home / ".config" / "FreeCAD" / "user.cfg").write_text(USER_CFG)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
    }
    try:
        yield env
    finally:
        shutil.rmtree(home, ignore_errors=True)


async def timed(call: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = await call()
        if getattr(result, "is_error", False):
            raise RuntimeError(f"call failed: {result.content}")
        out.append(time.perf_counter() - t0)
    return out


async def through_daemon(env: dict[str, str], gui: bool, calls: int) -> None:
    """Launch a FreeCAD host from a real daemon and time what an agent does through it."""
    config = Path(env["HOME"]) / "hosts.json"
    command = [sys.executable, "-m", "cadmcp", "host", "freecad", *(["--gui"] if gui else [])]
    config.write_text(json.dumps({"hosts": {"FreeCAD": {"command": command, "extensions": [".fcstd"]}}}))
    runtime = Path(tempfile.mkdtemp(prefix="cadmcp-bench-rt-"))
    runtime.chmod(0o700)
    copy = Path(env["HOME"]) / "bracket.FCStd"
    shutil.copyfile(SAMPLE, copy)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
        env={**env, "CADMCP_HOSTS_CONFIG": str(config), "CADMCP_RUNTIME_DIR": str(runtime),
             "CADMCP_SEARCH_SEMANTIC": "off", "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )  # fmt: skip
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            t0 = time.perf_counter()
            launched = await session.call_tool("launch_host", {"filePath": str(copy), "timeoutSeconds": 180})
            launch = time.perf_counter() - t0
            if launched.is_error:
                raise RuntimeError(f"launch failed: {launched.content}")
            host = launched.structured_content["hostInstanceId"]
            found = await session.call_tool(
                "search_dynamic", {"query": "FreeCAD", "hostInstanceId": host, "limit": 32}
            )
            ids = {i["target"]: i["id"] for i in found.structured_content["items"]}

            async def invoke(target: str, arguments: dict[str, Any]) -> Any:
                return await session.call_tool("invoke_dynamic", {"id": ids[target], "arguments": arguments})

            mode = "GUI" if gui else "headless"
            print(f"\nthrough the daemon, {mode} (launch_host by .FCStd, {calls} calls each)")
            row("launch_host -> connected (daemon waits for ready)", [launch])
            row("script round trip: execute_python_code '1 + 1'",
                await timed(lambda: invoke("execute_python_code", {"code": "1 + 1"}), calls))  # fmt: skip
            shots = await timed(lambda: invoke("view_screenshot", {"width": 1280}), max(3, calls // 4))
            row("view_screenshot 1280 px of the sample", shots, "target <= 1 s (GUI)")
            undo: list[float] = []
            for _ in range(max(3, calls // 4)):
                await invoke("execute_python_code", {"code": EDIT, "description": "bench edit"})
                t0 = time.perf_counter()
                back = await invoke("navigate_history", {"direction": "back"})
                undo.append(time.perf_counter() - t0)
                if back.is_error or back.structured_content["navigated"] != 1:
                    raise RuntimeError(f"undo failed: {back.content}")
            row("undo of one step (navigate_history back)", undo)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def start_figures(env: dict[str, str], runs: int, display: str | None) -> None:
    print(f"\n`cadmcp host freecad samples/bracket.FCStd`, {runs} runs (spawn -> socket -> tools/list)")
    headless = start_to_ready("freecad", SAMPLE, runs, context=True, screenshot="now", env=env, timeout=120)
    row("headless: spawn -> ready", [r.ready for r in headless])
    row("headless: then freecad://model/context", [r.context or 0 for r in headless])
    row("headless: then view_screenshot 1280 px", [r.screenshot or 0 for r in headless], "tessellated")
    if display is None:
        print("  GUI: skipped (no Xvfb)")
        return
    gui_env = {**env, "DISPLAY": display}
    gui = start_to_ready(
        "freecad", SAMPLE, runs, context=True, screenshot="now", env=gui_env, args=["--gui"], timeout=180
    )
    row("GUI: spawn -> ready", [r.ready for r in gui])
    row("GUI: then view_screenshot 1280 px (3D view)", [r.screenshot or 0 for r in gui], "target <= 1 s")


async def peer_figures(
    env: dict[str, str], display: str, addon: Path, server: Path, runs: int, calls: int
) -> None:
    """neka-nat/freecad-mcp: FreeCAD with its addon auto-starting the XML-RPC server, then its MCP server."""
    data = Path(env["XDG_DATA_HOME"]) / "FreeCAD"
    (data / "Mod").mkdir(parents=True, exist_ok=True)
    shutil.copytree(addon, data / "Mod" / "FreeCADMCP", dirs_exist_ok=True)
    (data / "freecad_mcp_settings.json").write_text(json.dumps({"auto_start_rpc": True}))
    # its addon imports PySide.QtWidgets, which FreeCAD 0.21+ provides and Debian's 0.20 lacks
    (data / "Mod" / "PySideCompat").mkdir(exist_ok=True)
    (data / "Mod" / "PySideCompat" / "Init.py").write_text(PYSIDE_COMPAT)
    print(f"\nneka-nat/freecad-mcp (addon + `{server.name}` over stdio), {runs} runs")
    starts, mcp_ready, rounds, shots = [], [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            ["freecad", str(SAMPLE)],
            env={**os.environ, **env, "DISPLAY": display},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            proxy = xmlrpc.client.ServerProxy(f"http://localhost:{PEER_PORT}", allow_none=True)
            while True:
                try:
                    proxy.ping()
                    break
                except OSError:
                    if time.perf_counter() - t0 > 180 or proc.poll() is not None:
                        raise RuntimeError("the peer's RPC server did not start") from None
                    time.sleep(0.05)
            starts.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            params = StdioServerParameters(command=str(server), args=[], env={**env})
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                mcp_ready.append(time.perf_counter() - t1)
                rounds += await timed(
                    lambda s=session: s.call_tool(
                        "execute_code", {"code": "1 + 1", "include_screenshot": False}
                    ),
                    calls,
                )
                shots += await timed(lambda s=session: s.call_tool("get_view", PEER_VIEW), 3)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    row("peer: FreeCAD spawn -> XML-RPC server answers", starts, "it needs its own FreeCAD addon")
    row("peer: MCP server spawn -> tools/list", mcp_ready)
    row("peer: FreeCAD + MCP server ready (sum)", [a + b for a, b in zip(starts, mcp_ready, strict=True)])
    row("peer: script round trip execute_code '1 + 1'", rounds, "no undo step, no rollback")
    row("peer: get_view 1280 px", shots)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--peer-addon", type=Path, default=None, help="neka-nat/freecad-mcp addon/FreeCADMCP")
    parser.add_argument("--peer-server", type=Path, default=None, help="its freecad-mcp executable")
    args = parser.parse_args()
    if shutil.which("freecadcmd") is None:
        print("FreeCAD is not installed (bash .ci/deps/freecad.sh): nothing to measure")
        return
    version = subprocess.run(["freecadcmd", "--version"], capture_output=True, text=True).stdout.strip()
    name = next((line for line in version.splitlines() if line.startswith("FreeCAD")), "FreeCAD")
    print(f"FreeCAD host bench: {name}, Python {sys.version.split()[0]}")
    display_cm = xvfb() if shutil.which("Xvfb") else None
    with freecad_home() as env, display_cm or contextmanager(lambda: iter([None]))() as display:
        start_figures(env, args.runs, display)
        anyio.run(through_daemon, env, False, args.calls)
        if display is not None:
            anyio.run(through_daemon, {**env, "DISPLAY": display}, True, args.calls)
        if args.peer_addon and args.peer_server and display is not None:
            anyio.run(peer_figures, env, display, args.peer_addon, args.peer_server, args.runs, args.calls)
        else:
            print(
                "\nneka-nat/freecad-mcp: not run. Its FreeCAD side is an addon from its GitHub repository "
                "(not on PyPI) and its MCP server needs Python >= 3.12; pass --peer-addon and --peer-server."
            )


if __name__ == "__main__":
    main()
