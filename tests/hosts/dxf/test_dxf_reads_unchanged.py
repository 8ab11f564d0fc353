"""Views and reads leave the drawing as they found it: ezdxf adds a text style to the drawing for
each font a proxy graphic's text names (an AutoCAD-made MULTILEADER carries one) when it decomposes
it for a view or the drawing's extents. The style was in no undo step, the document did not say it
was modified, the next save wrote it, and a preview taken before it could no longer be approved.

The drawing is made here in that shape: a MULTILEADER whose proxy graphic holds one text in
romans.shx, a font the drawing has no style for."""

from __future__ import annotations

import struct
from pathlib import Path

import ezdxf
import ezdxf.math
import ezdxf.render.mleader
import pytest
from dxf_helpers import text_of
from mcp import Client

from cadmcp.hosts.dxf import create_server

pytestmark = pytest.mark.anyio


def _padded(text: str) -> bytes:
    data = (text + "\0").encode("utf-16-le")
    return data + b"\0" * (-len(data) % 4)


def _proxy_text(text: str, font: str) -> bytes:
    """A proxy graphic of one UNICODE_TEXT2 primitive (type 38) in ``font``."""
    data = struct.pack("<9d", 0, 0, 0, 0, 0, 1, 1, 0, 0) + _padded(text) + struct.pack("<2l", len(text), 0)
    data += struct.pack("<4d", 2.5, 1.0, 0.0, 0.0) + struct.pack("<9L", *[0] * 9)
    data += _padded("") + _padded(font) + _padded("")
    chunk = struct.pack("<2L", 8 + len(data), 38) + data
    return struct.pack("<2L", 8 + len(chunk), 1) + chunk


def drawing_with_a_proxy_graphic(path: Path) -> None:
    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    msp.add_line((0, 0), (10, 10))
    builder = msp.add_multileader_mtext("Standard")
    builder.set_content("Note")
    builder.add_leader_line(ezdxf.render.mleader.ConnectionSide.left, [ezdxf.math.Vec2(0, 0)])
    builder.build(ezdxf.math.Vec2(10, 10))
    msp.query("MULTILEADER")[0].proxy_graphic = _proxy_text("Note", "romans.shx")
    doc.saveas(path)


STYLES = "sorted(s.dxf.name for s in doc.styles)"


async def test_a_view_and_the_model_context_add_nothing_to_the_drawing(tmp_path: Path) -> None:
    path = tmp_path / "leader.dxf"
    drawing_with_a_proxy_graphic(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        styles = text_of(await client.call_tool("execute_python_code", {"code": STYLES}))
        assert "romans.shx" not in styles
        code = "msp.add_circle((5, 5), 1)"
        preview = await client.call_tool("execute_python_code", {"code": code, "dryRun": True})
        previewed = preview.structured_content["applyWith"]["previewed"]
        for width in (300, 500):
            shot = await client.call_tool("view_screenshot", {"width": width})
            assert not shot.is_error, text_of(shot)
        context = await client.read_resource("dxf://model/context")
        assert context.contents
        assert text_of(await client.call_tool("execute_python_code", {"code": STYLES})) == styles
        listed = (await client.call_tool("list_documents", {})).structured_content
        assert listed["documents"][0]["modified"] is False, listed
        applied = await client.call_tool("execute_python_code", {"code": code, "previewed": previewed})
        assert "[NOT APPLIED]" not in text_of(applied), text_of(applied)
        saved = tmp_path / "saved.dxf"
        assert not (await client.call_tool("save_document", {"filePath": str(saved)})).is_error
    assert "romans.shx" not in {s.dxf.name for s in ezdxf.readfile(saved).styles}


async def test_a_script_that_reads_a_material_records_no_undo_step(tmp_path: Path) -> None:
    """ezdxf's wipeout_door.dxf: a read-only script that touched its Global MATERIAL (applied as
    previewed, under confirm-changes) was recorded as an undo step modifying it, the drawing marked
    modified, checkpoints listed and reverts blocked. The material's mapper matrices are compiled
    Matrix44 objects that compare by identity, so their copy never equalled them."""
    path = tmp_path / "door.dxf"
    doc = ezdxf.new("R2018")
    doc.materials.get("Global").diffuse_mapper_matrix = ezdxf.math.Matrix44.scale(0.0208, 0.0208, 1)
    doc.saveas(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        dry = await client.call_tool("execute_python_code", {"code": "1+1", "dryRun": True})
        previewed = dry.structured_content["applyWith"]["previewed"]
        read = await client.call_tool("execute_python_code", {"code": "1+1", "previewed": previewed})
        assert "Result: 2" in text_of(read) and "[UNDO STEP]" not in text_of(read), text_of(read)
        scale = "doc.materials.get('Global').diffuse_mapper_matrix = ezdxf.math.Matrix44.scale(2, 2, 1)"
        changed = await client.call_tool("execute_python_code", {"code": scale})
        assert "1 modified" in text_of(changed), text_of(changed)  # a real change still counts


def test_the_hosts_warm_up_view_adds_nothing_to_the_drawing(tmp_path: Path) -> None:
    """The host draws the first view ahead, in short passes, once it is ready; those passes were not
    guarded, so a drawing with proxy graphics (a TCH drawing's custom objects) gained styles that
    the next save wrote."""
    from cadmcp.hosts.dxf.screenshot import draw_ahead
    from cadmcp.hosts.dxf.viewcache import ViewCache

    path = tmp_path / "leader.dxf"
    drawing_with_a_proxy_graphic(path)
    doc = ezdxf.readfile(path)
    before = sorted(s.dxf.name for s in doc.styles)
    passes = list(draw_ahead(doc, ViewCache(), step=0.001))
    assert sorted(s.dxf.name for s in doc.styles) == before, len(passes)


async def test_a_preview_without_its_after_picture_says_so_beside_the_picture_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An IFC preview of deleting a wall with openings came with the before-picture alone: nothing in
    the answer, on the dashboard's card or in the approval queue said the after-picture was missing,
    or why. Any failure there is said now."""
    from cadmcp.hosts.dxf.adapter import DxfAdapter

    def broken(self: object) -> None:
        raise RuntimeError("the shape worker ended")

    monkeypatch.setattr(DxfAdapter, "forget_views", broken)
    path = tmp_path / "leader.dxf"
    drawing_with_a_proxy_graphic(path)
    async with Client(create_server([str(path)], exec_timeout=10).server) as client:
        line = {"code": "msp.add_line((0, 0), (1, 1))", "dryRun": True}
        preview = await client.call_tool("execute_python_code", line)
    said = text_of(preview)
    assert "[NO PICTURE] The after-picture could not be rendered (RuntimeError: the shape worker ended)" in (
        said
    )
    assert [c.type for c in preview.content].count("image") == 1
