"""Talking to FreeCAD hosts through a real daemon: find a built-in, run code, read results."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import zipfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from PIL import Image
from tests.core.helpers import call, find, structured

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
SAMPLE = SAMPLES / "bracket.FCStd"

PAD = """
body = doc.addObject("PartDesign::Body", "BODY")
sketch = body.newObject("Sketcher::SketchObject", "Sketch")
sketch.Support = (body.Origin.OriginFeatures[3], [""])
sketch.MapMode = "FlatFace"
corners = [Vector(0, 0, 0), Vector(40, 0, 0), Vector(40, 20, 0), Vector(0, 20, 0)]
for i in range(4):
    sketch.addGeometry(Part.LineSegment(corners[i], corners[(i + 1) % 4]))
for i in range(4):
    sketch.addConstraint(Sketcher.Constraint("Coincident", i, 2, (i + 1) % 4, 1))
pad = body.newObject("PartDesign::Pad", "Pad")
pad.Profile = sketch
pad.Length = 10
doc.recompute()
round(pad.Shape.Volume, 3)
"""


def from_older_freecad(target: Path) -> Path:
    """The sample as FreeCAD 0.19 saved it (FreeCAD/Examples' AttachmentTutorial): that version, and
    its sketches' FullyConstrained flags false (FreeCAD kept no such flag then: it reads false)."""
    return _rewritten(
        target,
        lambda text: re.sub(
            r'(<Property name="FullyConstrained" type="App::PropertyBool"[^>]*>\s*<Bool value=")true"',
            r'\1false"',
            re.sub(r'ProgramVersion="[^"]*"', 'ProgramVersion="0.19R"', text, count=1),
        ),
    )


def _rewritten(target: Path, edit: Any) -> Path:
    """A copy of the sample with its Document.xml edited by ``edit(text)``."""
    with zipfile.ZipFile(SAMPLE) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "Document.xml":
                data = edit(data.decode("utf-8")).encode("utf-8")
            out.writestr(item, data)
    return target


def from_newer_freecad(target: Path, program: str = "1.2R45125 (Git)", unknown: bool = True) -> Path:
    """The sample as a newer FreeCAD saves it, the shape of FreeCAD/Examples' 1.2 tutorial: its
    ProgramVersion, and (``unknown``) an object of a type 0.20 lacks (App::Point, "Origin001")
    declared and stored."""

    def edit(text: str) -> str:
        text = re.sub(r'ProgramVersion="[^"]*"', f'ProgramVersion="{program}"', text, count=1)
        if not unknown:
            return text
        text = re.sub(r'<Objects Count="(\d+)"', lambda m: f'<Objects Count="{int(m[1]) + 1}"', text)
        declared = '<Object type="App::Point" name="Origin001" id="9001" />'
        stored = '<Object name="Origin001"><Properties Count="0"></Properties></Object>'
        text = text.replace("</Objects>", f"{declared}\n</Objects>")
        return text.replace("</ObjectData>", f"{stored}\n</ObjectData>")

    return _rewritten(target, edit)


def padded_sketch(body: str = "Body") -> str:
    """A script adding a body with a 40 x 20 mm rectangle padded 10 mm (its value: the volume)."""
    return PAD.replace("BODY", body)


FINGERPRINT = """
import json
def _shape(o):
    s = getattr(o, "Shape", None)
    if s is None or s.isNull():
        return None
    b = s.BoundBox
    box = [round(v, 6) for v in (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)]
    return [round(s.Volume, 6), round(s.Area, 6), box]
def _props(o):
    out = {}
    for p in o.PropertiesList:
        if p in ("Shape", "AddSubShape", "ExpressionEngine", "Proxy"):
            continue
        try:
            v = getattr(o, p)
        except Exception:
            continue
        out[p] = None if hasattr(v, "ShapeType") else repr(v)
    return out
objects = sorted(doc.Objects, key=lambda o: o.Name)
json.dumps([[o.Name, o.TypeId, o.Label, _props(o), _shape(o)] for o in objects])
"""


def differences(want: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """Each object's entry that differs between two state dumps (name -> entry), as text."""
    out = []
    for name in sorted(set(want) | set(got)):
        a, b = want.get(name, {}), got.get(name, {})
        out += [
            f"{name}.{k}: {a.get(k)!r} -> {b.get(k)!r}"
            for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k)
        ]
    return out


async def history_round(
    fc: Any,
    dump: Callable[[Any], Awaitable[dict[str, Any]]],
    original: dict[str, Any],
    edited: dict[str, Any],
    settled: Callable[[dict[str, Any]], dict[str, Any]] = lambda state: state,
) -> list[str]:
    """Undo, redo, undo again, then a recompute, each state dump compared with the one it must
    give back (`settled` is applied to both before the recompute's compare): what differed."""
    found = []
    await fc.invoke("navigate_history", {"direction": "back"})
    found += [f"undo: {d}" for d in differences(original, await dump(fc))]
    await fc.invoke("navigate_history", {"direction": "forward"})
    found += [f"redo: {d}" for d in differences(edited, await dump(fc))]
    await fc.invoke("navigate_history", {"direction": "back"})
    found += [f"undo again: {d}" for d in differences(original, await dump(fc))]
    recomputed = await fc.run("doc.recompute()\nNone", "Recompute")
    assert not recomputed.is_error, text_of(recomputed)
    found += [f"recompute: {d}" for d in differences(settled(original), settled(await dump(fc)))]
    return found


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def result_value(result: Any) -> str:
    text = text_of(result)
    assert "Result: " in text, text
    return text.split("Result: ", 1)[1].split("\n\n", 1)[0]


async def wait_for_freecad(session: Any, count: int = 1, timeout: float = 90.0) -> list[dict[str, Any]]:
    """The connected FreeCAD hosts once ``count`` of them are listed (starting FreeCAD takes seconds)."""
    with anyio.fail_after(timeout):
        while True:
            listing = await structured(session, "list_host_instances")
            freecads = [h for h in listing["hosts"] if h["hostApp"] == "FreeCAD"]
            if len(freecads) >= count:
                return freecads
            await anyio.sleep(0.2)


async def target_id(session: Any, target: str, host: str | None = None) -> str:
    """The id of a FreeCAD capability (``execute_python_code``, ``freecad://model/context``...)."""
    args: dict[str, Any] = {"limit": 32}
    if host is not None:
        args["hostInstanceId"] = host
    words = target.replace("freecad://", "").replace("/", " ").replace("_", " ").strip("{} ")
    for item in await find(session, f"{words} FreeCAD", **args):
        if item["target"] == target and item["hostApp"] == "FreeCAD":
            return str(item["id"])
    raise AssertionError(f"{target} of FreeCAD not found")


class FreeCAD:
    """One FreeCAD host reached through the daemon by its capability ids."""

    def __init__(self, session: Any, host: str | None = None) -> None:
        self.session = session
        self.host = host
        self.ids: dict[str, str] = {}

    async def invoke(self, target: str, arguments: dict[str, Any] | None = None) -> Any:
        if target not in self.ids:
            self.ids[target] = await target_id(self.session, target, self.host)
        request: dict[str, Any] = {"id": self.ids[target]}
        if arguments is not None:
            request["arguments"] = arguments
        return await call(self.session, "invoke_dynamic", request)

    async def run(self, code: str, description: str | None = None) -> Any:
        args = {"code": code} if description is None else {"code": code, "description": description}
        return await self.invoke("execute_python_code", args)

    async def value(self, code: str) -> str:
        """The repr of the code's final expression (the run must succeed)."""
        result = await self.run(code)
        assert not result.is_error, text_of(result)
        return result_value(result)

    async def fingerprint(self) -> str:
        """Every object's name, type, label, properties and shape figures, as text to compare."""
        return await self.value(FINGERPRINT)

    async def screenshot(self, **arguments: Any) -> Image.Image:
        result = await self.invoke("view_screenshot", arguments)
        assert not result.is_error, text_of(result)
        image = next(c for c in result.content if c.type == "image")
        return Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")

    async def read(self, target: str, **arguments: str) -> Any:
        """A resource (or template, with its arguments) as parsed JSON."""
        result = await self.invoke(target, arguments or None)
        assert not result.is_error, result
        return json.loads(result.content[0].resource.text)


@contextmanager
def xvfb() -> Iterator[str]:
    """A private X display (Xvfb picks a free number and says it); stopped on the way out."""
    read, write = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as stream:
        number = stream.readline().strip()
    try:
        if not number:
            raise RuntimeError("Xvfb did not start")
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
