"""A DWG drawing through a real daemon and SDK client: launched by its path, counted against its DXF
twin, changed by a script, undone exactly, looked at, saved as DXF and reopened the same; damaged
and pre-R13 drawings refused with the release named."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import ezdxf
import pytest
from dwg_helpers import context_counts, counts, require_reader, write_pair
from dxf_helpers import text_of
from PIL import Image
from tests.core.helpers import call, find_target, structured

from cadmcp.hosts.dxf.dwg import READER_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FINGERPRINT = """
import json
def attribs(e):
    values = e.dxf.all_existing_dxf_attribs().items()
    # a value equal to its default, or a zero without one (LWPOLYLINE const_width), is not written
    return sorted((k, str(v)) for k, v in values if str(v) not in (str(e.dxf.dxf_default_value(k)), "0.0"))
json.dumps(sorted([e.dxftype(), attribs(e)] for e in msp))
"""
"""Every model-space entity's type and attributes (defaults left out), to compare states of the drawing."""

COLUMNS = "for i in range(3):\n    msp.add_circle((20 + i * 3, 20), 1, dxfattribs={'layer': 'WALLS'})"


class Drawing:
    """The DXF host reached through the daemon by capability ids."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.ids: dict[str, str] = {}

    async def invoke(self, target: str, arguments: dict[str, Any] | None = None) -> Any:
        if target not in self.ids:
            self.ids[target] = (await find_target(self.session, target, "DXF"))["id"]
        request: dict[str, Any] = {"id": self.ids[target]}
        if arguments is not None:
            request["arguments"] = arguments
        return await call(self.session, "invoke_dynamic", request)

    async def read(self, target: str) -> dict[str, Any]:
        result = await self.invoke(target)
        assert not result.is_error, result
        return json.loads(result.content[0].resource.text)

    async def value(self, code: str) -> str:
        result = await self.invoke("execute_python_code", {"code": code})
        assert not result.is_error, text_of(result)
        return text_of(result).split("Result: ", 1)[1].split("\n\n", 1)[0]

    async def screenshot(self) -> Image.Image:
        result = await self.invoke("view_screenshot", {"width": 400})
        assert not result.is_error, text_of(result)
        image = next(c for c in result.content if c.type == "image")
        return Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")


async def test_a_dwg_through_the_daemon_open_count_edit_undo_look_and_save(
    daemon_client: Any, tmp_path: Path
) -> None:
    reader = require_reader()
    dwg, twin = write_pair(tmp_path)
    original = dwg.read_bytes()
    async with daemon_client(env={READER_ENV: str(reader)}) as session:
        launched = await structured(session, "launch_host", {"filePath": str(dwg), "timeoutSeconds": 90})
        assert launched["hostApp"] == "DXF" and launched["phase"] == "ready", launched
        drawing = Drawing(session)
        context = await drawing.read("dxf://model/context")
        assert context["source"]["release"] == "R2000" and context["source"]["reader"].startswith("LibreDWG")
        assert context_counts(context) == counts(ezdxf.readfile(twin))
        warnings = await drawing.read("dxf://model/warnings")
        assert warnings["dwg"]["not_carried_over"] == [] and warnings["dwg"]["version"] == "AC1015"

        before = await drawing.value(FINGERPRINT)
        shot_before = await drawing.screenshot()
        assert shot_before.getextrema() != ((255, 255), (255, 255), (255, 255))  # the drawing is drawn
        edit = await drawing.invoke(
            "execute_python_code",
            {
                "code": COLUMNS,
                "description": "Three columns",
            },
        )
        assert not edit.is_error, text_of(edit)
        assert (await drawing.read("dxf://model/context"))["layouts"][0]["by_type"]["CIRCLE"] == 4
        assert await drawing.screenshot() != shot_before
        back = await drawing.invoke("navigate_history", {"direction": "back"})
        assert not back.is_error and back.structured_content["operations"] == ["Three columns"]
        assert await drawing.value(FINGERPRINT) == before  # exact undo
        assert context_counts(await drawing.read("dxf://model/context")) == counts(ezdxf.readfile(twin))
        forward = await drawing.invoke("navigate_history", {"direction": "forward"})
        assert not forward.is_error
        edited = await drawing.value(FINGERPRINT)

        saved = await drawing.invoke("save_document", {})
        assert not saved.is_error, text_of(saved)
        beside = tmp_path / "plan.dxf"
        assert saved.structured_content["path"] == str(beside.resolve())
        assert "not overwritten" in saved.structured_content["message"]
        assert dwg.read_bytes() == original
        reopened = await drawing.invoke("open_document", {"filePath": str(beside)})
        assert not reopened.is_error and reopened.structured_content["message"].startswith("Already open")
        expected = counts(ezdxf.readfile(twin))
        expected["model"]["CIRCLE"] += 3
        assert counts(ezdxf.readfile(beside)) == expected

        copy = tmp_path / "copy.dxf"
        copy.write_bytes(beside.read_bytes())  # a fresh read of the saved file has the same content
        opened = await drawing.invoke("open_document", {"filePath": str(copy)})
        assert not opened.is_error, text_of(opened)
        assert await drawing.value(FINGERPRINT) == edited

        bad = tmp_path / "damaged.dwg"
        bad.write_bytes(original[:300])
        refused = await drawing.invoke("open_document", {"filePath": str(bad)})
        assert refused.is_error and "R2000" in text_of(refused) and "damaged" in text_of(refused)
        old = tmp_path / "old.dwg"
        old.write_bytes(b"AC1009" + bytes(range(256)) * 8)
        refused = await drawing.invoke("open_document", {"filePath": str(old)})
        text = text_of(refused)
        assert refused.is_error and "R11/R12" in text and "Convert it to DXF" in text
