"""Previews of execute_python_code (dryRun) and applying exactly what was previewed, on real
DXF and IFC hosts through a real daemon."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from cadmcp.daemon.policy import control
from cadmcp.daemon.policy.gate import APPROVAL_KEY
from tests.core.helpers import call, find_target, wait_for_hosts
from tests.policy.helpers import host_on_copy, log_lines, policy_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ADD_AND_DELETE = """# Add three grid lines and remove the first text
for n in range(3):
    msp.add_line((0, n * 1000), (9000, n * 1000), dxfattribs={"layer": "S-GRID"})
texts = msp.query("MTEXT")
msp.delete_entity(texts[0])
len(msp)
"""
NO_CHANGE = "len(msp)"


SAVE_STAMPS = ("$TDUPDATE", "$TDUUPDATE", "$VERSIONGUID", "$TDINDWG")


def _without_save_stamps(data: bytes) -> list[str]:
    """A saved DXF's lines without the values each save writes anew (time, version GUID, writer stamp)."""
    lines = data.decode().splitlines()
    out, skip = [], 0
    for n, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        if line.strip() in SAVE_STAMPS:
            skip = 2
        elif " @ " in line and n > 0 and lines[n - 1].strip() == "1":
            continue
        out.append(line)
    return out


async def _run(session: Any, cap_id: str, code: str, **more: Any) -> Any:
    return await call(session, "invoke_dynamic", {"id": cap_id, "arguments": {"code": code, **more}})


async def _revision(session: Any, cap_id: str, code: str = NO_CHANGE) -> str:
    """The document's revision now: a preview of a script that changes nothing."""
    answer = await _run(session, cap_id, code, dryRun=True)
    assert not answer.is_error, answer
    revision = answer.structured_content["revision"]
    assert revision["before"] == revision["after"]
    return str(revision["before"])


async def test_a_rejected_dxf_preview_leaves_the_drawing_as_it_was_and_approval_applies_exactly_it(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        save = await find_target(session, "save_document", "DXF")
        assert not (await call(session, "invoke_dynamic", {"id": save["id"], "arguments": {}})).is_error
        before_file = drawing.read_bytes()
        start = await _revision(session, code["id"])

        preview = await _run(session, code["id"], ADD_AND_DELETE, dryRun=True)
        assert not preview.is_error, preview
        found = preview.structured_content
        assert found["dryRun"] is True
        assert found["created"]["count"] == 3 and found["created"]["byKind"] == {"LINE": 3}
        assert {s["name"] for s in found["created"]["sample"]} == {"on layer S-GRID"}
        assert found["deleted"]["count"] == 1 and found["deleted"]["byKind"] == {"MTEXT": 1}
        assert found["revision"]["before"] == start
        assert [c.type for c in preview.content] == ["text", "text", "image", "text", "image"]
        before_png, after_png = preview.content[2].data, preview.content[4].data
        assert before_png != after_png  # the grid lines are in the after-picture
        assert (
            "creates 3 (3 LINE)" in preview.content[0].text
            and "deletes 1 (1 MTEXT)" in preview.content[0].text
        )

        # rejected: the file was never touched, the drawing in memory is what it was, and saving it
        # writes what was saved before (but for the stamps every save writes)
        assert drawing.read_bytes() == before_file
        assert await _revision(session, code["id"]) == start
        saved = await call(session, "invoke_dynamic", {"id": save["id"], "arguments": {}})
        assert not saved.is_error, saved
        assert _without_save_stamps(drawing.read_bytes()) == _without_save_stamps(before_file)

        # approved: exactly the previewed change, as one undo step
        previewed = found["applyWith"]["previewed"]
        applied = await _run(session, code["id"], ADD_AND_DELETE, previewed=previewed)
        assert not applied.is_error, applied
        assert await _revision(session, code["id"]) == found["revision"]["after"]
        again = await _run(session, code["id"], ADD_AND_DELETE, previewed=previewed)
        assert (
            again.is_error and "[NOT APPLIED] The document changed since the preview" in again.content[0].text
        )


async def test_a_change_by_another_client_between_preview_and_approval_stops_the_approval(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    async with daemon_client() as agent, daemon_client(era="legacy") as colleague:
        await wait_for_hosts(agent, 1)
        await wait_for_hosts(colleague, 1)
        code = await find_target(agent, "execute_python_code", "DXF")
        preview = await _run(agent, code["id"], ADD_AND_DELETE, dryRun=True)
        previewed = preview.structured_content["applyWith"]["previewed"]
        other = await find_target(colleague, "execute_python_code", "DXF")
        moved = await _run(colleague, other["id"], "msp.add_circle((0, 0), 50)")
        assert not moved.is_error
        changed = await _revision(agent, code["id"])
        refused = await _run(agent, code["id"], ADD_AND_DELETE, previewed=previewed)
        assert refused.is_error and "changed since the preview" in refused.content[0].text
        assert "nothing ran" in refused.content[0].text
        assert await _revision(agent, code["id"]) == changed  # the colleague's circle, and nothing else

        # a script that does not give the same result twice is not applied either
        random_code = "import random\nmsp.add_circle((0, 0), random.random() + 1)"
        shaky = await _run(agent, code["id"], random_code, dryRun=True)
        result = await _run(
            agent, code["id"], random_code, previewed=shaky.structured_content["applyWith"]["previewed"]
        )
        assert result.is_error and "[NOT APPLIED]" in result.content[0].text
        assert "rolled back" in result.content[0].text
        assert await _revision(agent, code["id"]) == changed


async def test_an_ifc_preview_names_the_elements_and_rolls_back(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    model = tmp_path / "house.ifc"
    shutil.copy(SAMPLES / "house.ifc", model)
    hosts.start("ifc", str(model))
    script = (
        "storey = model.by_type('IfcBuildingStorey')[0]\n"
        "wall = api.root.create_entity(model, ifc_class='IfcWall', name='Preview wall')\n"
        "api.spatial.assign_container(model, products=[wall], relating_structure=storey)\n"
        "old = model.by_type('IfcDoor')[0]\n"
        "old.Name = 'Renamed door'\n"
    )
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "IFC")
        start = await _revision(session, code["id"], "len(model.by_type('IfcWall'))")
        preview = await _run(session, code["id"], script, dryRun=True)
        assert not preview.is_error, preview
        found = preview.structured_content
        walls = [s for s in found["created"]["sample"] if s["kind"] == "IfcWall"]
        assert walls and walls[0]["name"] == "Preview wall"
        assert any(
            s["kind"] == "IfcDoor" and s["name"] == "Renamed door" for s in found["modified"]["sample"]
        )
        assert found["deleted"]["count"] == 0
        assert await _revision(session, code["id"], "len(model.by_type('IfcWall'))") == start
        applied = await _run(session, code["id"], script, previewed=found["applyWith"]["previewed"])
        assert not applied.is_error, applied  # the host checked it ended at the previewed revision
        check = (
            "[w.Name for w in model.by_type('IfcWall') if w.Name == 'Preview wall'], "
            "model.by_type('IfcDoor')[0].Name"
        )
        read = await _run(session, code["id"], check)
        assert "(['Preview wall'], 'Renamed door')" in read.content[0].text


async def test_an_ifc_change_stamped_with_the_time_applies_as_previewed(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """In a model that keeps owner history (IFC2X3 ones, authoring tools' exports), each
    ifcopenshell.api change is stamped with the time of the call: applied a second later than its
    preview, it is still the previewed change (it was refused as 'not the previewed revision')."""
    host_on_copy(hosts, tmp_path, "house.ifc", "ifc")
    owner = (
        "person = model.createIfcPerson(FamilyName='Tester')\n"
        "firm = model.createIfcOrganization(Name='Firm')\n"
        "model.createIfcPersonAndOrganization(person, firm)\n"
        "model.createIfcApplication(firm, '1.0', 'Test app', 'TEST')\n"
    )
    move = (
        "import numpy as np\n"
        "matrix = np.eye(4)\n"
        "matrix[0, 3] = 1.0\n"
        "api.geometry.edit_object_placement(model, product=model.by_type('IfcWall')[0], matrix=matrix)\n"
    )
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "IFC")
        assert not (await _run(session, code["id"], owner)).is_error
        preview = await _run(session, code["id"], move, dryRun=True)
        assert not preview.is_error, preview
        assert any(s["kind"] == "IfcOwnerHistory" for s in preview.structured_content["created"]["sample"])
        await anyio.sleep(1.1)  # the next second: another time stamp
        applied = await _run(
            session, code["id"], move, previewed=preview.structured_content["applyWith"]["previewed"]
        )
        assert not applied.is_error, applied.content[0].text


async def test_a_confirmation_shows_the_preview_and_a_yes_applies_exactly_it(
    hosts: Any, daemon_client: Any, tmp_path: Path, runtime_dir: Path
) -> None:
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    asked: list[str] = []
    answers = ["decline", "accept", "accept"]  # the rejected change, the applied one, the agent's own

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        answer = answers.pop(0)
        return types.ElicitResult(action=answer, content={"approve": True} if answer == "accept" else None)

    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        start = await _revision(session, code["id"])  # a preview changes nothing: nobody is asked
        assert asked == []
        declined = await _run(session, code["id"], ADD_AND_DELETE)
        assert declined.structured_content["type"] == "not_confirmed"
        # the preview did run the script: the answer does not claim that nothing ran
        assert (
            declined.structured_content["previewRan"] is True
            and "Nothing ran" not in declined.content[0].text
        )
        assert (
            "its preview did run the script, in a transaction that was rolled back"
            in (declined.structured_content["message"])
        )
        assert "Preview (run in the document's transaction and rolled back; it wrote no file" in asked[0]
        assert "creates 3 (3 LINE): on layer S-GRID" in asked[0] and "deletes 1 (1 MTEXT)" in asked[0]
        assert "Code:\n# Add three grid lines" in asked[0]
        applied = await _run(session, code["id"], ADD_AND_DELETE)
        assert not applied.is_error, applied
        assert "[UNDO STEP]" in applied.content[0].text
        # the agent previews by itself, unasked, then applies its preview: the person sees it previewed
        own = await _run(session, code["id"], "msp.add_circle((0, 0), 5)", dryRun=True)
        assert not own.is_error and len(asked) == 2
        mine = await _run(
            session,
            code["id"],
            "msp.add_circle((0, 0), 5)",
            previewed=own.structured_content["applyWith"]["previewed"],
        )
        assert not mine.is_error, mine
        assert "Preview (run in the document's" in asked[2] and "creates 1 (1 CIRCLE)" in asked[2], asked[2]
    decisions = [d for d in log_lines("policy/decision") if d.get("preview")]
    grid = [d for d in decisions if d["preview"]["created"] == 3]
    assert grid and grid[-1]["preview"]["pictures"] == 2
    assert start != grid[-1]["preview"]["previewed"].split(":")[1]

    # a 2026-07-28 client: the preview is in the round, the yes applies it; the queue shows pictures
    async with daemon_client(env=env, elicitation_callback=elicit) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        script = "msp.add_circle((500, 500), 250, dxfattribs={'layer': 'S-GRID'})"
        args = {"id": code["id"], "arguments": {"code": script}}
        first = await session.call_tool("invoke_dynamic", args, allow_input_required=True)
        message = first.input_requests[APPROVAL_KEY].params.message
        assert "creates 1 (1 CIRCLE)" in message
        done = await session.call_tool(
            "invoke_dynamic",
            args,
            input_responses={APPROVAL_KEY: types.ElicitResult(action="accept", content={"approve": True})},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert not done.is_error and "[UNDO STEP]" in done.content[0].text
    async with daemon_client(era="legacy", env=env) as session:  # no elicitation: the queue
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, session, code["id"], "msp.add_point((1, 1))")
            with anyio.fail_after(30):
                while not (doors := control.doors(runtime_dir)) or not (
                    pending := (await control.ask(doors[0], {"op": "list"}))["pending"]
                ):
                    await anyio.sleep(0.2)
            assert len(pending[0]["pictures"]) == 2 and pending[0]["call"]["preview"]["created"]["count"] == 1
            await control.ask(
                doors[0], {"op": "answer", "approvalId": pending[0]["approvalId"], "answer": "decline"}
            )


@pytest.mark.parametrize(
    ("kind", "sample", "change", "other", "count"),
    [
        ("dxf", "floorplan.dxf", "msp.add_circle((0, 0), 5)", ADD_AND_DELETE, "len(msp.query('CIRCLE'))"),
        (
            "ifc",
            "house.ifc",
            "api.root.create_entity(model, ifc_class='IfcWall', name='Redo wall')",
            "model.by_type('IfcDoor')[0].Name = 'Previewed door'",
            "len([w for w in model.by_type('IfcWall') if w.Name == 'Redo wall'])",
        ),
    ],
)
async def test_a_rejected_preview_after_an_undo_keeps_the_redo_step(
    hosts: Any,
    daemon_client: Any,
    tmp_path: Path,
    kind: str,
    sample: str,
    change: str,
    other: str,
    count: str,
) -> None:
    path = tmp_path / sample
    shutil.copy(SAMPLES / sample, path)
    hosts.start(kind, str(path))
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", kind.upper())
        history = await find_target(session, "navigate_history", kind.upper())
        before = (await _run(session, code["id"], count)).content[0].text
        assert not (await _run(session, code["id"], change)).is_error
        after = (await _run(session, code["id"], count)).content[0].text
        assert after != before
        back = await call(
            session, "invoke_dynamic", {"id": history["id"], "arguments": {"direction": "back"}}
        )
        assert not back.is_error and (await _run(session, code["id"], count)).content[0].text == before
        preview = await _run(session, code["id"], other, dryRun=True)
        found = preview.structured_content
        assert not preview.is_error and sum(found[k]["count"] for k in ("created", "modified", "deleted")), (
            found
        )
        forward = {"id": history["id"], "arguments": {"direction": "forward"}}
        redone = await call(session, "invoke_dynamic", forward)
        assert not redone.is_error and redone.structured_content["navigated"] == 1, redone
        assert (await _run(session, code["id"], count)).content[0].text == after


async def test_a_script_whose_preview_changes_nothing_runs_without_asking(
    hosts: Any, daemon_client: Any, tmp_path: Path
) -> None:
    """Under confirm-changes every question put through execute_python_code ("how many walls") asked
    the person, although its preview said it changes nothing. It now runs unasked, applied as
    previewed: a script that changes the document after all is rolled back, not applied unseen."""
    drawing = tmp_path / "plan.dxf"
    shutil.copy(SAMPLES / "floorplan.dxf", drawing)
    hosts.start("dxf", str(drawing))
    env = policy_env(tmp_path, {"profile": "confirm-changes"})
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as session:
        await wait_for_hosts(session, 1)
        code = await find_target(session, "execute_python_code", "DXF")
        start = await _revision(session, code["id"])
        counted = await _run(session, code["id"], "len(msp.query('LINE'))")
        assert not counted.is_error, counted
        assert "Result:" in counted.content[0].text and asked == []
        # changes nothing in its preview, something when it runs again: rolled back, nothing applied
        sneaky = (
            "import ezdxf\nif getattr(ezdxf, '_cadmcp_test_ran', False):\n    msp.add_point((1, 1))\n"
            "ezdxf._cadmcp_test_ran = True"
        )
        refused = await _run(session, code["id"], sneaky)
        assert refused.is_error and "[NOT APPLIED]" in refused.content[0].text, refused
        assert asked == [] and await _revision(session, code["id"]) == start
        # one that keeps its memory in a file cannot be previewed (the preview may not write it): asked
        marked = (
            f"import pathlib\nmark = pathlib.Path({str(tmp_path / 'ran-once')!r})\n"
            "if mark.exists():\n    msp.add_point((1, 1))\nmark.touch()"
        )
        unpreviewed = await _run(session, code["id"], marked)
        assert unpreviewed.structured_content["type"] == "not_confirmed", unpreviewed
        assert len(asked) == 1 and "No preview: the script writes the file" in asked[0], asked
        assert not (tmp_path / "ran-once").exists()
        changing = await _run(session, code["id"], "msp.add_point((2, 2))")
        assert changing.structured_content["type"] == "not_confirmed" and len(asked) == 2
    allowed = [d for d in log_lines("policy/decision") if d.get("how") == "its preview changes nothing"]
    assert len(allowed) == 2 and allowed[0]["outcome"] == "allowed"
