"""A model's look as FreeCAD's window saved it (colours, hidden objects, camera: GuiDocument.xml and
the colour lists it names) survives a save by the headless host, and FreeCAD's window reads it back.

Found on third-party files: a plain save of roberthart56's whiffleball (FreeCAD 0.18) went from 58 zip
entries to 15, every colour gone, and the 13 objects its author had hidden shown again; a 0.20
relay box lost 85 of 127 entries. The 0.18 file also opened headless with every object visible, so
pictures and the context showed a 307 mm helper solid over the part.
"""

from __future__ import annotations

import ast
import re
import signal
import zipfile
from pathlib import Path
from typing import Any

import pytest
from freecad_helpers import FreeCAD, text_of, wait_for_freecad
from tests.core.helpers import structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
GUI_START_S = 120.0

STYLE_IN_WINDOW = """
view = Gui.getDocument(doc.Name)
view.getObject("Hole").ShapeColor = (1.0, 0.0, 0.0)
view.getObject("PlateSketch").Visibility = False
doc.recompute()
"""
LOOK = """
view = Gui.getDocument(doc.Name)
hidden = sorted(o.Name for o in doc.Objects if not view.getObject(o.Name).Visibility)
(hidden, tuple(round(c, 2) for c in view.getObject("Hole").ShapeColor[:3]))
"""


def _stop(proc: Any) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


VISIBILITY = (
    r'(<Property name="Visibility" type="App::PropertyBool"[^>]*>\s*<Bool value=")(\w+)("/>\s*</Property>)'
)
OBJECT = r'<Object name="([^"]*)"[^>]*>.*?</Object>'


def _as_freecad_018(source: Path, target: Path) -> Path:
    """The file as FreeCAD 0.18 wrote it: that ProgramVersion, no Visibility property in Document.xml,
    and each object's visibility kept in GuiDocument.xml (which 0.20 does not keep up to date)."""
    shown: dict[str, str] = {}

    def one_object(found: re.Match[str]) -> str:
        visible = re.search(VISIBILITY, found.group(0))
        if visible is None:
            return found.group(0)
        shown[found.group(1)] = visible.group(2)
        block = re.sub(r"\s*" + VISIBILITY, "", found.group(0), count=1)
        count = r'<Properties Count="(\d+)"'
        return re.sub(count, lambda c: f'<Properties Count="{int(c[1]) - 1}"', block, count=1)

    def one_view(found: re.Match[str]) -> str:
        value = shown.get(found.group(1), "true")
        return re.sub(VISIBILITY, lambda v: v.group(1) + value + v.group(3), found.group(0), count=1)

    with zipfile.ZipFile(source) as original:
        entries = {item.filename: original.read(item.filename) for item in original.infolist()}
    text = re.sub(
        r'ProgramVersion="[^"]*"', 'ProgramVersion="0.18.4R"', entries["Document.xml"].decode(), count=1
    )
    entries["Document.xml"] = re.sub(OBJECT, one_object, text, flags=re.S).encode()
    assert 'name="Visibility"' not in entries["Document.xml"].decode() and shown
    gui = entries["GuiDocument.xml"].decode()
    entries["GuiDocument.xml"] = re.sub(
        r'<ViewProvider name="([^"]*)".*?</ViewProvider>', one_view, gui, flags=re.S
    ).encode()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in entries.items():
            out.writestr(name, data)
    return target


async def test_a_headless_save_keeps_the_look_the_window_saved_and_an_old_files_hidden_objects(
    gui_env: dict[str, str], hosts: Any, daemon: Any, sample: Path, tmp_path: Path
) -> None:
    # a model saved headless opens in FreeCAD's window as the model says (0.20's window hides every
    # object of a file without GuiDocument.xml)
    async with daemon() as session:
        fc = FreeCAD(session, await wait_launch(session, sample))
        saved = await fc.invoke("save_document", {})
        assert not saved.is_error and "Colours" not in text_of(saved), text_of(saved)
    window = hosts.start("freecad", "--gui", str(sample), timeout=GUI_START_S)
    async with daemon(**gui_env) as session:
        await wait_for_freecad(session)
        fc = FreeCAD(session)
        hidden, _ = ast.literal_eval(await fc.value(LOOK))
        assert hidden == ["Plate"], hidden  # as the headless model had it: Hole consumed Plate
        styled = await fc.run(STYLE_IN_WINDOW, "Colour the hole, hide the plate sketch")
        assert not styled.is_error, text_of(styled)
        assert not (await fc.invoke("save_document", {})).is_error
    _stop(window)
    with zipfile.ZipFile(sample) as saved:
        gui = saved.read("GuiDocument.xml").decode()
        colour_lists = sorted(set(re.findall(r'file="([^"]+)"', gui)))
        assert colour_lists and set(colour_lists) <= set(saved.namelist())
    old = _as_freecad_018(sample, tmp_path / "bracket 0.18.FCStd")

    async with daemon() as session:
        fc = FreeCAD(session, await wait_launch(session, sample))
        changed = await fc.run(
            'doc.addObject("Part::Box", "Added")\ndoc.getObject("HoleSketch").Visibility = False\n'
            "doc.recompute()",
            "Add a box, hide the hole sketch",
        )
        assert not changed.is_error, text_of(changed)
        saved = await fc.invoke("save_document", {})
        assert not saved.is_error, text_of(saved)
        assert "Colours, line styles and the camera were kept from 'bracket.FCStd'" in text_of(saved)

        # the 0.18 file: its hidden objects are hidden in the model, the context and the pictures
        opened = await fc.invoke("open_document", {"filePath": str(old)})
        assert not opened.is_error, text_of(opened)
        context = await fc.read("freecad://model/context")
        hidden = sorted(o["name"] for o in context["objects"] if not o["visible"])
        assert hidden == ["Plate", "PlateSketch"], hidden
        assert context["modified"] is False  # taking the file's visibility is not a change
    with zipfile.ZipFile(sample) as saved:
        names = saved.namelist()
        assert "GuiDocument.xml" in names and set(colour_lists) <= set(names)
        assert names.index("GuiDocument.xml") > names.index("Document.xml")

    # FreeCAD's window reads the look back: the colour, and what each side hid
    window = hosts.start("freecad", "--gui", str(sample), timeout=GUI_START_S)
    async with daemon(**gui_env) as session:
        await wait_for_freecad(session)
        hidden, colour = ast.literal_eval(await FreeCAD(session).value(LOOK))
    _stop(window)
    assert hidden == ["HoleSketch", "Plate", "PlateSketch"], hidden
    assert colour == (1.0, 0.0, 0.0)


async def wait_launch(session: Any, path: Path) -> str:
    launched = await structured(session, "launch_host", {"filePath": str(path)})
    (document,) = launched["documents"]
    assert document["opened"], document
    return str(launched["hostInstanceId"])
