"""Undo gives back what an object's own ``execute`` wrote while the step recomputed, and the error marks
only the step left.

Through a real daemon and a headless FreeCAD host, on a document generated in the test: Python
features whose ``execute`` writes properties of their own (a map and a float, as an Arch window writes
its IFC data) from a width, one feature reading another's, and an Arch window whose IFC width follows
its own width. A step that changes the width (the features recompute and write), and one that makes an
``execute`` fail (the feature is marked Invalid), are each undone, redone and undone again: every
property and mark is as in that state (Invalid ones included), and a recompute changes nothing.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from freecad_helpers import FreeCAD, history_round, text_of
from tests.core.helpers import structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BUILD = """
import Arch
gen = App.newDocument("writes")

class Writer:
    def __init__(self, obj):
        obj.Proxy = self
        obj.addProperty("App::PropertyLength", "Width")
        obj.addProperty("App::PropertyLink", "Source")
        obj.addProperty("App::PropertyMap", "Data")
        obj.addProperty("App::PropertyFloat", "Seen")
        obj.Width = 100

    def execute(self, obj):
        width = obj.Width.Value + (obj.Source.Seen if obj.Source else 0)
        if width > 1000:
            raise ValueError("too wide")
        obj.Data = {"width": str(width)}
        obj.Seen = width
        obj.Shape = Part.makeBox(width, 10, 10)

    def onChanged(self, obj, prop):
        pass

first = gen.addObject("Part::FeaturePython", "First")
Writer(first)
second = gen.addObject("Part::FeaturePython", "Second")
Writer(second)
second.Source = first
window = Arch.makeWindowPreset("Fixed", width=900, height=1200, h1=50, h2=50, h3=50, w1=60, w2=40, o1=0, o2=0)
gen.recompute()
for obj in (first, second):  # as a file saved before the writes
    obj.Data = {}
    obj.Seen = 0
    obj.purgeTouched()
window.IfcData = {}
window.purgeTouched()
gen.recompute()
"""

DUMP = """
import json
state = {}
for o in doc.Objects:
    entry = {"state": sorted(o.State)}
    for p in o.PropertiesList:
        if p not in ("Proxy", "Shape"):
            try:
                entry[p] = repr(getattr(o, p))
            except Exception:
                pass
    if hasattr(o, "Shape") and not o.Shape.isNull():
        entry["volume"] = round(o.Shape.Volume, 6)
    state[o.Name] = entry
json.dumps(state, sort_keys=True)
"""

EDITS = {
    "width": "doc.getObject('First').Width = 200\ndoc.getObject(WINDOW).Width = 1000\ndoc.recompute()",
    "execute fails": "doc.getObject('First').Width = 2000\ndoc.recompute()",
    "the source fails": "doc.getObject('First').Width = 600\n"
    "doc.getObject('Second').Width = 500\ndoc.recompute()",
}


async def dump(fc: FreeCAD) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(ast.literal_eval(await fc.value(DUMP)))
    return state


async def test_what_execute_wrote_and_the_errors_of_the_step_go_with_its_undo(daemon: Any) -> None:
    failures: dict[str, list[str]] = {}
    async with daemon() as session:
        launched = await structured(session, "launch_host", {"hostApp": "FreeCAD"})
        fc = FreeCAD(session, launched["hostInstanceId"])
        for what, edit in EDITS.items():
            built = await fc.run(BUILD, "Generate the test document")
            assert not built.is_error, text_of(built)
            window = ast.literal_eval(
                await fc.value("[o.Name for o in doc.Objects if o.Name.startswith('Window')][0]")
            )
            original = await dump(fc)
            assert original["First"]["Data"] == "{}" and original["Second"]["Seen"] == "0.0"
            assert original[window]["IfcData"] == "{}"
            assert not [n for n, e in original.items() if "Invalid" in e["state"]]

            changed = await fc.run(f"WINDOW = {window!r}\n{edit}", what)
            assert "[UNDO STEP]" in text_of(changed), text_of(changed)
            edited = await dump(fc)
            if what == "width":
                assert edited["Second"]["Data"] != "{}" and edited[window]["IfcData"] != "{}"
            else:
                assert [n for n, e in edited.items() if "Invalid" in e["state"]], what

            found = await history_round(fc, dump, original, edited)
            if found:
                failures[what] = found[:8]
            await fc.run("App.closeDocument(doc.Name)\nNone", "Close")
    assert not failures, json.dumps(failures, indent=1)
