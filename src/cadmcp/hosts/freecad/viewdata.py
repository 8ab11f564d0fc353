"""The view data of an .FCStd file, which FreeCAD without its window neither reads nor writes.

A file saved from FreeCAD's window holds `GuiDocument.xml` (each object's view: shown or hidden,
colours, line widths; the camera) and the colour lists it names (`DiffuseColor`...). A headless
FreeCAD writes none of them, so saving there would drop every colour and the camera, and for files
of FreeCAD 0.18 and older (which kept visibility there only) which objects are hidden. The host
reads them before it saves and adds them back to the file it wrote, each object's visibility made
the model's own (a model without them gets a GuiDocument.xml saying which objects are shown: FreeCAD
0.20's window opens a file without one with every object hidden); at open it takes an old file's
visibility from them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from cadmcp.wire.echo import echo

GUI_DOCUMENT = "GuiDocument.xml"
MAX_VIEW_BYTES = 64 * 1024 * 1024
"""View data kept from one file at most (GuiDocument.xml and its colour lists)."""
VISIBILITY_IN_DOCUMENT = (0, 18)
"""Files of a FreeCAD newer than this keep each object's visibility in Document.xml too."""
_NAMED_FILE = re.compile(rb'\bfile="([^"<>]{1,255})"')
_VIEW_PROVIDER = re.compile(rb'<ViewProvider\s+name="([^"]*)".*?</ViewProvider>', re.DOTALL)
_VIEW_DATA = re.compile(rb'(<ViewProviderData\s+Count=")(\d+)(")')
_VISIBILITY = re.compile(rb'(<Property\s+name="Visibility"[^>]*>\s*<Bool\s+value=")(true|false)(")')


@dataclass(frozen=True)
class ViewData:
    """`GuiDocument.xml` of a file and the entries it names, as they are in that file."""

    source: Path
    entries: dict[str, bytes]

    def visibility(self) -> dict[str, bool]:
        """Object name -> shown, as each object's view keeps it (objects without one are left out)."""
        shown: dict[str, bool] = {}
        try:
            root = ET.fromstring(self.entries[GUI_DOCUMENT])
        except ET.ParseError:
            return shown
        for view in root.iter("ViewProvider"):
            for prop in view.iter("Property"):
                if prop.get("name") == "Visibility":
                    value = prop.find("Bool")
                    if view.get("name") and value is not None:
                        shown[str(view.get("name"))] = value.get("value") == "true"
                    break
        return shown


def read(path: Path) -> ViewData | None:
    """The view data of the .FCStd file at `path`; None when it has none (saved without a window)
    or it cannot be read."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = {info.filename: info for info in archive.infolist()}
            gui = infos.get(GUI_DOCUMENT)
            if gui is None or gui.file_size > MAX_VIEW_BYTES:
                return None
            text = archive.read(gui)
            named = dict.fromkeys(m.decode("utf-8", "replace") for m in _NAMED_FILE.findall(text))
            wanted = [name for name in named if name in infos and name != GUI_DOCUMENT]
            if gui.file_size + sum(infos[name].file_size for name in wanted) > MAX_VIEW_BYTES:
                return None
            entries = {GUI_DOCUMENT: text, **{name: archive.read(name) for name in wanted}}
    except (zipfile.BadZipFile, OSError, KeyError, ValueError):
        return None
    return ViewData(path, entries)


def add_back(path: Path, view: ViewData | None, shown: dict[str, bool]) -> bool:
    """Append view data to the .FCStd file at `path`, which was written without any: `view` with each
    object's visibility set to `shown` (the model's own), or with no `view` a GuiDocument.xml saying
    only that (FreeCAD 0.20's window opens a file without one with every object hidden). FreeCAD
    reads a file's entries in the order written: the view data comes after the document's own, as
    its window writes it. False when the file has view data of its own (nothing is added)."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        present = set(archive.namelist())
        if GUI_DOCUMENT in present:
            return False
        if view is None:
            archive.writestr(GUI_DOCUMENT, _bare(shown))
            return True
        archive.writestr(GUI_DOCUMENT, _with_visibility(view.entries[GUI_DOCUMENT], shown))
        for name, data in view.entries.items():
            if name != GUI_DOCUMENT and name not in present:
                archive.writestr(name, data)
    return True


def _bare(shown: dict[str, bool]) -> bytes:
    return (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        '<Document SchemaVersion="1">\n'
        f'    <ViewProviderData Count="{len(shown)}">\n{_views(shown)}    </ViewProviderData>\n'
        '    <Camera settings=""/>\n'
        "</Document>\n"
    ).encode()


def _views(shown: dict[str, bool]) -> str:
    """A view entry saying only whether it is shown, per object."""
    return "".join(
        f'        <ViewProvider name={quoteattr(name)} expanded="0">\n'
        '            <Properties Count="1" TransientCount="0">\n'
        '                <Property name="Visibility" type="App::PropertyBool" status="1">\n'
        f'                    <Bool value="{"true" if visible else "false"}"/>\n'
        "                </Property>\n"
        "            </Properties>\n"
        "        </ViewProvider>\n"
        for name, visible in shown.items()
    )


def _with_visibility(gui: bytes, shown: dict[str, bool]) -> bytes:
    """`gui` with each object's visibility made `shown`'s, and an entry for each object it lacks
    (one added since: FreeCAD's window would hide it)."""
    seen: set[str] = set()

    def one(found: re.Match[bytes]) -> bytes:
        name = found.group(1).decode("utf-8", "replace")
        seen.add(name)
        visible = shown.get(name)
        if visible is None:
            return found.group(0)
        value = b"true" if visible else b"false"
        return _VISIBILITY.sub(lambda m: m.group(1) + value + m.group(3), found.group(0), count=1)

    gui = _VIEW_PROVIDER.sub(one, gui)
    added = {name: visible for name, visible in shown.items() if name not in seen}
    data = _VIEW_DATA.search(gui)
    if not added or data is None:
        return gui
    count = int(data.group(2)) + len(added)
    head = data.group(1) + str(count).encode() + data.group(3)
    gui = gui[: data.start()] + head + gui[data.end() :]
    line = gui.rfind(b"\n", 0, gui.index(b"</ViewProviderData>")) + 1
    return gui[:line] + _views(added).encode() + gui[line:]


def show_as_saved(doc: Any, path: Path) -> None:
    """Show or hide each object of `doc` as the view data of `path` says: for files that kept
    visibility there only, which FreeCAD without its window opens with every object shown."""
    view = read(path)
    if view is None:
        return
    shown = view.visibility()
    for obj in doc.Objects:
        visible = shown.get(obj.Name)
        if visible is not None and hasattr(obj, "Visibility") and bool(obj.Visibility) != visible:
            obj.Visibility = visible


def keep(doc: Any, written: Path, view: ViewData | None) -> str:
    """Add view data to the file FreeCAD without its window just wrote for `doc`: `view` (read
    before the save), or only which objects are shown. The sentence for the save's answer ("" when
    there was no view data to keep)."""
    shown = {o.Name: bool(o.Visibility) for o in doc.Objects if hasattr(o, "Visibility")}
    try:
        added = add_back(written, view, shown)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        kept = f"the colours and camera of {echo(view.source.name)}" if view else "which objects are shown"
        return (
            f"Adding {kept} to the file failed ({echo(str(exc), 120)}): FreeCAD without its window does "
            "not write them, and FreeCAD's window may open the file with every object hidden."
        )
    if not added or view is None:
        return ""
    return (
        f"Colours, line styles and the camera were kept from {echo(view.source.name)} (FreeCAD without its "
        "window does not write them); objects added since show in FreeCAD's default colours."
    )
