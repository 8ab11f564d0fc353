"""The blank check: a picture that is all background, or a few specks, is blank; a drawing is not."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw

from cadmcp.corpus.pictures import measure


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_an_all_white_picture_is_blank() -> None:
    ink = measure(_png(Image.new("RGB", (640, 480), "white")))
    assert ink.blank and ink.share == 0.0 and ink.cells == 0


def test_a_vertical_gradient_background_alone_is_blank() -> None:
    image = Image.new("RGB", (320, 240))
    draw = ImageDraw.Draw(image)
    for y in range(240):
        draw.line([(0, y), (319, y)], fill=(40 + y // 2, 60 + y // 2, 120 + y // 2))
    assert measure(_png(image)).blank


def test_a_model_squeezed_into_two_specks_is_blank() -> None:
    image = Image.new("RGB", (640, 480), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle([10, 10, 14, 14], fill="black")  # the far outlier
    draw.rectangle([620, 460, 626, 466], fill="black")  # everything else
    ink = measure(_png(image))
    assert ink.cells == 2 and ink.blank


def test_a_drawing_across_the_frame_is_not_blank() -> None:
    image = Image.new("RGB", (640, 480), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle([40, 40, 600, 440], outline="black", width=2)
    draw.line([(40, 40), (600, 440)], fill="blue", width=2)
    ink = measure(_png(image))
    assert not ink.blank and ink.cells > 30
