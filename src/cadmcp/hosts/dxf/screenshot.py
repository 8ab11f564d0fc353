"""PNG views of a drawing: ezdxf's drawing frontend recorded, then painted with Pillow.

ezdxf's ``Frontend`` resolves colours, linetypes, blocks, dimensions and text into
primitives; a ``Recorder`` keeps them and this module paints them with ``ImageDraw``
(lines and polygons in pixel space). Text is rendered as outlines (Pillow has no even-odd
fill, so glyph holes would fill up otherwise). Heavy modules are imported on first use.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cadmcp.host.builtins.adapter import Shot
from cadmcp.host.builtins.images import DEFAULT_VIEW_BUDGET_S, VIEW_BUDGET_ENV, view_budget
from cadmcp.host.builtins.surface import fit_height
from cadmcp.host.progress import report_progress
from cadmcp.hosts.dxf.documents import DxfHostError
from cadmcp.hosts.dxf.viewcache import Drawn, ViewCache
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from ezdxf.document import Drawing

__all__ = ["DEFAULT_VIEW_BUDGET_S", "VIEW_BUDGET_ENV", "render", "render_png", "view_budget"]


_EXTENTS_SAMPLE = 400
MARK_INK = (255, 106, 0, 255)
"""The colour marked entities are painted over in (an orange that no ACI default uses)."""
MAX_MARKED = 500
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


def render_png(doc: Drawing, **options: Any) -> bytes:
    """Render modelspace (or the named layout) to PNG bytes (see :func:`render`)."""
    return render(doc, **options).png


def render(
    doc: Drawing,
    *,
    width: int = 1280,
    height: int | None = None,
    layout: str | None = None,
    window: Sequence[float] | None = None,
    layers: Sequence[str] | None = None,
    background: str = "white",
    extents: str | None = None,
    budget: float | None = None,
    cache: ViewCache | None = None,
    mark: Sequence[str] | None = None,
) -> Shot:
    """Render modelspace (or the named layout), zoomed to ``window``, or to where most of the drawing
    is (``extents='main'``, far outliers left out and named), or to everything (``extents='all'``);
    by default modelspace is framed 'main' and a layout 'all' (a sheet is seen whole).

    The shot's notes and structured view say what was left out of the frame and what could not be
    drawn, and why; a picture with nothing in it says why it is blank. With a ``budget`` (seconds)
    drawing stops at that deadline and the picture names the entities not drawn yet; with a
    ``cache`` what was drawn is kept, and the next view of the same layout goes on from there.
    The entities whose handles ``mark`` names are drawn over in orange, each in a frame.
    """
    from cadmcp.host.builtins.framing import main_frame
    from cadmcp.host.builtins.raster import uniform_colour
    from cadmcp.hosts.dxf.coverage import describe, xref_blocks

    bg = _parse_background(background)
    target = _find_layout(doc, layout)
    if extents is None:  # a sheet is seen whole: its border and title block are no outliers
        extents = "main" if target.is_modelspace else "all"
    if window is not None and (len(window) != 4 or window[0] == window[2] or window[1] == window[3]):
        raise DxfHostError(
            "window must be [x1, y1, x2, y2]: two opposite corners of the area to show, in drawing units, "
            "with x1 != x2 and y1 != y2.",
            "invalid",
        )
    if extents not in ("main", "all"):
        raise DxfHostError(
            f"extents {echo(extents)} is not understood: use 'main' (where most of the drawing is, far "
            "outliers left out and named) or 'all' (everything).",
            "invalid",
        )
    wanted = _check_layers(doc, layers)
    cache = cache if cache is not None else ViewCache()
    pixel, sampled = _pixel_size(doc, target, window, width, height, extents, cache)
    deadline = None if budget is None else time.monotonic() + budget
    coverage, shapes, pending = _draw(doc, target, bg, wanted, pixel, deadline, cache)

    frame_lo = frame_hi = None
    outside: list[tuple[str, Any, Any]] = []
    boxes = _entity_boxes(shapes)
    if window is not None:
        x1, y1, x2, y2 = (float(v) for v in window)
        frame_lo, frame_hi = (min(x1, x2), min(y1, y2)), (max(x1, x2), max(y1, y2))
    elif pending and sampled is not None:  # framed on where the whole layout is, not the part drawn
        frame_lo, frame_hi = sampled
    elif boxes is not None:
        handles, lo, hi = boxes
        if extents == "all" or len(lo) == 0:
            frame_lo, frame_hi = lo.min(axis=0), hi.max(axis=0)
        else:
            frame = main_frame(lo, hi)
            frame_lo, frame_hi = frame.lo, frame.hi
            outside = [(handles[i], lo[i], hi[i]) for i in frame.left_out]
            span = float(max(frame.hi - frame.lo))
            if outside and span / max(width, height or 0) < pixel / 4:  # drawn too coarsely for this frame
                finer = span / max(width, height or 0)
                coverage, shapes, pending = _draw(doc, target, bg, wanted, finer, deadline, cache)
    if frame_lo is None:
        frame_lo, frame_hi = (0.0, 0.0), (1.0, 1.0)
    marked = frozenset(str(h).upper() for h in (mark or ())[:MAX_MARKED])
    png, height = _paint(shapes, bg, width, height, frame_lo, frame_hi, marked)

    drawn = {shape[4] for shape in shapes}
    notes, view = describe(doc, coverage, drawn, outside, xref_blocks(doc))
    if three_d := [vp for vp in _shown_viewports(target) if not vp.is_top_view]:
        where = "; ".join(
            f"VIEWPORT #{vp.dxf.handle} at ({vp.dxf.center.x:.4g}, {vp.dxf.center.y:.4g}), "
            f"{vp.dxf.width:.4g} x {vp.dxf.height:.4g}"
            for vp in three_d[:5]
        )
        notes.append(
            f"[VIEWPORT NOT DRAWN] {len(three_d)} viewport(s) of this layout show model space in a 3D "
            f"view, which this renderer draws only from the top: their area is empty here ({where}). "
            "view_screenshot without layout shows model space."
        )
        view["viewportsNotDrawn"] = [vp.dxf.handle for vp in three_d]
    if pending:
        notes.append(_pending_note(pending, coverage, budget))
        view["notPreparedYet"] = len(pending)
        view["notDrawnYet"] = dict(Counter(e.dxftype() for e in pending).most_common(10))
    view = {
        "layout": target.name,
        "frame": {"min": _rounded(frame_lo), "max": _rounded(frame_hi)},
        "framing": "window" if window is not None else extents,
        **(
            {"extents": {"min": _rounded(boxes[1].min(axis=0)), "max": _rounded(boxes[2].max(axis=0))}}
            if boxes is not None
            else {}
        ),
        **view,
    }
    if marked:
        view["marked"] = sorted(marked & drawn)
        if missing := sorted(marked - drawn):
            unknown = [h for h in missing if doc.entitydb.get(h) is None]
            not_drawn = [h for h in missing if h not in unknown]
            said = [f"no entity has the handle {', '.join(unknown[:10])}"] if unknown else []
            said += [f"{', '.join(not_drawn[:10])} are not drawn in this view"] if not_drawn else []
            notes.append(f"[NOT MARKED] {'; '.join(said)}. mark takes entity handles ('1F3').")
    blank = None
    if uniform_colour(png) is not None:  # every pixel the background: say why
        blank = _blank_reason(doc, target, shapes, coverage, view, window, layers, frame_lo, frame_hi)
        blank = blank or "Nothing drawn is visible at this size."
    view["blank"] = blank is not None
    if blank is not None and not pending:
        notes.insert(0, f"[BLANK VIEW] {blank}")
    view["complete"] = not notes
    if blank is None and (dots := _only_dots(shapes)):
        notes.append(
            f"[SPARSE VIEW] All this view draws is {dots} point{'s' * (dots != 1)} (POINT entities, "
            f"drawn as dots with $PDMODE {doc.header.get('$PDMODE', 0)}), so the picture looks nearly "
            "empty. Read their positions from the model context, or set $PDMODE to 3 (a cross) in a "
            "script to draw them as marks."
        )
    return Shot(png, notes, view)


def _only_dots(shapes: list[Any]) -> int:
    """How many points are drawn when every shape drawn is a single point (else 0)."""
    if shapes and all(kind == "polyline" and len(points) == 1 for kind, points, *_ in shapes):
        return len(shapes)
    return 0


def draw_ahead(doc: Drawing, cache: ViewCache, step: float, width: int = 1280) -> Iterator[None]:
    """Draw the default view of modelspace into ``cache``, ``step`` seconds per pass; yields after
    each pass until it is all drawn (a warm-up: later views start from what is drawn). Each pass
    leaves the drawing as it found it (`readguard`: proxy graphics add text styles); the guard never
    spans a yield, where the host's other jobs (a script) run."""
    from cadmcp.hosts.dxf.readguard import unchanged

    target = doc.modelspace()
    with unchanged(doc):
        pixel, _ = _pixel_size(doc, target, None, width, None, "main", cache)
    bg = _parse_background("white")
    while True:
        try:
            with unchanged(doc):
                _, _, pending = _draw(doc, target, bg, None, pixel, time.monotonic() + step, cache)
        except Exception:  # a drawing the frontend cannot render: the first real view says so
            return
        if not pending:
            return
        yield


def _check_layers(doc: Drawing, layers: Sequence[str] | None) -> set[str] | None:
    if not layers:
        return None
    wanted = {name.lower() for name in layers}
    known = {layer.dxf.name.lower() for layer in doc.layers}
    if not wanted & known:
        names = ", ".join(sorted(layer.dxf.name for layer in doc.layers))
        asked = ", ".join(echo(str(name), 40) for name in list(layers)[:5])
        raise DxfHostError(f"None of the layers {asked} exist. Layers: {names}.", "invalid")
    return wanted


def _draw(
    doc: Drawing,
    target: Any,
    bg: str,
    wanted: set[str] | None,
    pixel: float,
    deadline: float | None,
    cache: ViewCache,
) -> tuple[Any, list[Any], list[Any]]:
    """Draw ``target`` through ezdxf's frontend into recorded shapes, noting what it visits and skips;
    go on from what ``cache`` kept of it, and stop at ``deadline``. Returns the coverage, the shapes
    and the entities not drawn yet (in drawing order)."""
    from ezdxf.addons.drawing import Frontend, RenderContext, config
    from ezdxf.addons.drawing.recorder import Recorder

    from cadmcp.hosts.dxf.coverage import Coverage

    key = (target.name, frozenset(wanted) if wanted is not None else None, bg, len(doc.entitydb))
    state, pixel = cache.get(key, pixel, Coverage)  # a kept finer drawing serves as well
    if state.complete:
        return state.coverage, state.shapes, []
    ctx = RenderContext(doc)
    if wanted is not None:

        def show_only_wanted(properties: Sequence[Any]) -> None:
            for layer in properties:
                layer.is_visible = layer.layer.lower() in wanted

        ctx.set_layer_properties_override(show_only_wanted)
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
    frontend.log_message = _quiet  # type: ignore[method-assign]  # notes about fonts and the like
    coverage = state.coverage
    frontend.skip_entity = coverage.skip  # type: ignore[method-assign]
    frontend.pipeline.text_engine = _GlyphNoting(frontend.pipeline.text_engine, coverage)
    pending: list[Any] = []
    visit = _progress_filter(len(target), state, pending, deadline)
    passed: set[int] = set()  # the viewports this pass draws (ezdxf keeps them to the end)

    def noted(entity: Any) -> bool:
        if not visit(entity):
            return False
        if entity.dxftype() == "VIEWPORT":
            passed.add(id(entity))
        return True

    try:
        frontend.draw_layout(target, finalize=False, filter_func=noted)
        for vp in unlisted_viewports(target, passed):  # ezdxf draws only those with a status
            frontend.pipeline.draw_viewport(vp, frontend.ctx)
        frontend.pipeline.finalize()
        report_progress(0.9, "rasterising")
        state.shapes += _wipeouts_hide(
            doc, _by_top_level(coverage, _collect_shapes(recorder.player(), pixel / 2))
        )
    except BaseException:  # cancelled or failed half way: what this pass drew is not kept
        cache.changed()
        raise
    state.complete = not pending
    return coverage, state.shapes, pending


class _GlyphNoting:
    """ezdxf's text engine, noting in the coverage the characters a text's font has no glyph for
    (drawn as empty boxes)."""

    def __init__(self, engine: Any, coverage: Any) -> None:
        self._engine = engine
        self._coverage = coverage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def get_text_glyph_paths(self, text: str, font_face: Any, cap_height: float = 1.0) -> Any:
        from cadmcp.hosts.dxf.glyphs import lacking

        with contextlib.suppress(Exception):  # noting never stops a view
            if missing := lacking(self._engine.get_font(font_face), text):
                self._coverage.lacks(missing, str(getattr(font_face, "filename", "") or ""))
        return self._engine.get_text_glyph_paths(text, font_face, cap_height)


VIEWPORT_OFF = 0x20000
"""A VIEWPORT's flag (group 90) that turns it off."""


def _shown_viewports(layout: Any) -> list[Any]:
    """The viewports of a paper-space layout that show model space, as AutoCAD shows the layout:
    in the active layout those with a positive status but the sheet's own (status 1, first); in
    another (every status written 0) all but the first, unless their flags turn them off."""
    if layout.is_modelspace:
        return []
    viewports = list(layout.viewports())
    if any(vp.dxf.get("status", 0) > 0 for vp in viewports):
        on = sorted((vp for vp in viewports if vp.dxf.get("status", 0) > 0), key=lambda vp: vp.dxf.status)
        return on[1:] if on and on[0].dxf.status == 1 else on
    return [vp for vp in viewports[1:] if not vp.dxf.get("flags", 0) & VIEWPORT_OFF]


def unlisted_viewports(layout: Any, drawn: set[int]) -> list[Any]:
    """The viewports of a paper-space layout that AutoCAD shows and ezdxf's renderer leaves out: in
    a layout that is not the active one, AutoCAD writes every viewport's status as 0 (off), and
    ezdxf draws only those with a positive status, so the sheet came out without its views
    (`drawn`: the `id()` of the viewports this pass reached; top views only: ezdxf draws no other)."""
    return [
        vp
        for vp in _shown_viewports(layout)
        if vp.dxf.get("status", 0) <= 0 and id(vp) in drawn and vp.is_top_view
    ]


def _pending_note(pending: list[Any], coverage: Any, budget: float | None) -> str:
    """Say which entities a view drawn in bounded time did not reach, and how to get them."""
    from cadmcp.hosts.dxf.coverage import layer_of

    kinds = ", ".join(f"{n} {kind}" for kind, n in Counter(e.dxftype() for e in pending).most_common(5))
    layers = Counter(layer_of(e) for e in pending)
    on = ", ".join(f"{echo(str(name), 30)} ({n})" for name, n in layers.most_common(4))
    total = len(pending) + len(coverage.visited)
    return (
        f"[INCOMPLETE VIEW] {len(pending)} of {total} entities are not in this image yet ({kinds}; on "
        f"layers {on}): drawing stopped after {budget:g} s ({VIEW_BUDGET_ENV}). What was drawn is kept: "
        "call view_screenshot again to draw more (the host also goes on in the background), or with "
        "complete=true to wait for the whole drawing."
    )


HIDING_INK = "hide"
"""The colour of a WIPEOUT's area: the background, whatever it is (never swapped for visibility)."""


def _wipeouts_hide(doc: Drawing, shapes: list[Any]) -> list[Any]:
    """A WIPEOUT's area hides what is under it in the background colour, as CAD programs draw it; the
    painter would otherwise swap a background-coloured fill for the visible ink (a solid bar)."""
    db = doc.entitydb
    hidden = {
        h for h in {shape[4] for shape in shapes} if (e := db.get(h)) is not None and e.dxftype() == "WIPEOUT"
    }
    if not hidden:
        return shapes
    return [
        (kind, points, HIDING_INK, weight, handle) if kind == "polygon" and handle in hidden else shape
        for shape in shapes
        for kind, points, _, weight, handle in (shape,)
    ]


def _by_top_level(coverage: Any, shapes: list[Any]) -> list[Any]:
    """Credit what an INSERT's attributes draw to the INSERT (the frontend records their own handle)."""
    owners = {
        attrib.dxf.handle: entity.dxf.handle
        for entity in coverage.visited
        if entity.dxftype() == "INSERT"
        for attrib in entity.attribs
    }
    if not owners:
        return shapes
    return [(*shape[:4], owners.get(shape[4], shape[4])) for shape in shapes]


def _entity_boxes(shapes: list[Any]) -> tuple[list[str], Any, Any] | None:
    """Per top-level entity: handles and the min and max corners of everything drawn for it."""
    import numpy as np

    if not shapes:
        return None
    everything = np.concatenate([shape[1] for shape in shapes])
    starts = np.concatenate([[0], np.cumsum([len(shape[1]) for shape in shapes])[:-1]])
    shape_lo = np.minimum.reduceat(everything, starts, axis=0)
    shape_hi = np.maximum.reduceat(everything, starts, axis=0)
    ids: dict[str, int] = {}
    owner = np.array([ids.setdefault(shape[4], len(ids)) for shape in shapes])
    lo = np.full((len(ids), 2), np.inf)
    hi = np.full((len(ids), 2), -np.inf)
    np.minimum.at(lo, owner, shape_lo)
    np.maximum.at(hi, owner, shape_hi)
    return list(ids), lo, hi


def _paint(
    shapes: list[Any],
    bg: str,
    width: int,
    height: int | None,
    frame_lo: Any,
    frame_hi: Any,
    marked: frozenset[str] = frozenset(),
) -> tuple[bytes, int]:
    """Paint recorded shapes framed on ``frame_lo``..``frame_hi``; returns the PNG and its height.
    The shapes of the entities in ``marked`` are painted again on top in :data:`MARK_INK`, each
    entity framed."""
    import numpy as np
    from PIL import Image, ImageDraw

    xmin, ymin = (float(v) for v in frame_lo)
    xmax, ymax = (float(v) for v in frame_hi)
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
    default_ink = "#ffffff" if _luminance(bg) < 0.4 else "#000000"
    if shapes:
        # one vectorised world → pixel transform for every vertex, then split per shape
        everything = np.concatenate([shape[1] for shape in shapes])
        pixels = np.empty_like(everything)
        pixels[:, 0] = everything[:, 0] * scale + off_x
        pixels[:, 1] = off_y - everything[:, 1] * scale
        # far outside the image (an outlier left out of the frame): clamp so Pillow's ints stay small
        np.clip(pixels, -4 * (width + height), 4 * (width + height), out=pixels)
        offsets = np.cumsum([len(shape[1]) for shape in shapes])[:-1]
        colors: dict[str, tuple[int, int, int, int]] = {}
        on_top: list[tuple[str, Any, str, int]] = []
        for (kind, _, color, lineweight, handle), px in zip(shapes, np.split(pixels, offsets), strict=True):
            if handle in marked:
                on_top.append((kind, px, handle, lineweight))
            ink = colors.get(color)
            if ink is None:
                ink = colors[color] = (
                    _rgba(bg, bg, "") if color == HIDING_INK else _rgba(color, default_ink, bg)
                )
            flat = px.ravel().tolist()
            line_px = max(1, min(8, round(lineweight * scale / 1000))) if lineweight > 0.3 else 1
            if kind == "polyline":
                if len(flat) == 2:  # a point: a dot of 3 x 3 pixels, so that it shows
                    x, y = flat
                    draw.rectangle((x - 1, y - 1, x + 1, y + 1), fill=ink)
                else:
                    draw.line(flat, fill=ink, width=line_px)
            elif kind == "segments":
                for i in range(0, len(flat) - 3, 4):
                    draw.line(flat[i : i + 4], fill=ink, width=line_px)
            elif len(flat) >= 6:
                draw.polygon(flat, fill=ink)
        _paint_marks(draw, on_top)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False, compress_level=3)
    return out.getvalue(), height


def _paint_marks(draw: Any, on_top: list[tuple[str, Any, str, int]]) -> None:
    """The marked entities' shapes (pixel coordinates) over the picture in orange, each entity framed."""
    boxes: dict[str, list[float]] = {}
    for kind, px, handle, _ in on_top:
        flat = px.ravel().tolist()
        if kind == "segments":
            for i in range(0, len(flat) - 3, 4):
                draw.line(flat[i : i + 4], fill=MARK_INK, width=3)
        elif len(flat) == 2:
            draw.rectangle((flat[0] - 2, flat[1] - 2, flat[0] + 2, flat[1] + 2), fill=MARK_INK)
        elif kind == "polyline":
            draw.line(flat, fill=MARK_INK, width=3, joint="curve")
        elif len(flat) >= 6:
            draw.polygon(flat, outline=MARK_INK, width=3)
        lo, hi = px.min(axis=0), px.max(axis=0)
        box = boxes.setdefault(handle, [lo[0], lo[1], hi[0], hi[1]])
        box[:] = [min(box[0], lo[0]), min(box[1], lo[1]), max(box[2], hi[0]), max(box[3], hi[1])]
    for x0, y0, x1, y1 in boxes.values():
        draw.rectangle((x0 - 6, y0 - 6, x1 + 6, y1 + 6), outline=MARK_INK, width=2)


def _blank_reason(
    doc: Drawing,
    target: Any,
    shapes: list[Any],
    coverage: Any,
    view: dict[str, Any],
    window: Sequence[float] | None,
    layers: Sequence[str] | None,
    frame_lo: Any,
    frame_hi: Any,
) -> str | None:
    """Why nothing is visible in the frame, or None when something is."""
    import numpy as np

    name = f"layout {echo(target.name, 40)}" if target.name != "Model" else "Modelspace"
    if not len(target):
        return f"{name} has no entities: there is nothing to draw."
    if shapes:
        lo, hi = np.asarray(frame_lo, dtype=float), np.asarray(frame_hi, dtype=float)
        for shape in shapes:
            points = shape[1]
            if np.any(np.all((points >= lo) & (points <= hi), axis=1)):
                return None
            if len(points) > 1 and np.all(points.min(axis=0) <= hi) and np.all(points.max(axis=0) >= lo):
                return None  # crosses the frame
        if window is not None:
            extents = view.get("extents", {})
            return (
                f"Nothing of {name} is inside window {list(window)}; its entities are drawn between "
                f"{extents.get('min')} and {extents.get('max')}. Use another window, or omit it."
            )
        return None
    counts = view["entities"]
    if counts["hidden"] and counts["hidden"] == counts["visited"]:
        why = (
            f"the layers {[echo(str(n), 30) for n in layers][:5]} filter" if layers else "layers that are off"
        )
        return (
            f"All {counts['hidden']} entities of {name} are hidden ({why} or frozen, or entities marked "
            "invisible). Turn layers on, or pass layers=[...] with the layers to draw."
        )
    if counts["notDrawn"]:
        return f"None of the {counts['visited']} entities of {name} could be drawn (see [NOT DRAWN])."
    return f"None of the {counts['visited']} entities of {name} produced anything visible."


def _rounded(values: Any) -> list[float]:
    return [float(f"{float(v):.6g}") for v in values]


PROGRESS_EVERY = 250
"""Entities between two progress reports (and cancellation checks) while a layout is drawn."""


def _progress_filter(
    total: int, state: Drawn, pending: list[Any], deadline: float | None
) -> Callable[[Any], bool]:
    """A frontend filter that draws the entities ``state`` has not drawn yet until ``deadline`` (at
    least one), puts the ones after it in ``pending``, notes each drawn one in the coverage and
    reports how far drawing got (which stops the rendering when its request was cancelled: big
    drawings take tens of seconds)."""
    position = 0
    start = state.done

    def visit(entity: Any) -> bool:
        nonlocal position
        if not entity.is_alive:  # destroyed, still listed by a damaged file: nothing to draw
            return False
        index, position = position, position + 1
        if index < start:
            return False  # drawn by an earlier pass
        if pending or (index > start and deadline is not None and time.monotonic() >= deadline):
            pending.append(entity)
            return False
        state.coverage.visit(entity)
        state.done = index + 1
        done = state.done
        if done % PROGRESS_EVERY == 0:  # raises AppCallCancelled once the request is cancelled
            report_progress(0.9 * min(done / max(total, 1), 1.0), f"drawing {done}/{total} entities")
        return True

    return visit


def _quiet(message: str) -> None:
    """Drop the frontend's per-entity notes ("skipped entity …"); they are not errors."""


def _collect_shapes(player: Any, flatten: float) -> list[tuple[str, Any, str, float, str]]:
    """Recorded primitives as (kind, world vertices Nx2, colour, lineweight, top-level handle);
    kind is ``polyline``, ``segments`` (pairs) or ``polygon``."""
    import numpy as np
    from ezdxf.addons.drawing.recorder import FilledPathsRecord, PathRecord, PointsRecord, SolidLinesRecord

    tiny = flatten * 3  # paths smaller than ~1.5 px are drawn as their control polygon

    def path_vertices(path: Any) -> list[Any]:
        parts = path.sub_paths() if path.has_sub_paths else [path]
        out = []
        for part in parts:
            points = _xy(part.np_vertices())
            if part.has_curves and len(points) and np.ptp(points, axis=0).max() > tiny:
                points = np.array([(v.x, v.y) for v in part.flattening(flatten)], dtype=float)
            if len(points):
                out.append(points)
        return out

    shapes: list[tuple[str, Any, str, float, str]] = []
    for record, props in player.recordings():
        color, weight, handle = props.color, props.lineweight, props.handle
        if isinstance(record, PointsRecord):
            points = _xy(record.points.np_vertices())
            if len(points):
                shapes.append(("polyline" if len(points) <= 2 else "polygon", points, color, weight, handle))
        elif isinstance(record, SolidLinesRecord):
            points = _xy(record.lines.np_vertices())
            if len(points) >= 2:
                shapes.append(("segments", points, color, weight, handle))
        elif isinstance(record, PathRecord):
            for points in path_vertices(record.path):
                if len(points) > 1:
                    shapes.append(("polyline", points, color, weight, handle))
        elif isinstance(record, FilledPathsRecord):
            for path in record.paths:
                for points in path_vertices(path):
                    if len(points) > 2:
                        shapes.append(("polygon", points, color, weight, handle))
    return [shape for shape in shapes if np.isfinite(shape[1]).all()]


def _xy(vertices: Any) -> Any:
    """The x, y columns of recorded vertices (an empty record has a flat empty array)."""
    return vertices[:, :2] if vertices.ndim == 2 else vertices.reshape(0, 2)


def _sample_boxes(entities: Any) -> list[Any]:
    """Bounding boxes of ``entities``, leaving out the ones ezdxf cannot measure (damaged content)."""
    from ezdxf import bbox

    boxes = []
    for entity in entities:
        try:
            box = bbox.extents([entity], fast=True)
        except Exception:  # e.g. an MTEXT whose columns reference destroyed entities
            continue
        if box.has_data:
            boxes.append(box)
    return boxes


def _pixel_size(
    doc: Drawing,
    layout: Any,
    window: Sequence[float] | None,
    width: int,
    height: int | None,
    extents: str,
    cache: ViewCache,
) -> tuple[float, tuple[Any, Any] | None]:
    """:func:`_estimate_pixel_size`, sampled once per layout and size until the drawing changes."""
    if window is not None:
        return _estimate_pixel_size(layout, window, width, height, extents)
    key = ("pixel", layout.name, width, height, extents, len(doc.entitydb))
    return cache.known(key, lambda: _estimate_pixel_size(layout, None, width, height, extents))  # type: ignore[no-any-return]


def _estimate_pixel_size(
    layout: Any, window: Sequence[float] | None, width: int, height: int | None, extents: str
) -> tuple[float, tuple[Any, Any] | None]:
    """World units per pixel, from the window or a strided sample of entity boxes (framed by the same
    rule as the picture), to pick linetype and flattening resolution before drawing; and the
    sampled frame (None for a window, or without boxes)."""
    if window is not None:
        span = max(abs(window[2] - window[0]), abs(window[3] - window[1]))
        return span / max(width, height or 0), None
    import numpy as np

    from cadmcp.host.builtins.framing import main_frame

    entities = layout.entity_space.entities
    step = max(1, len(entities) // _EXTENTS_SAMPLE)
    boxes = _sample_boxes(entities[::step])
    if not boxes:
        return 1.0 / max(width, height or 0), None
    lo = np.array([[b.extmin.x, b.extmin.y] for b in boxes])
    hi = np.array([[b.extmax.x, b.extmax.y] for b in boxes])
    keep = np.all(np.isfinite(lo) & np.isfinite(hi), axis=1)
    if not keep.any():
        return 1.0 / max(width, height or 0), None
    lo, hi = lo[keep], hi[keep]
    frame = main_frame(lo, hi)
    box_lo, box_hi = (frame.lo, frame.hi) if extents == "main" else (frame.full_lo, frame.full_hi)
    span = float(max(box_hi - box_lo))
    return max(span, 1e-9) / max(width, height or 0), (box_lo, box_hi)


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
