"""PNG views of a drawing: ezdxf's drawing frontend recorded, then painted with Pillow.

ezdxf's ``Frontend`` resolves colours, linetypes, blocks, dimensions and text into
primitives; a ``Recorder`` keeps them and this module paints them with ``ImageDraw``
(lines and polygons in pixel space). Text is rendered as outlines (Pillow has no even-odd
fill, so glyph holes would fill up otherwise). Heavy modules are imported on first use.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cadmcp.host.builtins.surface import fit_height
from cadmcp.host.progress import report_progress
from cadmcp.hosts.dxf.documents import DxfHostError
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from ezdxf.document import Drawing

__all__ = ["render_png"]

_EXTENTS_SAMPLE = 400
_BACKGROUNDS = {"white": "#ffffff", "black": "#000000", "dark": "#212830"}


def _parse_background(background: str) -> str:
    value = _BACKGROUNDS.get(background.strip().lower(), background.strip())
    if len(value) != 7 or not value.startswith("#"):
        raise DxfHostError(
            f"background {echo(background)} is not understood: use 'white', 'black', 'dark' or '#rrggbb'.",
            "invalid",
        )
    try:
        int(value[1:], 16)
    except ValueError:
        raise DxfHostError(
            f"background {echo(background)} is not a colour: use '#rrggbb'.", "invalid"
        ) from None
    return value


def render_png(
    doc: Drawing,
    *,
    width: int = 1280,
    height: int | None = None,
    layout: str | None = None,
    window: Sequence[float] | None = None,
    layers: Sequence[str] | None = None,
    background: str = "white",
) -> bytes:
    """Render modelspace (or the named layout) to PNG bytes, zoomed to extents or ``window``."""
    import numpy as np
    from ezdxf.addons.drawing import Frontend, RenderContext, config
    from ezdxf.addons.drawing.recorder import Recorder
    from PIL import Image, ImageDraw

    bg = _parse_background(background)
    target = _find_layout(doc, layout)
    if window is not None and (len(window) != 4 or window[0] == window[2] or window[1] == window[3]):
        raise DxfHostError(
            "window must be [x1, y1, x2, y2]: two opposite corners of the area to show, in drawing units, "
            "with x1 != x2 and y1 != y2.",
            "invalid",
        )

    ctx = RenderContext(doc)
    if layers:
        wanted = {name.lower() for name in layers}
        known = {layer.dxf.name.lower() for layer in doc.layers}
        if not wanted & known:
            names = ", ".join(sorted(layer.dxf.name for layer in doc.layers))
            asked = ", ".join(echo(str(name), 40) for name in list(layers)[:5])
            raise DxfHostError(f"None of the layers {asked} exist. Layers: {names}.", "invalid")

        def show_only_wanted(properties: Sequence[Any]) -> None:
            for layer in properties:
                layer.is_visible = layer.layer.lower() in wanted

        ctx.set_layer_properties_override(show_only_wanted)
    dark = _luminance(bg) < 0.4
    pixel = _estimate_pixel_size(target, window, width, height)
    cfg = config.Configuration(
        min_dash_length=2 * pixel,
        max_flattening_distance=pixel / 2,
        background_policy=config.BackgroundPolicy.CUSTOM,
        custom_bg_color=bg,
        color_policy=config.ColorPolicy.COLOR,
        text_policy=config.TextPolicy.OUTLINE,
        lineweight_policy=config.LineweightPolicy.ABSOLUTE,
    )
    ctx.current_layout_properties.set_colors(bg)
    recorder = Recorder()
    frontend = Frontend(ctx, recorder, config=cfg)
    frontend.log_message = _quiet  # type: ignore[method-assign]  # skipped invisible ATTRIBs etc.
    frontend.draw_layout(target, finalize=True, filter_func=_progress_filter(len(target)))
    report_progress(0.9, "rasterising")
    shapes = _collect_shapes(recorder.player(), pixel / 2)

    if window is not None:
        x1, y1, x2, y2 = (float(v) for v in window)
        xmin, xmax, ymin, ymax = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
    elif shapes:
        everything = np.concatenate([shape[1] for shape in shapes])
        xmin, ymin = everything.min(axis=0)
        xmax, ymax = everything.max(axis=0)
    else:
        xmin, ymin, xmax, ymax = 0.0, 0.0, 1.0, 1.0
    span_x = max(xmax - xmin, 1e-9)
    span_y = max(ymax - ymin, 1e-9)
    margin = 0.03
    if height is None:
        height = fit_height(width, span_y / span_x)
    usable_w, usable_h = width * (1 - 2 * margin), height * (1 - 2 * margin)
    scale = min(usable_w / span_x, usable_h / span_y)
    off_x = (width - span_x * scale) / 2 - xmin * scale
    off_y = (height + span_y * scale) / 2 + ymin * scale

    image = Image.new("RGB", (width, height), bg)
    draw = ImageDraw.Draw(image, "RGBA")
    default_ink = "#ffffff" if dark else "#000000"
    if shapes:
        # one vectorised world → pixel transform for every vertex, then split per shape
        everything = np.concatenate([shape[1] for shape in shapes])
        pixels = np.empty_like(everything)
        pixels[:, 0] = everything[:, 0] * scale + off_x
        pixels[:, 1] = off_y - everything[:, 1] * scale
        offsets = np.cumsum([len(shape[1]) for shape in shapes])[:-1]
        colors: dict[str, tuple[int, int, int, int]] = {}
        for (kind, _, color, lineweight), px in zip(shapes, np.split(pixels, offsets), strict=True):
            ink = colors.get(color)
            if ink is None:
                ink = colors[color] = _rgba(color, default_ink, bg)
            flat = px.ravel().tolist()
            line_px = max(1, min(8, round(lineweight * scale / 1000))) if lineweight > 0.3 else 1
            if kind == "polyline":
                if len(flat) == 2:
                    draw.point(flat, fill=ink)
                else:
                    draw.line(flat, fill=ink, width=line_px)
            elif kind == "segments":
                for i in range(0, len(flat) - 3, 4):
                    draw.line(flat[i : i + 4], fill=ink, width=line_px)
            elif len(flat) >= 6:
                draw.polygon(flat, fill=ink)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False, compress_level=3)
    return out.getvalue()


PROGRESS_EVERY = 250
"""Entities between two progress reports (and cancellation checks) while a layout is drawn."""


def _progress_filter(total: int) -> Callable[[Any], bool]:
    """A frontend filter that draws everything and reports how far drawing got (which stops the
    rendering when its request was cancelled: big drawings take tens of seconds)."""
    seen = 0

    def visit(entity: Any) -> bool:
        nonlocal seen
        seen += 1
        if seen % PROGRESS_EVERY == 0:  # raises AppCallCancelled once the request is cancelled
            report_progress(0.9 * min(seen / max(total, 1), 1.0), f"drawing {seen}/{total} entities")
        return True

    return visit


def _quiet(message: str) -> None:
    """Drop the frontend's per-entity notes ("skipped entity …"); they are not errors."""


def _collect_shapes(player: Any, flatten: float) -> list[tuple[str, Any, str, float]]:
    """Recorded primitives as (kind, world vertices Nx2, colour, lineweight); kind is
    ``polyline``, ``segments`` (pairs) or ``polygon``."""
    import numpy as np
    from ezdxf.addons.drawing.recorder import FilledPathsRecord, PathRecord, PointsRecord, SolidLinesRecord

    tiny = flatten * 3  # paths smaller than ~1.5 px are drawn as their control polygon

    def path_vertices(path: Any) -> list[Any]:
        parts = path.sub_paths() if path.has_sub_paths else [path]
        out = []
        for part in parts:
            points = part.np_vertices()[:, :2]
            if part.has_curves and len(points) and np.ptp(points, axis=0).max() > tiny:
                points = np.array([(v.x, v.y) for v in part.flattening(flatten)], dtype=float)
            if len(points):
                out.append(points)
        return out

    shapes: list[tuple[str, Any, str, float]] = []
    for record, props in player.recordings():
        color, weight = props.color, props.lineweight
        if isinstance(record, PointsRecord):
            points = record.points.np_vertices()[:, :2]
            if len(points):
                shapes.append(("polyline" if len(points) <= 2 else "polygon", points, color, weight))
        elif isinstance(record, SolidLinesRecord):
            points = record.lines.np_vertices()[:, :2]
            if len(points) >= 2:
                shapes.append(("segments", points, color, weight))
        elif isinstance(record, PathRecord):
            for points in path_vertices(record.path):
                if len(points) > 1:
                    shapes.append(("polyline", points, color, weight))
        elif isinstance(record, FilledPathsRecord):
            for path in record.paths:
                for points in path_vertices(path):
                    if len(points) > 2:
                        shapes.append(("polygon", points, color, weight))
    return shapes


def _estimate_pixel_size(
    layout: Any, window: Sequence[float] | None, width: int, height: int | None
) -> float:
    """World units per pixel, from the window or the layout's extents (header, else a fast bbox)."""
    if window is not None:
        span = max(abs(window[2] - window[0]), abs(window[3] - window[1]))
        return span / max(width, height or 0)
    extmin, extmax = layout.dxf.get("extmin"), layout.dxf.get("extmax")
    if extmin is not None and extmax is not None and extmin.x < extmax.x and abs(extmax.x) < 1e19:
        span = max(extmax.x - extmin.x, extmax.y - extmin.y)
    else:
        from ezdxf import bbox

        # a strided sample is enough to pick linetype and flattening resolution
        entities = layout.entity_space.entities
        step = max(1, len(entities) // _EXTENTS_SAMPLE)
        box = bbox.extents(entities[::step], fast=True)
        span = max(box.size.x, box.size.y) if box.has_data else 1.0
    return max(span, 1e-9) / max(width, height or 0)


def _find_layout(doc: Drawing, name: str | None) -> Any:
    if name is None or name.strip().lower() in ("", "model", "modelspace"):
        return doc.modelspace()
    for candidate in doc.layouts:
        if candidate.name.lower() == name.strip().lower():
            return candidate
    names = ", ".join(doc.layouts.names_in_taborder())
    raise DxfHostError(f"No layout is called {echo(name)}. Layouts: {names}.", "invalid")


def _luminance(color: str) -> float:
    r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b


def _rgba(color: str, default: str, background: str) -> tuple[int, int, int, int]:
    value = color if color and color.startswith("#") and len(color) in (7, 9) else default
    if value.lower() == background.lower():
        value = default
    r, g, b = (int(value[i : i + 2], 16) for i in (1, 3, 5))
    alpha = int(value[7:9], 16) if len(value) == 9 else 255
    return r, g, b, alpha
