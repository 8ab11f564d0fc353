"""A headless FreeCAD host (freecadcmd) through a real daemon and SDK client: launched by its .FCStd
file, found by search, changed by a script as one FreeCAD transaction, looked at, undone."""

from __future__ import annotations

import ast
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import (
    FreeCAD,
    from_newer_freecad,
    from_older_freecad,
    padded_sketch,
    result_value,
    text_of,
    wait_for_freecad,
)
from PIL import ImageChops
from tests.core.helpers import call, find, structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_launch_by_file_search_pad_look_and_undo(daemon: Any, sample: Path) -> None:
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        assert launched["hostApp"] == "FreeCAD" and launched["version"].startswith("0.")
        hits = await find(session, "run python in freecad to make a padded sketch")
        assert hits[0]["target"] == "execute_python_code" and hits[0]["hostApp"] == "FreeCAD"
        fc = FreeCAD(session, launched["hostInstanceId"])

        listed = (await fc.invoke("list_documents", {})).structured_content
        assert listed["active"] == "bracket.FCStd" and listed["documents"][0]["path"] == str(sample)
        (entry,) = await wait_for_freecad(session)  # the host state the daemon keeps shows the document
        assert entry["state"]["phase"] == "ready" and entry["state"]["activeDocument"] == "bracket.FCStd"
        assert entry["state"]["documents"] == listed["documents"]
        context = await fc.read("freecad://model/context")
        assert context["bodies"][0]["name"] == "Bracket" and context["bodies"][0]["volume"] == pytest.approx(
            60 * 40 * 8 - math.pi * 25 * 8, rel=1e-6
        )
        assert all(s["fullyConstrained"] for s in context["sketches"])

        before_shot = await fc.screenshot(width=480, height=360, view="top")
        original = await fc.fingerprint()
        padded = await fc.run(padded_sketch("Block"), "Add a padded block")
        assert not padded.is_error, text_of(padded)
        assert result_value(padded) == "8000.0"
        assert "[UNDO STEP] Recorded 'Add a padded block'" in text_of(padded)

        after_shot = await fc.screenshot(width=480, height=360, view="top")
        diff = ImageChops.difference(before_shot, after_shot).getbbox()
        assert diff is not None  # the new block is in the picture (the view refits around both parts)

        pad = await fc.read("freecad://element/{elementId}", elementId="Pad")
        assert pad["type"] == "PartDesign::Pad" and pad["shape"]["volume"] == pytest.approx(8000)
        assert pad["shape"]["boundingBox"] == {"min": [0.0, 0.0, 0.0], "max": [40.0, 20.0, 10.0]}

        back = (await fc.invoke("navigate_history", {"direction": "back"})).structured_content
        assert back["operations"] == ["Add a padded block"]
        assert await fc.fingerprint() == original
        assert (
            ImageChops.difference(
                before_shot, await fc.screenshot(width=480, height=360, view="top")
            ).getbbox()
            is None
        )
        plan = await fc.screenshot(width=480, height=360, view="plan")  # as the IFC host names it
        assert ImageChops.difference(before_shot, plan).getbbox() is None


async def test_screenshot_differs_where_the_part_is(daemon: Any) -> None:
    async with daemon() as session:
        await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session)
        empty = await fc.screenshot(width=400, height=300, view="front")
        assert not (await fc.run(padded_sketch())).is_error
        part = await fc.screenshot(width=400, height=300, view="front")
        box = ImageChops.difference(empty, part).getbbox()
        assert box is not None
        left, top, right, bottom = box
        # the part fills the middle of the fitted view: the margins stay background
        assert left > 5 and top > 5 and right < 395 and bottom < 295
        assert part.getpixel((200, 150)) != empty.getpixel((200, 150))
        assert part.getpixel((2, 298)) == empty.getpixel((2, 298))


async def test_a_picture_of_objects_waiting_for_a_recompute_says_they_are_drawn_as_last_computed(
    daemon: Any, sample: Path
) -> None:
    """0x007E's mechanical.FCStd: 49 objects waiting for a recompute were pictured with no word."""
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        clean = await fc.invoke("view_screenshot", {"width": 320})
        assert "NOT RECOMPUTED" not in text_of(clean), text_of(clean)
        assert not (await fc.run("doc.getObject('Bracket').touch()")).is_error
        waiting = await fc.invoke("view_screenshot", {"width": 320})
        said = text_of(waiting)
        assert "[NOT RECOMPUTED] 1 object(s) wait for a recompute (Bracket)" in said, said


async def test_a_failing_script_is_rolled_back_and_the_document_left_exact(daemon: Any, sample: Path) -> None:
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        before = await fc.fingerprint()
        failing = await fc.run(
            "doc.getObject('Params').set('thickness', '30')\n"
            "doc.addObject('Part::Box', 'Extra')\n"
            "doc.removeObject('Hole')\n"
            "doc.recompute()\n"
            "raise RuntimeError('changed my mind')\n"
        )
        assert failing.is_error
        text = text_of(failing)
        assert (
            text.startswith("[RUNTIME ERROR]")
            and "changed my mind" in text
            and "[ROLLBACK] Every change" in text
        )
        assert await fc.fingerprint() == before
        history = (await fc.invoke("navigate_history", {"direction": "back"})).structured_content
        assert history["navigated"] == 0
        warnings = await fc.read("freecad://model/warnings")
        assert warnings["total"] == 0, warnings


async def test_two_freecad_hosts_at_once(daemon: Any, sample: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.FCStd"
    other.write_bytes(sample.read_bytes())
    async with daemon() as session:
        first = await structured(session, "launch_host", {"filePath": str(sample)})
        second = await structured(session, "launch_host", {"filePath": str(other)})
        assert first["pid"] != second["pid"]
        hosts = await wait_for_freecad(session, 2)
        assert {h["pid"] for h in hosts} == {first["pid"], second["pid"]}
        a, b = FreeCAD(session, first["hostInstanceId"]), FreeCAD(session, second["hostInstanceId"])
        assert not (await a.run("doc.getObject('Params').set('thickness', '20')")).is_error
        assert await a.value("doc.getObject('Plate').Length.Value") == "20.0"
        assert await b.value("doc.getObject('Plate').Length.Value") == "8.0"
        assert await b.value("import os\nos.getpid()") == str(second["pid"])


async def test_freecad_keeps_its_own_libraries_and_cadmcp_brings_its_own(daemon: Any) -> None:
    async with daemon() as session:
        await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session)
        code = (
            "import json, sys, numpy, mcp, pydantic\n"
            "json.dumps({'numpy': numpy.__file__, 'mcp': mcp.__file__, 'pydantic': pydantic.__file__, "
            "'python': sys.version_info[:2]})"
        )
        where = json.loads(ast.literal_eval(await fc.value(code)))
        assert where["numpy"].startswith("/usr/lib/python3/")  # FreeCAD's (Debian's) numpy, untouched
        assert (
            "site-packages" in where["mcp"] and "site-packages" in where["pydantic"]
        )  # cadmcp's environment
        version = await fc.read("freecad://version")
        assert version["freecad"].startswith("0.") and version["gui"] is False
        assert version["python"].startswith(".".join(str(v) for v in where["python"]))


async def test_open_document_imports_step_into_a_new_document(daemon: Any, tmp_path: Path) -> None:
    step = tmp_path / "block.step"
    async with daemon() as session:
        await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session)
        made = await fc.run(f"Part.makeBox(10, 20, 30).exportStep({str(step)!r})")
        assert not made.is_error, text_of(made)
        opened = await fc.invoke("open_document", {"filePath": str(step)})
        assert not opened.is_error, text_of(opened)
        assert opened.structured_content["documentTitle"] == "block.step"
        assert "imported into a new document" in opened.structured_content["message"]
        volume = await fc.value("round(sum(o.Shape.Volume for o in doc.Objects if hasattr(o, 'Shape')), 3)")
        assert volume == "6000.0"
        again = await fc.invoke("open_document", {"filePath": str(step)})
        assert again.structured_content["message"].startswith("Already open")
        saved = await fc.invoke("save_document", {})
        assert saved.is_error and ".FCStd" in text_of(saved)
        target = tmp_path / "block.FCStd"
        saved_as = await fc.invoke("save_document", {"filePath": str(target)})
        assert not saved_as.is_error and target.is_file()
        assert saved_as.structured_content["savedAs"] is True
        assert "the file it came from" not in text_of(saved_as)  # there was none
        garbage = tmp_path / "junk.FCStd"
        garbage.write_bytes(b"not a zip" * 100)
        refused = await fc.invoke("open_document", {"filePath": str(garbage)})
        assert refused.is_error and "not a FreeCAD document" in text_of(refused)


async def test_a_bad_start_file_is_refused_with_a_reason(daemon: Any, tmp_path: Path) -> None:
    bad = tmp_path / "broken.FCStd"
    bad.write_bytes(bytes(1000))
    async with daemon() as session:
        result = await call(session, "launch_host", {"filePath": str(bad)})
        assert result.is_error, result
        answer = result.structured_content
        assert answer["type"] == "document_not_opened" and "broken.FCStd" in answer["message"]
        (document,) = answer["documents"]
        assert document["opened"] is False and "not a FreeCAD document" in document["problem"]


async def test_objects_a_newer_freecad_saved_are_said_missing_and_their_file_never_written_over(
    daemon: Any, tmp_path: Path
) -> None:
    """A FreeCAD 1.2 file opened in 0.20 lost its App::Point ("Cannot create object", on stderr only):
    launch_host said opened, the context counted 19 of 20 objects, the warnings were empty, and
    save_document wrote the file over, the object gone for good."""
    newer = from_newer_freecad(tmp_path / "tutorial 1.2.FCStd")
    original = newer.read_bytes()
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(newer)})
        (document,) = launched["documents"]
        said = " ".join(document.get("warnings", []))
        assert document["opened"] and "did not load 1 object(s)" in said, document
        assert "Origin001 (App::Point)" in said and "saved by FreeCAD 1.2" in said, said
        fc = FreeCAD(session, launched["hostInstanceId"])
        warnings = await fc.read("freecad://model/warnings")
        assert [(i["kind"], i["object"]) for i in warnings["issues"]][:1] == [("not_loaded", "Origin001")]

        refused = await fc.invoke("save_document", {})
        assert refused.is_error and "would drop the 1 object(s)" in text_of(refused), text_of(refused)
        same = await fc.invoke("save_document", {"filePath": str(newer)})
        assert same.is_error and "filePath to another" in text_of(same), text_of(same)
        assert newer.read_bytes() == original
        copy = tmp_path / "tutorial in 0.20.FCStd"
        saved = await fc.invoke("save_document", {"filePath": str(copy)})
        assert not saved.is_error and copy.is_file(), text_of(saved)
        again = await fc.invoke("save_document", {})  # the copy never held the object: saved in place
        assert not again.is_error, text_of(again)
    assert newer.read_bytes() == original


async def test_a_file_a_newer_freecad_saved_is_not_written_over_even_with_every_object_loaded(
    daemon: Any, tmp_path: Path
) -> None:
    """sekt1953's GridfinityParametric, saved by FreeCAD 0.22: opening it warned, but save_document
    wrote it over and dropped 130 properties and every element map that version had added."""
    newer = from_newer_freecad(tmp_path / "grid.FCStd", unknown=False)
    original = newer.read_bytes()
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(newer)})
        (document,) = launched["documents"]
        assert "not written over" in " ".join(document.get("warnings", [])), document
        fc = FreeCAD(session, launched["hostInstanceId"])
        refused = await fc.invoke("save_document", {})
        said = text_of(refused)
        assert refused.is_error and "written by FreeCAD 1.2" in said and "another .FCStd" in said, said
        assert newer.read_bytes() == original
        copy = tmp_path / "grid here.FCStd"
        assert not (await fc.invoke("save_document", {"filePath": str(copy)})).is_error
        assert not (await fc.invoke("save_document", {})).is_error  # the copy is this FreeCAD's own
    assert newer.read_bytes() == original


ADDON_OBJECT = """
import sys, types
addon = types.ModuleType("gadget_addon")
class Worker:
    def __init__(self, obj):
        obj.Proxy = self
    def execute(self, obj):
        obj.Shape = Part.makeBox(10, 10, obj.Height.Value)
Worker.__module__ = "gadget_addon"
addon.Worker = Worker
sys.modules["gadget_addon"] = addon
gadget = doc.addObject("Part::FeaturePython", "Gadget")
gadget.addProperty("App::PropertyLength", "Height").Height = 5
Worker(gadget)
doc.recompute()
doc.saveAs(TARGET)
"""


async def test_objects_whose_add_on_is_missing_are_named_and_their_file_never_written_over(
    daemon: Any, sample: Path, tmp_path: Path
) -> None:
    """FreeCAD blocked an add-on's module at open (Zolko-123's CurvedSegment example): the object kept
    its saved shape, never recomputed, the warnings said nothing, and a save wrote its Proxy as null,
    its class and data gone for good."""
    made = tmp_path / "gadget.FCStd"
    async with daemon() as session:
        maker = FreeCAD(
            session, (await structured(session, "launch_host", {"filePath": str(sample)}))["hostInstanceId"]
        )
        built = await maker.run(ADDON_OBJECT.replace("TARGET", repr(str(made))), "Add a gadget")
        assert not built.is_error, text_of(built)
        original = made.read_bytes()
        launched = await structured(session, "launch_host", {"filePath": str(made), "newInstance": True})
        (document,) = launched["documents"]
        said = " ".join(document.get("warnings", []))
        assert "1 object(s) of 'gadget.FCStd' need Python code" in said, said
        assert "Gadget (gadget_addon.Worker)" in said and "gadget_addon" in said, said
        fc = FreeCAD(session, launched["hostInstanceId"])
        warnings = await fc.read("freecad://model/warnings")
        assert [(i["kind"], i["object"]) for i in warnings["issues"]] == [("class_not_loaded", "Gadget")]
        pictured = text_of(await fc.invoke("view_screenshot", {"width": 320}))
        assert "[SAVED SHAPES] 1 add-on object(s) whose add-on is not installed here (Gadget)" in pictured
        refused = await fc.invoke("save_document", {})
        assert refused.is_error and "did not load whole" in text_of(refused), text_of(refused)
        assert made.read_bytes() == original
        copy = tmp_path / "gadget without its add-on.FCStd"
        assert not (await fc.invoke("save_document", {"filePath": str(copy)})).is_error


LINKED_ASSEMBLY = """
part = App.newDocument("part")
part.addObject("Part::Box", "Block")
part.recompute()
part.saveAs(PART)
assembly = App.newDocument("assembly")
assembly.saveAs(ASSEMBLY)  # a link to another file needs its own document saved first
assembly.addObject("App::Link", "BlockLink").LinkedObject = part.getObject("Block")
assembly.recompute()
assembly.save()
"""


async def test_saving_an_assembly_elsewhere_says_its_links_to_other_files_no_longer_resolve(
    daemon: Any, tmp_path: Path
) -> None:
    """Saved into another folder, Zolko-123's Assembly4 example kept its links' paths relative to the
    file ("axis.FCStd"): reopened, every link was empty, and neither the save nor the open said so."""
    folder, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    assembly = folder / "assembly.FCStd"
    code = LINKED_ASSEMBLY.replace("PART", repr(str(folder / "part.FCStd"))).replace(
        "ASSEMBLY", repr(str(assembly))
    )
    async with daemon() as session:
        await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session)
        made = await fc.run(code, "Make a part and an assembly linking it")
        assert not made.is_error, text_of(made)
        opened_here = await structured(
            session, "launch_host", {"filePath": str(assembly), "newInstance": True}
        )
        (document,) = opened_here["documents"]
        also = " ".join(document.get("warnings", []))
        assert "FreeCAD also opened 1 file(s) it links to: 'part.FCStd'" in also, document
        kept = await fc.invoke("save_document", {})  # in its own folder the link resolves: nothing said
        assert not kept.is_error and "not where its links say" not in text_of(kept), text_of(kept)
        moved = await fc.invoke("save_document", {"filePath": str(elsewhere / "assembly.FCStd")})
        said = text_of(moved)
        assert not moved.is_error and "It links to 1 file(s) that are not where its links say" in said, said
        assert "'part.FCStd'" in said
        opened = await structured(
            session, "launch_host", {"filePath": str(elsewhere / "assembly.FCStd"), "newInstance": True}
        )
        (document,) = opened["documents"]
        warned = " ".join(document.get("warnings", []))
        assert "links to 1 file(s) that are not where its links say" in warned and "'part.FCStd'" in warned


async def test_setting_an_attached_objects_placement_says_the_attachment_puts_it_back(
    daemon: Any, sample: Path
) -> None:
    """A script moved a sketch attached to a face (sekt1953's engraved-text model) by its Placement:
    the step said it was done and the saved file held it, but reopened the sketch was back where its
    attachment puts it."""
    async with daemon() as session:
        fc = FreeCAD(
            session, (await structured(session, "launch_host", {"filePath": str(sample)}))["hostInstanceId"]
        )
        assert await fc.value("doc.getObject('HoleSketch').MapMode") == "'FlatFace'"
        moved = await fc.run(
            "doc.getObject('HoleSketch').Placement = App.Placement(Vector(10, 0, 0), App.Rotation())",
            "Move the hole sketch",
        )
        said = text_of(moved)
        assert "The script set the Placement of attached object(s): HoleSketch (MapMode FlatFace)" in said
        assert "change its AttachmentOffset instead" in said
        offset = await fc.run(
            "doc.getObject('HoleSketch').AttachmentOffset = App.Placement(Vector(0, 0, 2), App.Rotation())",
            "Raise the hole sketch",
        )
        assert not offset.is_error and "attached object" not in text_of(offset), text_of(offset)


async def _with_second(session: Any, sample: Path, second: Path) -> FreeCAD:
    """A FreeCAD host launched on the sample with `second`, a copy of it, opened beside it (active)."""
    second.write_bytes(sample.read_bytes())
    launched = await structured(session, "launch_host", {"filePath": str(sample)})
    fc = FreeCAD(session, launched["hostInstanceId"])
    opened = await fc.invoke("open_document", {"filePath": str(second)})
    assert not opened.is_error, text_of(opened)
    return fc


async def test_a_script_changing_another_open_document_says_so_and_that_document_is_unsaved(
    daemon: Any, sample: Path, tmp_path: Path
) -> None:
    """An assembly's script edited a linked part's document (FreeCAD_Assembly4's asm_Bielle, its
    Bielle part): no undo step, no word, `modified: false`, and the change was lost when the host
    stopped (no recovery copy). It is said, and an undo step of that document's own."""
    async with daemon() as session:
        fc = await _with_second(session, sample, tmp_path / "assembly.FCStd")
        edit = "part = App.getDocument('bracket')\npart.getObject('Params').set('B2', '70')\npart.recompute()"
        result = await fc.run(edit, "Widen the bracket from the assembly")
        said = text_of(result)
        assert not result.is_error, said
        assert "also changed bracket.FCStd (Bracket, Hole" in said and "of that document's own" in said, said
        listed = (await fc.invoke("list_documents", {})).structured_content["documents"]
        assert {d["title"]: d["modified"] for d in listed}["bracket.FCStd"] is True, listed
        await fc.invoke("activate_document", {"document": "bracket.FCStd"})
        assert await fc.value("doc.UndoNames") == "['Widen the bracket from the assembly']"
        saved = await fc.invoke("save_document", {})
        assert not saved.is_error, text_of(saved)
        listed = (await fc.invoke("list_documents", {})).structured_content["documents"]
        assert {d["title"]: d["modified"] for d in listed}["bracket.FCStd"] is False, listed


async def test_a_value_its_expression_puts_back_is_said_not_set(daemon: Any, sample: Path) -> None:
    """FreeCAD/Examples' AttachmentTutorial: `pad.Length = 60` on a Pad whose Length an expression
    computes answered "Recorded 'Pad +20'" and the result 60; the recompute had made it 40 again. A
    preview said "modifies nothing" and warned of nothing (roberthart56's parametric_001)."""
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        code = "doc.getObject('Plate').Length = 20"
        preview = await fc.invoke("execute_python_code", {"code": code, "dryRun": True})
        warned = " ".join(preview.structured_content.get("warnings") or [])
        assert "put back what the script set: Plate.Length" in warned, preview.structured_content
        pad = await fc.run("pad = doc.getObject('Plate')\npad.Length = 20\npad.Length.Value", "Pad to 20")
        said = text_of(pad)
        assert not pad.is_error and "The recompute put back what the script set: Plate.Length was set" in said
        assert "('Params.thickness') made it 8.0 mm again" in said, said
        assert await fc.value("doc.getObject('Plate').Length.Value") == "8.0"
        unbound = "pad = doc.getObject('Plate')\npad.setExpression('Length', None)\npad.Length = 20"
        freed = await fc.run(unbound, "Pad to 20 without its expression")
        assert not freed.is_error and "put back" not in text_of(freed), text_of(freed)
        assert await fc.value("doc.getObject('Plate').Length.Value") == "20.0"


async def test_sketches_of_a_freecad_019_file_are_not_said_unconstrained_until_solved(
    daemon: Any, tmp_path: Path
) -> None:
    """FreeCAD/Examples' AttachmentTutorial (0.19): the context said every sketch was not fully
    constrained, reading a flag that FreeCAD did not keep then (FreeCAD itself solves them fully)."""
    older = from_older_freecad(tmp_path / "tutorial 0.19.FCStd")
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"filePath": str(older)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        context = await fc.read("freecad://model/context")
        assert [s["fullyConstrained"] for s in context["sketches"]] == [None, None], context["sketches"]
        assert "FreeCAD 0.19 and older kept no such flag" in context["sketchesNote"]
        solve = "s = doc.getObject('PlateSketch')\ns.touch()\ndoc.recompute()"
        solved = await fc.run(solve, "Solve a sketch")
        assert not solved.is_error, text_of(solved)
        context = await fc.read("freecad://model/context")
        flags = {s["name"]: s["fullyConstrained"] for s in context["sketches"]}
        assert flags == {"PlateSketch": True, "HoleSketch": None}, flags


async def test_the_sample_toolset_sets_a_spreadsheet_parameter_as_one_undo_step(
    daemon: Any, hosts: Any, freecad_env: dict[str, str], sample: Path
) -> None:
    toolset = Path(__file__).resolve().parents[3] / "samples" / "toolsets" / "freecad"
    hosts.start("freecad", "--toolset", str(toolset), str(sample), timeout=60)
    async with daemon() as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        listed = await fc.invoke("list_parameters", {})
        assert not listed.is_error, text_of(listed)
        parameters = listed.structured_content["result"]
        assert {p["alias"]: float(p["value"]) for p in parameters} == {
            "length": 60,
            "width": 40,
            "thickness": 8,
            "hole": 10,
        }
        changed = (await fc.invoke("set_parameter", {"alias": "thickness", "value": 12})).structured_content
        assert float(changed["before"]) == 8 and float(changed["after"]) == 12
        assert changed["volumes"]["Bracket"] == pytest.approx((60 * 40 - math.pi * 25) * 12, rel=1e-6)
        features = await fc.read("freecad-sample://body/{name}", name="Bracket")
        assert [f["name"] for f in features["features"]] == ["Plate", "Hole"] and features["tip"] == "Hole"
        back = (await fc.invoke("navigate_history", {"direction": "back"})).structured_content
        assert back["operations"] == ["Set thickness = 12"]
        assert await fc.value("doc.getObject('Plate').Length.Value") == "8.0"
        broken = await fc.invoke("set_parameter", {"alias": "hole", "value": 90})
        assert broken.is_error and "nothing was changed" in text_of(broken)
        assert float(await fc.value("doc.getObject('Params').hole")) == 10


FOLLOWERS = """
class Follower:
    def __init__(self, obj):
        obj.Proxy = self
        obj.addProperty("App::PropertyLink", "Source")
        obj.addProperty("App::PropertyFloat", "Seen")

    def execute(self, obj):
        total = 0.0
        for i in range(20000):  # some Python work, as a Path operation's or an Arch object's
            total += i % 7
        obj.Seen = obj.Source.Shape.Volume + total * 0
        obj.Shape = obj.Source.Shape.copy()

for i in range(8):
    follower = doc.addObject("Part::FeaturePython", f"Follower{i}")
    Follower(follower)
    follower.Source = doc.getObject("Pad")
doc.recompute()
"""


async def test_a_script_recomputing_past_its_limit_is_stopped_and_rolled_back(
    daemon: Any, sample: Path
) -> None:
    """The stop raised in a script that loops over ``doc.recompute()`` lands in the Python FreeCAD
    runs during the recompute (cadmcp's own document observers among it), where FreeCAD caught it:
    the script ran on for minutes past its limit, and its changes were committed."""
    async with daemon(CADMCP_EXEC_TIMEOUT="3") as session:  # launched by the daemon, which reads its stderr
        launched = await structured(session, "launch_host", {"filePath": str(sample)})
        fc = FreeCAD(session, launched["hostInstanceId"])
        assert not (await fc.run(padded_sketch())).is_error
        assert not (await fc.run(FOLLOWERS)).is_error  # Python that FreeCAD runs in each recompute
        before = await fc.fingerprint()
        started = time.monotonic()
        looping = await fc.run(
            "import time\nstarted, n = time.time(), 0\nwhile time.time() - started < 40:\n"
            "    doc.getObject('Pad').Length = 11 + n % 5\n    doc.recompute()\n    n += 1\n"
        )
        took = time.monotonic() - started
        said = text_of(looping)
        assert looping.is_error and said.startswith("[TIMEOUT]") and "[ROLLBACK]" in said, said
        assert took < 12, f"stopped after {took:.1f} s, its limit is 3 s"
        assert await fc.fingerprint() == before


async def test_close_document_refuses_unsaved_work_then_drops_it_when_told(
    daemon: Any, sample: Path, tmp_path: Path
) -> None:
    """FreeCAD's document goes with its window and history; its name comes back free for the next."""
    copy = tmp_path / "copy.FCStd"
    async with daemon() as session:
        fc = await _with_second(session, sample, copy)
        changed = await fc.run("App.ActiveDocument.addObject('Part::Box', 'Extra')", "Add a box")
        assert not changed.is_error, text_of(changed)
        refused = await fc.invoke("close_document", {})
        assert refused.is_error and "unsaved changes" in text_of(refused), text_of(refused)
        dropped = (await fc.invoke("close_document", {"discard": True})).structured_content
        assert dropped["documentTitle"] == "copy.FCStd" and dropped["discarded"] is True, dropped
        assert [d["title"] for d in dropped["documents"]] == ["bracket.FCStd"], dropped
        assert dropped["active"] == "bracket.FCStd"
        again = await fc.invoke("open_document", {"filePath": str(copy)})
        assert not again.is_error and not text_of(again).startswith("Already open"), text_of(again)
        names = await fc.run("[o.Name for o in App.ActiveDocument.Objects if o.Name == 'Extra']")
        assert result_value(names) == "[]", text_of(names)  # read again from its file: the box was dropped
        listed = (await fc.invoke("list_documents", {})).structured_content["documents"]
        assert {d["title"]: d["modified"] for d in listed}["copy.FCStd"] is False, listed


async def test_a_preview_or_a_failed_run_that_changes_another_document_leaves_it_as_it_was(
    daemon: Any, sample: Path, tmp_path: Path
) -> None:
    """FreeCAD_Examples' asm_tuto1 script set the linked axis part's angle: the preview said "modifies
    nothing" and the angle stayed changed, so confirm-changes never asked and a no undid nothing."""
    async with daemon() as session:
        fc = await _with_second(session, sample, tmp_path / "assembly.FCStd")
        edit = "App.getDocument('bracket').getObject('Bracket').Label = 'Renamed from the assembly'"
        preview = await fc.invoke("execute_python_code", {"code": edit, "dryRun": True})
        assert not preview.is_error, text_of(preview)
        warnings = preview.structured_content.get("warnings") or []
        assert any("also changes bracket.FCStd (Bracket)" in w for w in warnings), preview.structured_content
        label = "App.getDocument('bracket').getObject('Bracket').Label"
        assert await fc.value(label) == "'Bracket'"
        failed = await fc.run(f"{edit}\n1 / 0")
        assert failed.is_error and "ROLLBACK" in text_of(failed), text_of(failed)
        assert await fc.value(label) == "'Bracket'"
        assert await fc.value("App.getDocument('bracket').UndoNames") == "[]"
