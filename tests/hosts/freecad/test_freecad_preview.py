"""Previews of execute_python_code (dryRun) on real FreeCAD hosts through a real daemon: the script
runs in a FreeCAD transaction, the answer names what it creates, modifies (with the properties) and
deletes and pictures it, and the transaction is aborted; a rejected preview leaves the document and
its saved file as they were, an approved one gives exactly the previewed result."""

from __future__ import annotations

import ast
import base64
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from freecad_helpers import FreeCAD, padded_sketch, text_of, wait_for_freecad
from PIL import Image, ImageChops
from tests.core.helpers import structured
from tests.policy.helpers import policy_env

from cadmcp.corpus.runner import dump_script
from cadmcp.daemon.policy import Policy, Subject
from cadmcp.daemon.policy.gate import preview_summary, question

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SPARE = "doc.addObject('Part::Cylinder', 'Spare').Radius = 3"
BOSS = """# Thicker plate, a boss on it
doc.getObject('Params').set('B3', '12')
boss = doc.addObject('Part::Box', 'Boss')
boss.Label = 'Boss block'
boss.Placement.Base = Vector(5, 5, 12)
"""
CHANGE = BOSS.replace("a boss on it", "a boss on it, the spare cylinder gone") + "doc.removeObject('Spare')\n"
FAILING = "doc.addObject('Part::Box', 'Stray')\ndoc.getObject('Params').set('B3', '30')\n1 / 0\n"
STATE = "(doc.UndoNames, doc.RedoNames, sorted(o.Name for o in doc.Objects))"
SAVE_STAMP = re.compile(rb'(<Property name="LastModifiedDate"[^>]*>\s*<String value=")[^"]*')
STATUS = re.compile(rb' status="\d+"')


async def _preview(fc: FreeCAD, code: str) -> Any:
    return await fc.invoke("execute_python_code", {"code": code, "dryRun": True})


async def _revision(fc: FreeCAD) -> str:
    found = (await _preview(fc, "len(doc.Objects)")).structured_content
    assert found["revision"]["before"] == found["revision"]["after"]
    return str(found["revision"]["before"])


async def _dump(fc: FreeCAD, out: Path, code: str = "", dry: bool = False) -> dict[str, Any]:
    """The corpus runner's canonical dump of the document (after ``code``, in a preview when ``dry``)."""
    out.unlink(missing_ok=True)
    anchor = "import json as _json\n"
    script = dump_script("freecad", out).replace(anchor, f"{code}\n{anchor}", 1)
    arguments: dict[str, Any] = {"code": script}
    if dry:  # a preview writes no file: the dump is printed
        written = (
            f"with open({str(out)!r}, 'w', encoding='utf-8') as _fh:\n"
            "    _json.dump(_state, _fh, sort_keys=True)\n"
        )
        assert written in script
        arguments["code"] = script.replace(written, "print('DUMP' + _json.dumps(_state, sort_keys=True))\n")
        arguments["dryRun"] = True
    result = await fc.invoke("execute_python_code", arguments)
    assert not result.is_error and "[UNDO STEP]" not in text_of(result), text_of(result)
    if dry:
        line = next(ln for ln in text_of(result).splitlines() if ln.startswith("DUMP"))
        return json.loads(line[4:])
    return json.loads(out.read_text(encoding="utf-8"))


def _saved(path: Path) -> dict[str, bytes]:
    """The saved document's Document.xml without its save time and FreeCAD's property status bits."""
    with zipfile.ZipFile(path) as archive:
        xml = archive.read("Document.xml")
        names = sorted(archive.namelist())
    return {"names": repr(names).encode(), "Document.xml": STATUS.sub(b"", SAVE_STAMP.sub(rb"\1", xml))}


def _asked(preview: Any) -> str:
    """The question a confirmation of the previewed call puts to the person."""
    subject = Subject("execute_python_code", host_app="FreeCAD", document="bracket.FCStd")
    decision = Policy("confirm-changes").decide(subject)
    summary = preview_summary(preview.model_dump(by_alias=True, mode="json"))
    return str(question(decision, subject, {"code": CHANGE}, summary)["message"])


def _image(result: Any, n: int) -> Image.Image:
    data = [c.data for c in result.content if c.type == "image"][n]
    return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")


async def test_a_rejected_freecad_preview_leaves_the_saved_document_and_approval_applies_exactly_it(
    hosts: Any, daemon: Any, sample: Path, tmp_path: Path
) -> None:
    hosts.start("freecad", str(sample))
    async with daemon() as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        assert not (await fc.run(SPARE, "Add a spare cylinder")).is_error
        assert not (await fc.invoke("save_document", {})).is_error
        saved = _saved(sample)
        before = await _dump(fc, tmp_path / "dump.json")
        state = await fc.value(STATE)
        start = await _revision(fc)

        preview = await _preview(fc, CHANGE)
        assert not preview.is_error, text_of(preview)
        found = preview.structured_content
        assert found["created"]["byKind"] == {"Part::Box": 1}
        assert found["created"]["sample"] == [{"id": "Boss", "kind": "Part::Box", "name": "Boss block"}]
        assert found["deleted"]["sample"] == [{"id": "Spare", "kind": "Part::Cylinder", "name": "Spare"}]
        modified = {s["id"]: s for s in found["modified"]["sample"]}
        assert modified["Plate"]["kind"] == "PartDesign::Pad" and {"Length", "Shape"} <= set(
            modified["Plate"]["changed"]
        )
        assert "cells" in modified["Params"]["changed"] and "Hole" in modified and "Bracket" in modified
        assert found["revision"]["before"] == start != found["revision"]["after"]
        said = text_of(preview)
        assert "creates 1 (1 Part::Box)" in said and "deletes 1 (1 Part::Cylinder)" in said
        assert ImageChops.difference(_image(preview, 0), _image(preview, 1)).getbbox() is not None
        asked = _asked(preview)  # what a confirmation shows the person
        assert "creates 1 (1 Part::Box): Boss block" in asked and re.search(r"Plate \([^)]*Length", asked)

        # rejected: the same document (objects, undo and redo stacks), its canonical
        # dump unchanged, still saved, and saving it again writes what was saved
        assert await fc.value(STATE) == state
        assert await _revision(fc) == start
        assert await _dump(fc, tmp_path / "dump.json") == before
        listed = (await fc.invoke("list_documents", {})).structured_content
        assert listed["documents"][0]["modified"] is False
        assert not (await fc.invoke("save_document", {})).is_error
        assert _saved(sample) == saved

        # approved: exactly what the preview showed (its canonical dump taken inside the preview)
        shown = await _dump(fc, tmp_path / "shown.json", CHANGE, dry=True)
        applied = await fc.invoke(
            "execute_python_code", {"code": CHANGE, "previewed": found["applyWith"]["previewed"]}
        )
        assert not applied.is_error, text_of(applied)
        assert "[UNDO STEP] Recorded 'Thicker plate, a boss on it, the spare" in text_of(applied)
        assert await _revision(fc) == found["revision"]["after"]
        result = await _dump(fc, tmp_path / "dump.json")
        assert result["objects"] == shown["objects"]  # (the preview's dump ran before its recompute)
        assert shown["objects"]["Plate"]["props"]["Length"][0] == 12.0


async def test_a_concurrent_change_stops_the_approval_and_a_failing_preview_leaves_nothing(
    hosts: Any, daemon: Any, daemon_client: Any, freecad_env: dict[str, str], sample: Path, tmp_path: Path
) -> None:
    hosts.start("freecad", str(sample))
    async with daemon() as session, daemon_client(era="legacy", env=freecad_env) as other:
        await wait_for_freecad(session)
        await wait_for_freecad(other)
        fc, colleague = FreeCAD(session), FreeCAD(other)
        state = await fc.value(STATE)
        start = await _revision(fc)

        failed = await _preview(fc, FAILING)
        assert failed.is_error and "ZeroDivisionError" in text_of(failed)
        assert "Preview only: nothing was changed." in text_of(failed)
        assert await fc.value(STATE) == state and await _revision(fc) == start
        escaping = await _preview(fc, "doc.addObject('Part::Box', 'Escapee')\ndoc.commitTransaction()\n")
        assert escaping.is_error and "ended FreeCAD's transaction itself" in text_of(escaping)
        assert await _revision(fc) == start and "on the redo stack now" in text_of(escaping)
        assert ast.literal_eval(await fc.value("doc.addObject('Part::Box', 'Stray').Name")) == "Stray"
        await fc.invoke("navigate_history", {"direction": "back"})
        assert await _revision(fc) == start

        preview = await _preview(fc, BOSS)
        assert not preview.is_error, text_of(preview)
        previewed = preview.structured_content["applyWith"]["previewed"]
        moved = await colleague.run("doc.getObject('Params').set('B1', '70')", "Longer plate")
        assert not moved.is_error, text_of(moved)
        changed = await _revision(fc)
        refused = await fc.invoke("execute_python_code", {"code": BOSS, "previewed": previewed})
        assert refused.is_error
        assert "[NOT APPLIED] The document changed since the preview" in text_of(refused)
        assert "nothing ran" in text_of(refused) and "Preview again (dryRun)" in text_of(refused)
        assert await _revision(fc) == changed
        names = ast.literal_eval(await fc.value("doc.UndoNames"))
        assert names == ["Longer plate", *ast.literal_eval(state)[0]]  # the colleague's step, and no other

        # a person asked under confirm-changes sees the preview; a no changes nothing, a yes applies it
        asked: list[str] = []
        answers = ["decline", "accept"]

        async def elicit(context: Any, params: Any) -> types.ElicitResult:
            asked.append(params.message)
            answer = answers.pop(0)
            content = {"approve": True} if answer == "accept" else None
            return types.ElicitResult(action=answer, content=content)

        env = {**freecad_env, **policy_env(tmp_path, {"profile": "confirm-changes"})}
        async with daemon_client(era="legacy", env=env, elicitation_callback=elicit) as confirming:
            await wait_for_freecad(confirming)
            person = FreeCAD(confirming)
            declined = await person.run(BOSS)
            assert declined.structured_content["type"] == "not_confirmed"
            assert "Preview (run in the document's transaction and rolled back; " in asked[0]
            assert "creates 1 (1 Part::Box): Boss block" in asked[0]
            assert re.search(r"Plate \([^)]*Length", asked[0])
            assert await _revision(fc) == changed
            accepted = await person.run(BOSS)
            assert not accepted.is_error, text_of(accepted)
            assert "[UNDO STEP] Recorded 'Thicker plate, a boss on it'" in text_of(accepted)


async def test_a_preview_in_freecads_window_pictures_the_3d_view_and_leaves_the_document_unmodified(
    gui_env: dict[str, str], hosts: Any, daemon: Any, sample: Path, tmp_path: Path
) -> None:
    hosts.start("freecad", "--gui", str(sample), timeout=120.0)
    async with daemon(**gui_env) as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        assert (await fc.read("freecad://version"))["gui"] is True
        assert not (await fc.invoke("save_document", {})).is_error
        before = await _dump(fc, tmp_path / "dump.json")
        state = await fc.value(STATE)
        start = await _revision(fc)

        preview = await _preview(fc, BOSS)
        assert not preview.is_error, text_of(preview)
        found = preview.structured_content
        assert found["created"]["sample"] == [{"id": "Boss", "kind": "Part::Box", "name": "Boss block"}]
        assert not any(note.startswith("The") for note in found["notes"]), found["notes"]
        assert ImageChops.difference(_image(preview, 0), _image(preview, 1)).getbbox() is not None

        assert await fc.value(STATE) == state and await _revision(fc) == start
        assert await _dump(fc, tmp_path / "dump.json") == before
        listed = (await fc.invoke("list_documents", {})).structured_content
        assert listed["documents"][0]["modified"] is False  # the window's own flag (the title's asterisk)
        applied = await fc.invoke(
            "execute_python_code", {"code": BOSS, "previewed": found["applyWith"]["previewed"]}
        )
        assert not applied.is_error, text_of(applied)
        assert await _revision(fc) == found["revision"]["after"]

        # after an undo, a preview in the window runs in a hidden copy: the redo step stays
        back = await fc.invoke("navigate_history", {"direction": "back"})
        assert not back.is_error, text_of(back)
        undone = await fc.value(STATE)
        copied = await _preview(fc, SPARE)
        assert not copied.is_error, text_of(copied)
        assert any("tessellated" in note for note in copied.structured_content["notes"])
        assert await fc.value(STATE) == undone and await _revision(fc) == start
        assert await fc.value("len(App.listDocuments())") == "1"  # the copy is closed
        forward = await fc.invoke("navigate_history", {"direction": "forward"})
        assert not forward.is_error and await _revision(fc) == found["revision"]["after"]


async def test_a_preview_after_an_undo_keeps_the_redo_steps_and_its_approval_applies_exactly_it(
    hosts: Any, daemon: Any, sample: Path, tmp_path: Path
) -> None:
    hosts.start("freecad", str(sample))
    async with daemon() as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        assert not (await fc.run(SPARE, "Add a spare cylinder")).is_error
        boss = BOSS.replace(
            "doc.getObject('Params').set('B3', '12')\n", ""
        )  # a cell set after another step: the undo xfail
        assert not (await fc.run(boss, "Add the boss")).is_error
        done = await _dump(fc, tmp_path / "done.json")
        back = await fc.invoke("navigate_history", {"direction": "back"})
        assert not back.is_error, text_of(back)
        state = await fc.value(STATE)
        assert ast.literal_eval(state)[1] == ["Add the boss"]  # on the redo stack
        undone = await _dump(fc, tmp_path / "undone.json")
        start = await _revision(fc)

        preview = await _preview(fc, CHANGE.replace("'Boss'", "'Boss2'"))
        assert not preview.is_error, text_of(preview)
        found = preview.structured_content
        assert found["revision"]["before"] == start and found["created"]["byKind"] == {"Part::Box": 1}
        assert any("copy of the document" in n for n in found["notes"]), found["notes"]
        assert await fc.value(STATE) == state  # rejected: undo and redo stacks as they were
        assert await _dump(fc, tmp_path / "undone.json") == undone
        listed = (await fc.invoke("list_documents", {})).structured_content["documents"]
        assert [d["title"] for d in listed] == [sample.name]  # the copy is gone

        forward = await fc.invoke("navigate_history", {"direction": "forward"})
        assert not forward.is_error and forward.structured_content["navigated"] == 1, text_of(forward)
        assert await _dump(fc, tmp_path / "done.json") == done  # redo gives back exactly the step
        back = await fc.invoke("navigate_history", {"direction": "back"})
        assert not back.is_error and await fc.value(STATE) == state

        # approved: what the preview in the copy showed is what the document itself becomes
        again = await _preview(fc, CHANGE.replace("'Boss'", "'Boss2'"))
        previewed = again.structured_content["applyWith"]["previewed"]
        assert previewed == found["applyWith"]["previewed"]
        applied = await fc.invoke(
            "execute_python_code", {"code": CHANGE.replace("'Boss'", "'Boss2'"), "previewed": previewed}
        )
        assert not applied.is_error, text_of(applied)
        assert await _revision(fc) == found["revision"]["after"]


async def test_a_preview_whose_recompute_fails_warns_as_the_applied_run_does(
    daemon: Any, sample: Path
) -> None:
    """A Pad made 0 mm long fails in the recompute, and FreeCAD keeps the last good shape, so the
    after-picture looks unchanged: the preview says which objects the recompute left in error (the
    answer and the person's question), as the applied run's answer does."""
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        assert not (await fc.run(padded_sketch())).is_error
        breaking = "doc.getObject('Pad').Length = 0"
        preview = await _preview(fc, breaking)
        assert not preview.is_error, text_of(preview)
        (warning,) = preview.structured_content["warnings"]
        assert warning.startswith("The recompute left 1 object(s) in error: Pad (PartDesign::Pad)"), warning
        assert "Fix them or change the script" in warning and f"[WARNING] {warning}" in text_of(preview)
        summary = preview_summary(preview.model_dump(by_alias=True, mode="json"))
        assert summary is not None and summary["warnings"] == [warning]
        subject = Subject("execute_python_code", host_app="FreeCAD", document="bracket.FCStd")
        asked = question(Policy("confirm-changes").decide(subject), subject, {"code": breaking}, summary)
        assert f"  warning: {warning}" in asked["message"]
        applied = await fc.run(breaking)
        assert "[WARNING] The recompute left 1 object(s) in error: Pad (PartDesign::Pad)" in text_of(applied)
