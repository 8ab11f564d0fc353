"""Three apps at once in a real daemon: the real DXF, IFC and headless FreeCAD hosts, each with
its own declared domain words. The request's words pick the app among three twins, FreeCAD's
words (sketch, pad, body) go to FreeCAD and the others' words stay with theirs, the host used
last breaks ties, and a change no tool is named for goes to the right app's code tool."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_component
from tests.core.helpers import call, find, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def three_hosts(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DXF, IFC and headless FreeCAD hosts on the samples (FreeCAD with a private HOME)."""
    missing = None if shutil.which("freecadcmd") else "FreeCAD is not installed (bash .ci/deps/freecad.sh)"
    require_component("freecad", missing)
    home = tmp_path / "home"
    home.mkdir()
    for key, value in {"HOME": home, "XDG_CONFIG_HOME": home / ".config"}.items():
        monkeypatch.setenv(key, str(value))
    bracket = tmp_path / "bracket.FCStd"
    shutil.copyfile(SAMPLES / "bracket.FCStd", bracket)
    toolsets = SAMPLES / "toolsets"  # with their sample toolsets, as in the evaluation catalogs
    started = [
        hosts.spawn("dxf", str(SAMPLES / "floorplan.dxf"), "--toolset", str(toolsets / "dxf")),
        hosts.spawn("ifc", str(SAMPLES / "house.ifc"), "--toolset", str(toolsets / "ifc")),
        hosts.spawn("freecad", str(bracket), "--toolset", str(toolsets / "freecad")),
    ]
    for proc in started:
        hosts.wait_ready(proc, timeout=120)


async def _first(session: Any, query: str, target: str | None = None) -> dict[str, Any]:
    """The first item of a search (the first with `target`, when given)."""
    items = await find(session, query, limit=12)
    return next(i for i in items if target is None or i["target"] == target)


async def _use(session: Any, app: str) -> None:
    items = await find(session, "list_documents", limit=32)
    item = next(i for i in items if i["target"] == "list_documents" and i["hostApp"] == app)
    result = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": {}})
    assert not result.is_error, result


async def test_each_apps_words_pick_its_twin_and_recency_breaks_ties(
    three_hosts: None, daemon_client: Any
) -> None:
    async with daemon_client() as session:
        await wait_for_hosts(session, 3, timeout=60)
        listing = await structured(session, "list_host_instances")
        assert sorted(h["hostApp"] for h in listing["hosts"]) == ["DXF", "FreeCAD", "IFC"]

        await _use(session, "FreeCAD")
        twins = [i for i in await find(session, "screenshot") if i["target"] == "view_screenshot"]
        assert [t["hostApp"] for t in twins][:1] == ["FreeCAD"] and len(twins) == 3
        assert twins[0]["why"] == "its host was used most recently"
        assert twins[0]["document"] == "bracket.FCStd"

        # FreeCAD was used last, but these requests speak of the others' domains
        shot = await _first(session, "screenshot of one storey of the building", "view_screenshot")
        assert shot["hostApp"] == "IFC" and "storey" in shot["why"]
        shot = await _first(session, "screenshot of the layers of the floor plan", "view_screenshot")
        assert shot["hostApp"] == "DXF" and "layer" in shot["why"]

        await _use(session, "DXF")
        # DXF was used last, but these speak of FreeCAD's parts, sketches and pads
        shot = await _first(session, "screenshot of the sketch and the pad", "view_screenshot")
        assert shot["hostApp"] == "FreeCAD" and "sketch" in shot["why"]
        undo = await _first(session, "undo the last pad of the body", "navigate_history")
        assert undo["hostApp"] == "FreeCAD"

        # a change no capability is named for goes to the code tool of the app it speaks of
        for query, app in [
            ("rename body to Bracket", "FreeCAD"),
            ("rename layer WALLS to A-WALL", "DXF"),
            ("rename storey Level 1 to Ground", "IFC"),
        ]:
            first = await _first(session, query)
            assert (first["hostApp"], first["target"]) == (app, "execute_python_code"), query
            assert first["why"].startswith("general-purpose tool"), first

        # the app named as one word, as people type it, among three list_documents twins
        named = await _first(session, "which documents are open in freecad", "list_documents")
        assert named["hostApp"] == "FreeCAD" and named["why"] == "the request names FreeCAD"

        # the built-ins' own keywords, sent by the real hosts, and names kept out of the domain
        for query, app, target in [
            ("which drawings are currently open", "DXF", "list_documents"),
            ("code examples for the ifc host", "IFC", "ifc://python-cheatsheet"),
            ("Layer umbenennen: WAND -> A-WALL", "DXF", "execute_python_code"),
            ("why did the recompute of the pad fail", "FreeCAD", "freecad://model/warnings"),
        ]:
            first = await _first(session, query)
            assert (first["hostApp"], first["target"]) == (app, target), (query, first)

        # three kinds of request, as a new user types them: a change by an amount goes to the
        # code tool, a view direction asks for a picture, a count of things asks the model
        first = await _first(session, "make the bracket 5 mm thicker")
        assert first["target"] == "execute_python_code", first
        first = await _first(session, "show me the model from the top")
        assert first["target"] == "view_screenshot", first
        first = await _first(session, "how many doors are there")
        assert first["hostApp"] == "IFC" and first["target"] != "navigate_history", first


@pytest.mark.parametrize(("kind", "sample"), [("dxf", "floorplan.dxf"), ("ifc", "house.ifc")])
async def test_a_host_with_no_toolset_reads_counts_and_changes_by_their_class(
    hosts: Any, daemon_client: Any, kind: str, sample: str
) -> None:
    """A new user's host, no toolset loaded: a count of things asks for the model (not undo, whose
    step count is a parameter), and a change by a measure no tool is named for goes to the code
    tool (not a tool that matches only the light verb "make")."""
    hosts.wait_ready(hosts.spawn(kind, str(SAMPLES / sample)), timeout=120)
    async with daemon_client() as session:
        await wait_for_hosts(session, 1, timeout=60)
        for query in ("how many doors are there", "how many doors"):
            first = (await find(session, query, limit=5))[0]
            assert first["target"] == f"{kind}://schedules", (query, first)
        first = (await find(session, "make the wall 100 mm thicker", limit=5))[0]
        assert first["target"] == "execute_python_code" and "100 mm" in first["why"], first
