"""Progress from inside a host: scripts and tool code report how far they are, callers see it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from cadmcp.wire.endpoints import list_endpoints
from cadmcp.wire.sockets import connect
from tests.core.helpers import find_target, wait_for_hosts

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"


def drawing(tmp_path: Path) -> Path:
    target = tmp_path / "plan.dxf"
    shutil.copy(SAMPLE, target)
    return target


async def test_a_script_reports_progress_to_the_caller_of_the_host(
    hosts: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    hosts.start("dxf", str(drawing(tmp_path)))
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    (endpoint,) = list_endpoints(runtime_dir)
    async with connect(endpoint.path) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        code = (
            "import time\nfor i in range(4):\n    progress(i / 4, f'storey {i}')\n    time.sleep(0.15)\n'ok'"
        )
        result = await session.call_tool("execute_python_code", {"code": code}, progress_callback=on_progress)
        assert result.content[0].text == "Result: 'ok'"
        assert seen == [(i / 4, 1.0, f"storey {i}") for i in range(4)]

        seen.clear()
        bad = await session.call_tool(
            "execute_python_code", {"code": "progress('half')"}, progress_callback=on_progress
        )
        assert bad.is_error and "progress fraction must be a number from 0 to 1" in bad.content[0].text
        assert seen == []

        # clamped to 0..1 and never backwards; a script that reports nothing sends nothing
        await session.call_tool(
            "execute_python_code",
            {"code": "import time\nprogress(2, 'over')\ntime.sleep(0.1)\nprogress(0.1, 'back')"},
            progress_callback=on_progress,
        )
        assert [p for p, _, _ in seen] == [1.0, 1.0]


@pytest.mark.slow
async def test_progress_of_a_plain_call_reaches_clients_of_both_eras_through_the_daemon(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    hosts.start("dxf", str(drawing(tmp_path)))
    code = "import time\nfor i in range(3):\n    progress(i / 3, f'part {i}')\n    time.sleep(0.15)\n'ok'"
    for era in ("modern", "legacy"):
        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))  # noqa: B023 - consumed before the next loop

        async with daemon_client(era=era) as session:
            await wait_for_hosts(session, 1)
            script = await find_target(session, "execute_python_code")
            result = await session.call_tool(
                "invoke_dynamic",
                {"id": script["id"], "arguments": {"code": code}},
                progress_callback=on_progress,
            )
        assert result.content[0].text == "Result: 'ok'", era
        assert seen == [(i / 3, f"part {i}") for i in range(3)], era


async def test_a_big_screenshot_and_a_first_ifc_render_report_their_own_progress(
    hosts: Any, runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DXF frontend reports entities drawn; IfcOpenShell's tessellation reports elements built."""
    monkeypatch.setenv("CADMCP_WARM_UP", "0")  # a warmed-up IFC host has nothing left to tessellate
    add_lines = "for i in range(3000):\n    msp.add_line((0, i), (10, i))\n"
    hosts.start("dxf", str(drawing(tmp_path)))
    model = tmp_path / "house.ifc"
    shutil.copy(SAMPLE.parent / "house.ifc", model)
    hosts.start("ifc", str(model))
    by_app = {ep.host_app: ep.path for ep in list_endpoints(runtime_dir)}
    for app, script, tool, args in (
        ("DXF", add_lines, "view_screenshot", {"width": 320}),
        ("IFC", None, "view_screenshot", {"width": 320}),
    ):
        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))  # noqa: B023 - consumed before the next loop

        async with connect(by_app[app]) as (read, write), ClientSession(read, write) as session:
            await session.discover()
            if script:
                await session.call_tool("execute_python_code", {"code": script})
            result = await session.call_tool(tool, args, progress_callback=on_progress)
        assert not result.is_error, app
        assert seen, f"{app} screenshot reported no progress"
        assert [p for p, _ in seen] == sorted(p for p, _ in seen), app
        words = "entities" if app == "DXF" else "elements"
        assert any(words in (m or "") for _, m in seen), (app, seen)
