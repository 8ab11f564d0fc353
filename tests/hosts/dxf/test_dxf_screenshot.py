"""view_screenshot: a real PNG of the active view that changes after an edit."""

from __future__ import annotations

import base64
import io

import pytest
from dxf_helpers import text_of
from mcp import Client
from PIL import Image, ImageChops

pytestmark = pytest.mark.anyio


async def shot(client: Client, **args: object) -> Image.Image:
    result = await client.call_tool("view_screenshot", args)
    assert not result.is_error, text_of(result)
    image = result.content[0]
    assert image.type == "image" and image.mime_type == "image/png"
    return Image.open(io.BytesIO(base64.b64decode(image.data))).convert("RGB")


async def test_modelspace_screenshot_changes_after_an_edit(client: Client) -> None:
    before = await shot(client, width=640)
    assert before.width == 640 and 300 < before.height < 640
    assert ImageChops.difference(before, Image.new("RGB", before.size, "white")).getbbox() is not None
    code = "msp.add_circle((8000, 5000), 1500, dxfattribs={'color': 1})"
    await client.call_tool("execute_python_code", {"code": code})
    after = await shot(client, width=640)
    diff = ImageChops.difference(before, after)
    assert diff.getbbox() is not None
    changed = sum(diff.convert("L").histogram()[1:])
    assert changed > 200
    await client.call_tool("navigate_history", {"direction": "back"})
    undone = await shot(client, width=640)
    assert ImageChops.difference(before, undone).getbbox() is None


async def test_layout_window_layers_and_background(client: Client) -> None:
    sheet = await shot(client, width=400, layout="A1 Plan")
    assert sheet.size[0] == 400
    # a sheet's viewports are counted as such: "drawn: 0" alone contradicted a picture of their content
    said = await client.call_tool("view_screenshot", {"width": 400, "layout": "A1 Plan"})
    assert said.structured_content["entities"]["viewports"] >= 1, said.structured_content["entities"]
    walls = await shot(client, width=400, height=300, layers=["A-WALL"], background="black")
    assert walls.size == (400, 300) and walls.getpixel((0, 0)) == (0, 0, 0)
    everything = await shot(client, width=400, height=300, background="black")
    assert ImageChops.difference(walls, everything).getbbox() is not None
    window = await shot(client, width=400, height=300, window=[0, 0, 2000, 1500])
    assert window.size == (400, 300)


async def test_bad_screenshot_arguments_are_clear_errors(client: Client) -> None:
    for args, expected in [
        ({"layout": "Nope"}, "Layouts:"),
        ({"layers": ["NOPE"]}, "Layers:"),
        ({"window": [0, 0, 0, 5]}, "window"),
        ({"width": 5}, "width"),
        ({"background": "plaid"}, "background"),
    ]:
        result = await client.call_tool("view_screenshot", args)
        assert result.is_error, args
        assert expected in text_of(result)


def test_marked_entities_are_painted_over_in_orange_and_framed() -> None:
    import ezdxf
    import numpy as np

    from cadmcp.hosts.dxf.screenshot import MARK_INK, render

    doc = ezdxf.new()
    msp = doc.modelspace()
    msp.add_line((0, 0), (100, 0))
    circle = msp.add_circle((50, 50), 20)

    def orange(png: bytes) -> int:
        pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        return int((pixels == MARK_INK[:3]).all(axis=2).sum())

    plain = render(doc, width=300)
    marked = render(doc, width=300, mark=[circle.dxf.handle.lower()])
    assert orange(plain.png) == 0 and orange(marked.png) > 100
    assert marked.coverage is not None and marked.coverage["marked"] == [circle.dxf.handle]
    assert "marked" not in (plain.coverage or {})


@pytest.mark.parametrize("background", ["white", "black"])
def test_a_wipeout_hides_what_is_under_it_in_the_background_colour(background: str) -> None:
    """A WIPEOUT masks the entities beneath it, as CAD programs draw it: its area is the background,
    never painted in the visible ink (which made wipeouts look like solid walls or door leaves)."""
    import ezdxf
    import numpy as np

    from cadmcp.hosts.dxf.screenshot import render

    doc = ezdxf.new("R2018")
    msp = doc.modelspace()
    for y in range(0, 101, 5):
        msp.add_line((0, y), (100, y))  # a hatch of lines under the wipeout
    msp.add_wipeout([(30, 30), (70, 30), (70, 70), (30, 70)])
    pixels = np.asarray(
        Image.open(io.BytesIO(render(doc, width=300, background=background).png)).convert("RGB")
    )
    bg = pixels[2, 2]  # the margin: the background
    height, width = pixels.shape[:2]
    middle = pixels[int(height * 0.42) : int(height * 0.58), int(width * 0.42) : int(width * 0.58)]
    outside = pixels[int(height * 0.1) : int(height * 0.2), int(width * 0.1) : int(width * 0.2)]
    assert (middle == bg).all(axis=2).mean() > 0.99  # the lines under it are hidden, and no bar drawn
    assert (outside != bg).any(axis=2).mean() > 0.05  # the lines beside it still show
