"""launch_host through a real daemon: real host processes, real config, every error."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import ezdxf
import pytest

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.launching import HostLauncher
from cadmcp.daemon.search import SearchIndex
from cadmcp.wire.endpoints import pid_alive
from tests.core.helpers import call, find, structured, wait_gone

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


async def _error(session: Any, args: dict[str, Any]) -> dict[str, Any]:
    result = await call(session, "launch_host", args)
    assert result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


async def test_launch_errors_say_what_to_do(infra_daemon: Any, infra_env: Any, tmp_path: Path) -> None:
    infra_env.configure_hosts(
        {
            "Crashy": {
                "command": [
                    PY,
                    "-c",
                    "import sys; sys.stderr.write('licence server unreachable'); sys.exit(3)",
                ]
            },
            "Sleepy": {"command": [PY, "-c", "import time; time.sleep(120)"]},
            "Gone": {"command": [PY, "-c", "pass"]},  # exits 0 at once, as a launcher script may
            "MyCAD": {
                "command": [PY, "-c", "pass"],
                "extensions": [".abc"],
                "versions": {"2026": {"command": ["x"]}},
            },
        }
    )
    notes = tmp_path / "notes.txt"
    notes.write_text("not a drawing")
    plan = tmp_path / "plan.dxf"
    plan.write_text("0\nEOF\n")
    async with infra_daemon() as session:
        unknown = await _error(session, {"hostApp": "Rhino"})
        assert unknown["type"] == "unknown_host_app"
        assert {"DXF", "IFC", "Demo", "MyCAD"} <= set(unknown["supported"])
        assert "Rhino" in unknown["message"]

        by_ext = await _error(session, {"filePath": str(notes)})
        assert by_ext["type"] == "unsupported_extension"
        assert by_ext["supported"] == [".abc", ".dwg", ".dxf", ".fcstd", ".ifc"]

        wrong_host = await _error(session, {"hostApp": "IFC", "filePath": str(plan)})
        assert wrong_host["type"] == "unsupported_extension" and wrong_host["supported"] == [".ifc"]

        # a file whose content is another format than its name says: both are named, and the fix
        house = tmp_path / "house.dxf"
        house.write_bytes((ROOT / "samples" / "house.ifc").read_bytes())
        misnamed = await _error(session, {"filePath": str(house)})
        assert misnamed["type"] == "misnamed_file" and misnamed["renameTo"] == ".ifc", misnamed
        assert "'house.dxf' is named .dxf but holds an IFC model: rename it" in misnamed["message"]
        part = tmp_path / "part.dwg"  # an FCStd named .dwg (a zip starting with Document.xml)
        part.write_bytes((ROOT / "samples" / "bracket.FCStd").read_bytes())
        freecad = await _error(session, {"filePath": str(part)})
        assert freecad["type"] == "misnamed_file" and freecad["renameTo"] == ".FCStd", freecad
        assert "holds a FreeCAD document" in freecad["message"]
        sketch = tmp_path / "sketch.ifc"  # an ASCII DXF named .ifc
        sketch.write_text("999\nmade by hand\n  0\nSECTION\n  2\nENTITIES\n  0\nENDSEC\n  0\nEOF\n")
        drawing = await _error(session, {"filePath": str(sketch)})
        assert drawing["type"] == "misnamed_file" and drawing["renameTo"] == ".dxf", drawing
        revit = tmp_path / "tower.ifc"
        revit.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
        no_host = await _error(session, {"filePath": str(revit)})
        assert no_host["type"] == "misnamed_file" and "no host here opens it" in no_host["message"]
        step = tmp_path / "part.abc"  # a configured host's own files: STEP starts like IFC, and is left be
        step.write_bytes((ROOT / "samples" / "house.ifc").read_bytes())
        assert (await _error(session, {"filePath": str(step)}))["type"] != "misnamed_file"

        missing = await _error(session, {"filePath": str(tmp_path / "gone.ifc")})
        assert missing["type"] == "file_not_found" and "gone.ifc" in missing["message"]

        for bad in (
            {},
            {"hostApp": "Demo", "filePath": str(plan)},
            {"hostApp": "Demo", "timeoutSeconds": -1},
            {"hostApp": "Demo", "detach": "yes"},
            {"hostApp": "Demo", "app": "x"},
        ):
            assert (await _error(session, bad))["type"] == "validation_error", bad

        version = await _error(session, {"hostApp": "MyCAD", "version": "2019"})
        assert version["type"] == "unknown_version" and version["available"] == ["2026"]
        builtin_version = await _error(session, {"hostApp": "IFC", "version": "1999"})
        assert builtin_version["type"] == "unknown_version"

        exited = await _error(session, {"hostApp": "crashy"})
        assert exited["type"] == "host_exited" and exited["exitCode"] == 3
        assert "licence server unreachable" in exited["stderrTail"]
        assert "licence server unreachable" in exited["message"]

        timed_out = await _error(session, {"hostApp": "Sleepy", "timeoutSeconds": 1})
        assert timed_out["type"] == "launch_timeout" and timed_out["running"] is True
        assert "timeoutSeconds" in timed_out["message"]
        sleepy = timed_out["pid"]
        assert pid_alive(sleepy)
        # a command that exited 0 was said to be "still starting or hung" beside running: false
        gone = await _error(session, {"hostApp": "Gone", "timeoutSeconds": 1})
        assert gone["type"] == "launch_timeout" and gone["running"] is False, gone
        assert "still starting" not in gone["message"] and "exited (code 0)" in gone["message"], gone

        infra_env.config.write_text("{not json")
        broken = await _error(session, {"hostApp": "Demo"})
        assert broken["type"] == "config_error" and str(infra_env.config) in broken["message"]

    assert wait_gone(sleepy), "the daemon left a host it launched running after it exited"


async def test_a_named_configuration_file_not_made_yet_leaves_the_built_in_hosts_launchable(
    infra_daemon: Any, infra_env: Any
) -> None:
    """CADMCP_HOSTS_CONFIG naming a file not made yet refused every launch, the built-in hosts'
    too, calling the file invalid; it configures nothing of one's own, and says so where it matters."""
    infra_env.config.unlink()
    async with infra_daemon() as session:
        unknown = await _error(session, {"hostApp": "MyCAD"})
        assert unknown["type"] == "unknown_host_app", unknown
        assert f"CADMCP_HOSTS_CONFIG names {infra_env.config}, which does not exist" in unknown["message"]
        started = await call(session, "launch_host", {"hostApp": "Demo"})
        assert not started.is_error and started.structured_content["phase"] == "ready", started
        assert not infra_env.config.exists()  # only `cadmcp host add` makes it


def _dxf_available() -> bool:
    return importlib.util.find_spec("cadmcp.hosts.dxf.server") is not None


def _document(tmp_path: Path) -> tuple[Path, str]:
    """A real drawing (DXF host) or model (IFC host) to open by extension alone."""
    if _dxf_available():
        doc = ezdxf.new("R2018")
        doc.modelspace().add_line((0, 0), (5, 0))
        path = tmp_path / "plan.dxf"
        doc.saveas(path)
        return path, "DXF"
    from cadmcp.hosts.ifc.modelgen import build_house

    path = tmp_path / "house.ifc"
    build_house().write(str(path))
    return path, "IFC"


async def test_launched_hosts_are_searchable_and_stop_with_the_daemon_unless_detached(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    infra_env.configure_hosts(
        {
            "MyCAD": {
                "command": [
                    PY,
                    "-m",
                    "cadmcp",
                    "host",
                    "demo",
                    "{filePath}",
                    "--app",
                    "MyCAD",
                    "--app-version",
                    "{version}",
                ],
                "extensions": [".abc"],
                "version": "2026",
            }
        }
    )
    drawing = tmp_path / "part.abc"
    drawing.write_text("MyCAD part")
    document, document_host = _document(tmp_path)
    answers: dict[str, dict[str, Any]] = {}
    detached_pid = None
    try:
        async with infra_daemon() as session:

            async def launch(key: str, args: dict[str, Any]) -> None:
                answers[key] = await structured(session, "launch_host", args)

            other_version = await call(session, "launch_host", {"hostApp": "MyCAD", "version": "2025"})
            assert other_version.is_error and other_version.structured_content is not None
            assert other_version.structured_content["available"] == ["2026"]
            async with anyio.create_task_group() as tg:
                tg.start_soon(launch, "demo", {"hostApp": "Demo"})
                tg.start_soon(launch, "mycad", {"filePath": str(drawing), "detach": True})
                tg.start_soon(launch, "document", {"filePath": str(document)})
            demo, mycad, doc = answers["demo"], answers["mycad"], answers["document"]
            assert not any("type" in a for a in answers.values()), answers
            detached_pid = mycad["pid"]

            assert (demo["hostApp"], demo["version"], demo["detached"]) == ("Demo", "1.0", False)
            assert (mycad["hostApp"], mycad["version"], mycad["detached"]) == ("MyCAD", "2026", True)
            assert mycad["filePath"] == str(drawing)
            assert doc["hostApp"] == document_host and doc["filePath"] == str(document)
            for answer in (demo, mycad, doc):
                assert answer["bridgeConnected"] is True and answer["capabilities"] > 0
                assert answer["hostInstanceId"].endswith(f"-{answer['pid']}")

            listing = await structured(session, "list_host_instances")
            assert sorted(h["pid"] for h in listing["hosts"]) == sorted(a["pid"] for a in (demo, mycad, doc))
            for answer in (demo, mycad):
                (echo,) = [
                    i
                    for i in await find(session, "echo", hostInstanceId=answer["hostInstanceId"])
                    if i["target"] == "echo"
                ]
                result = await call(
                    session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "hi"}}
                )
                assert result.content[0].text == "hi"
            code = await find(session, "execute python code", hostInstanceId=doc["hostInstanceId"])
            assert "execute_python_code" in [i["target"] for i in code]

            # a restart keeps how the host was started: attached to this daemon, or detached
            again = await structured(
                session, "launch_host", {"restartHostInstanceId": demo["hostInstanceId"]}
            )
            moved = await structured(
                session, "launch_host", {"restartHostInstanceId": mycad["hostInstanceId"]}
            )
            assert (again["detached"], moved["detached"]) == (False, True), (again, moved)
            assert wait_gone(detached_pid, 5)
            detached_pid, demo = moved["pid"], again

        assert wait_gone(demo["pid"]) and wait_gone(doc["pid"]), "attached hosts outlived the daemon"
        assert pid_alive(detached_pid), "a detached host stopped with the daemon"
    finally:
        if detached_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(detached_pid, signal.SIGTERM)
            wait_gone(detached_pid, 5)


async def test_restarting_a_host_that_exited_leaves_whatever_has_its_pid_now(tmp_path: Path) -> None:
    """Its socket is gone, so its pid may be another of the user's processes: only start anew."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    directory = HostDirectory(SearchIndex(), directory=tmp_path)
    launcher = HostLauncher(directory)
    try:
        key = HostKey(directory.machine_id, bystander.pid)
        entry = HostEntry.build(
            key,
            host_app="DXF",
            version="1.4",
            endpoint=str(tmp_path / f"cadmcp_DXF_1.4_{bystander.pid}.sock"),
            protocol_version="2025-11-25",
            server_name="DXF",
            tools=[],
            resources=[],
            templates=[],
        )
        directory.install(entry, object(), [], [], [])  # type: ignore[arg-type]
        directory.remove(key)  # the host exited (and removed its socket)
        with pytest.raises(DaemonError):  # nothing runs discovery here: the new host is never seen
            await launcher.restart(
                {"restartHostInstanceId": key.instance_id, "timeoutSeconds": 1, "detach": False}
            )
        assert bystander.poll() is None  # not signalled
    finally:
        launcher.shutdown()
        bystander.kill()
        bystander.wait()
