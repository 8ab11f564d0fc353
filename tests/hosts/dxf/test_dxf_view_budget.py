"""DXF views in bounded time: a view that stops at its budget names what it did not draw yet,
the next view goes on from there until the picture is exactly the one drawn in one go, an edit
meanwhile starts it again, and complete=true always draws everything."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import ezdxf
import pytest
from dxf_helpers import SAMPLE
from mcp import Client

from cadmcp.hosts.dxf import create_server
from cadmcp.hosts.dxf.screenshot import VIEW_BUDGET_ENV

pytestmark = pytest.mark.anyio

ADD_CIRCLES = "for i in range(5):\n    msp.add_circle((i * 3.0, 40.0), 1.0, dxfattribs={'layer': 'NEW'})"


@pytest.fixture
def drawing(tmp_path: Path) -> Path:
    """The sample plan with a grid of lines and texts added: enough entities for many passes."""
    target = tmp_path / "plan.dxf"
    shutil.copy(SAMPLE, target)
    doc = ezdxf.readfile(target)
    msp = doc.modelspace()
    for i in range(60):
        msp.add_line((i, -10), (i + 5, -20), dxfattribs={"layer": "GRID"})
        msp.add_text(f"T{i}", height=0.5, dxfattribs={"layer": "LABELS"}).set_placement((i, -25))
    doc.saveas(target)
    return target


async def view(client: Client, **args: Any) -> tuple[str, dict[str, Any], str]:
    result = await client.call_tool("view_screenshot", {"width": 480, **args})
    assert not result.is_error
    image = next(c for c in result.content if c.type == "image")
    said = "\n".join(c.text for c in result.content if c.type == "text")
    return image.data, result.structured_content or {}, said


async def whole(path: Path, code: str | None = None) -> tuple[str, dict[str, Any]]:
    """The picture drawn in one go by a fresh host (after ``code``)."""
    async with Client(create_server([str(path)], exec_timeout=30).server) as client:
        if code is not None:
            assert not (await client.call_tool("execute_python_code", {"code": code})).is_error
        data, structured, _ = await view(client, complete=True)
    return data, structured


async def test_views_cut_short_say_what_is_missing_and_add_up_to_the_whole_picture(
    drawing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, expected_view = await whole(drawing)
    assert expected_view["complete"] and "notPreparedYet" not in expected_view
    total = len(ezdxf.readfile(drawing).modelspace())
    monkeypatch.setenv(VIEW_BUDGET_ENV, "0")  # each view draws one more entity than the last
    async with Client(create_server([str(drawing)], exec_timeout=30).server) as client:
        data, structured, said = await view(client)
        assert structured["complete"] is False
        missing = structured["notPreparedYet"]
        assert missing + structured["entities"]["visited"] == total and missing > 100
        assert f"{missing} of {total} entities are not in this image yet" in said
        assert "TEXT" in said and "'LABELS'" in said and "complete=true" in said
        assert sum(structured["notDrawnYet"].values()) <= missing
        calls = 1
        while "notPreparedYet" in structured:
            data, structured, said = await view(client)
            calls += 1
            assert calls <= total + 1, "views stopped making progress"
            drawn_now = structured["entities"]["visited"]
            assert drawn_now + structured.get("notPreparedYet", 0) == total
    assert calls > 10
    assert "[INCOMPLETE VIEW]" not in said
    assert data == expected  # pass by pass, the same picture as one pass
    assert structured == expected_view


async def test_an_edit_between_views_is_in_the_next_picture(
    drawing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, _ = await whole(drawing, ADD_CIRCLES)
    monkeypatch.setenv(VIEW_BUDGET_ENV, "0")
    async with Client(create_server([str(drawing)], exec_timeout=30).server) as client:
        _, partial, _ = await view(client)
        assert partial["notPreparedYet"] > 0
        assert not (await client.call_tool("execute_python_code", {"code": ADD_CIRCLES})).is_error
        data, structured, said = await view(client, complete=True)
    assert structured["complete"], said
    assert data == expected


async def test_complete_true_draws_everything_whatever_the_budget(
    drawing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, _ = await whole(drawing)
    monkeypatch.setenv(VIEW_BUDGET_ENV, "0")
    async with Client(create_server([str(drawing)], exec_timeout=30).server) as client:
        data, structured, said = await view(client, complete=True)
    assert structured["complete"] and "[INCOMPLETE VIEW]" not in said
    assert data == expected


async def test_the_warm_up_draws_the_default_view_ahead(
    drawing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VIEW_BUDGET_ENV, "0")
    async with Client(create_server([str(drawing)], exec_timeout=30).server) as client:
        _, before, _ = await view(client, width=1280)
        assert before["notPreparedYet"] > 0
    server = create_server([str(drawing)], exec_timeout=30)
    list(server.warm_up())
    async with Client(server.server) as client:
        _, after, said = await view(client, width=1280)  # the default view: drawn ahead, whole
    assert after["complete"] and "[INCOMPLETE VIEW]" not in said


def test_a_view_after_a_finer_one_of_the_same_drawing_reuses_what_it_drew(
    drawing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    import numpy as np
    from ezdxf.addons.drawing import Frontend
    from PIL import Image

    from cadmcp.hosts.dxf.screenshot import render
    from cadmcp.hosts.dxf.viewcache import ViewCache

    passes: list[str] = []
    draw_layout = Frontend.draw_layout

    def counted(self: Frontend, layout: Any, *args: Any, **kwargs: Any) -> None:
        passes.append(layout.name)
        draw_layout(self, layout, *args, **kwargs)

    monkeypatch.setattr(Frontend, "draw_layout", counted)
    doc = ezdxf.readfile(drawing)
    cache = ViewCache()
    first = render(doc, width=480, cache=cache)
    assert len(passes) == 1
    lo, hi = first.coverage["frame"]["min"], first.coverage["frame"]["max"]
    w, h = hi[0] - lo[0], hi[1] - lo[1]
    render(doc, width=480, window=[lo[0], lo[1], lo[0] + w / 2, lo[1] + h / 2], cache=cache)
    assert len(passes) == 2  # finer than the first drawing: drawn again
    render(doc, width=480, window=[lo[0], lo[1], lo[0] + w / 4, lo[1] + h / 4], cache=cache)
    assert len(passes) == 3  # finer still (the cache keeps the last two drawings)
    render(doc, width=480, window=[lo[0] + w / 2, lo[1] + h / 2, hi[0], hi[1]], cache=cache)
    again = render(doc, width=480, cache=cache)
    assert len(passes) == 3  # a same-size window and the default view: from a finer drawing
    assert again.coverage == first.coverage and again.notes == first.notes

    def pixels(png: bytes) -> Any:
        return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=int)

    differ = np.abs(pixels(again.png) - pixels(first.png)) > 64
    assert differ.mean() < 0.01, differ.mean()  # curves flattened more finely, nothing else

    doc.modelspace().add_line((0, 0), (1, 1))
    cache.changed()
    render(doc, width=480, cache=cache)
    assert len(passes) == 4  # a changed drawing is drawn again
