"""IFC views and what they say: which products a view draws, and which it leaves out and why.

Every product with a 3D body in the view's scope is drawn (parts of assemblies, nested
components, elements contained in spaces, elements a storey references). Beside the image,
notes and structured content name what is not in it: shapes IfcOpenShell could not build,
products without a 3D body, far outliers left out of the frame, elements above a plan's
section plane, products in no storey, and why a picture is blank.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Mapping
from typing import Any

from cadmcp.host.builtins.adapter import Shot
from cadmcp.wire.echo import echo

__all__ = ["PLAN_CUT_HEIGHT", "screenshot"]

PLAN_CUT_HEIGHT = 1.2
"""Metres above the storey's elevation where a plan view cuts the walls."""
LISTED = 10
STRUCTURED = 50


def _label(e: Any) -> str:
    name = getattr(e, "Name", None)
    return f"#{e.id()} {e.is_a()}" + (f" {echo(name, 40)}" if name else "")


def _classes(elements: list[Any]) -> str:
    counts = Counter(e.is_a() for e in elements)
    return ", ".join(f"{kind} x{n}" for kind, n in counts.most_common(6))


def _item(e: Any, **extra: Any) -> dict[str, Any]:
    return {"id": e.id(), "class": e.is_a(), "name": getattr(e, "Name", None), **extra}


MAX_MARKED = 500


def _marked(ids: Any, f: Any) -> tuple[frozenset[int], list[str]]:
    """The step ids a view's `mark` option names (`12`, `#12`, or a GlobalId, as element/{id}
    takes them), and the ids that name no element of the model."""
    if not isinstance(ids, list | tuple):
        return frozenset(), []
    found: set[int] = set()
    unknown: list[str] = []
    for given in ids[:MAX_MARKED]:
        text = str(given).strip()
        step = text.lstrip("#")
        element = None
        if step.isdigit():
            with contextlib.suppress(RuntimeError, ValueError):
                element = f.by_id(int(step))
        else:
            with contextlib.suppress(RuntimeError, ValueError):
                element = f.by_guid(text)
        if element is None:
            unknown.append(text[:40])
        else:
            found.add(element.id())
    return frozenset(found), unknown


def screenshot(
    doc: Any, cache: Any, level: Any, width: int, height: int | None, options: Mapping[str, Any]
) -> Shot:
    """Render ``doc`` (one storey when ``level`` is given) and say what the picture leaves out."""
    from cadmcp.hosts.ifc.render import render
    from cadmcp.hosts.ifc.shapes import drawable, drawable_elements, has_body, storey_products

    view = options.get("view", "axonometric")
    extents = options.get("extents", "main")
    f = doc.file
    underlay: list[Any] = []
    cut_z = None
    notes: list[str] = []
    structured: dict[str, Any] = {"view": view, "storey": None, "framing": extents}
    if level is not None:
        import ifcopenshell.util.unit

        scope = storey_products(level)
        members = [p for p in scope if drawable(p)]
        structured["storey"] = {"id": level.id(), "name": level.Name}
        if view == "plan":
            # Section 1.2 m above the floor; floors and rooms are drawn beneath everything else.
            scale = ifcopenshell.util.unit.calculate_unit_scale(f)
            cut_z = (level.Elevation or 0.0) * scale + PLAN_CUT_HEIGHT
            floors = [e for e in members if (e.is_a("IfcSlab") and not _is_roof(e)) or e.is_a("IfcCovering")]
            members = [e for e in members if e not in floors]
            spaces = [e for e in scope if e.is_a("IfcSpace") and e.Representation is not None]
            underlay = floors + spaces
        caption = f"{doc.title} | {view} | {level.Name}"
        homeless = _in_no_storey(f)
        if homeless:
            notes.append(
                f"[NOT IN THIS STOREY] {len(homeless)} products with geometry belong to no storey "
                f"({_classes(homeless)}); the view without `storey` shows them."
            )
            structured["inNoStorey"] = len(homeless)
    else:
        members = drawable_elements(f)
        caption = f"{doc.title} | {view}"
        rooms = [p for p in f.by_type("IfcSpace") if p.Representation is not None]
        if rooms:
            structured["spacesNotIn3D"] = len(rooms)
    meshes = cache.meshes_for(members)
    under = cache.meshes_for(underlay)
    by_id = {e.id(): e for e in [*members, *underlay]}

    above: list[Any] = []
    if cut_z is not None:  # elements wholly above the section plane are not in a plan
        above = [
            by_id[m.element_id] for m in meshes if not m.empty and float(m.triangles[..., 2].min()) > cut_z
        ]
    marked, unknown_marks = _marked(options.get("mark"), f)
    rendered, parts = render(
        meshes,
        width,
        height,
        view,
        underlay=under,
        caption=caption,
        cut_z=cut_z,
        framing=extents,
        marked=marked,
    )
    if cut_z is not None and not rendered.covered and above:
        # nothing reaches the section plane (beams and roofs only): show them from above instead
        rendered, parts = render(
            [*meshes, *under],
            width,
            height,
            view,
            caption=f"{caption} (overhead)",
            framing=extents,
            marked=marked,
        )
        notes.append(
            f"[OVERHEAD] Nothing of this storey reaches the section plane {PLAN_CUT_HEIGHT} m above its "
            f"floor; the plan shows the {len(above)} elements above it from above instead "
            f"({_classes(above)})."
        )
        above = []
    if above:
        notes.append(
            f"[ABOVE THE CUT] {len(above)} elements are wholly above the section plane {PLAN_CUT_HEIGHT} m "
            f"above the floor and not in the plan ({_classes(above)}); view='axonometric' with this storey "
            "shows them."
        )
        structured["aboveCut"] = [_item(e) for e in above[:STRUCTURED]]

    if marked or unknown_marks:
        shown = {m.element_id for m in parts if m.element_id in marked and not m.empty}
        structured["marked"] = sorted(str(i) for i in shown)
        missing = [f"#{i}" for i in sorted(marked - shown)]
        seen = {parts[i].element_id for i in rendered.seen if i < len(parts)}
        behind = sorted(shown - seen)
        if behind:  # drawn, but not a pixel of it shows from here
            structured["markedHidden"] = [str(i) for i in behind]
            notes.append(
                f"[MARK HIDDEN] {', '.join(f'#{i}' for i in behind[:LISTED])} marked but hidden behind other "
                "elements from this view: a plan of its storey (view='plan', storey=...) or the storey alone "
                "shows it."
            )
        if unknown_marks or missing:
            said = []
            if unknown_marks:
                said.append(f"no element of the model has the id {', '.join(unknown_marks[:LISTED])}")
            if missing:
                drawn_not = ", ".join(missing[:LISTED])
                said.append(f"{drawn_not} are not drawn in this view (no shape, or another storey)")
            notes.append(f"[NOT MARKED] {'; '.join(said)}. mark takes step ids ('12', '#12') or GlobalIds.")
    failed = [e for e in by_id.values() if e.id() in cache.failed]
    if failed:
        drawn = sum(1 for m in [*meshes, *under] if not m.empty)
        listed = "; ".join(f"{_label(e)}: {cache.failed[e.id()]}" for e in failed[:LISTED])
        more = f"; and {len(failed) - LISTED} more" if len(failed) > LISTED else ""
        notes.append(
            f"[INCOMPLETE VIEW] Drew {drawn} of {len(by_id)} elements. IfcOpenShell could not build the "
            f"shape of {len(failed)}, missing from the image: {listed}{more}. Their data is still readable "
            "with ifc://element/{id}."
        )
    no_body = [e for e in by_id.values() if e.id() not in cache.failed and not has_body(e)]
    if no_body:
        notes.append(
            f"[NO 3D BODY] {len(no_body)} products have only 2D or axis representations, not drawn: "
            f"{_classes(no_body)}."
        )
    structured["notDrawn"] = [
        *(_item(e, reason=cache.failed[e.id()]) for e in failed[:STRUCTURED]),
        *(_item(e, reason="no 3D body representation") for e in no_body[:STRUCTURED]),
    ]

    left_out = [by_id[parts[i].element_id] for i in rendered.left_out]
    if left_out:
        where = {
            m.element_id: m.triangles.reshape(-1, 3).mean(axis=0)
            for m in [*meshes, *under]
            if m.element_id in {e.id() for e in left_out}
        }
        listed = "; ".join(
            f"{_label(e)} at ({', '.join(f'{v:.6g}' for v in where[e.id()])})" for e in left_out[:LISTED]
        )
        notes.append(
            f"[PARTLY FRAMED] Zoomed to where most of the model is; {len(left_out)} elements far from it or "
            f"much larger than it are left out of the frame: {listed}. Call view_screenshot with "
            "extents='all' to frame everything."
        )
        structured["outsideFrame"] = [
            _item(e, at=[round(float(v), 3) for v in where[e.id()]]) for e in left_out[:STRUCTURED]
        ]
    else:
        structured["outsideFrame"] = []

    drawn_count = sum(1 for m in [*meshes, *under] if not m.empty)
    structured["elements"] = {
        "inView": len(by_id),
        "drawn": drawn_count,
        "failed": len(failed),
        "noBody": len(no_body),
        "outsideFrame": len(left_out),
    }
    if not rendered.covered:
        scope_name = f"storey {echo(level.Name, 40)}" if level is not None else doc.title
        if not by_id:
            reason = (
                f"{scope_name} has no products with geometry"
                + (" (its elements may belong to another storey or to none)" if level is not None else "")
                + "."
            )
            types = [t for t in f.by_type("IfcTypeProduct") if getattr(t, "RepresentationMaps", None)]
            if types and level is None:
                reason += (
                    f" Its geometry is only in {len(types)} type definitions ({_classes(types)}), which no "
                    "element instantiates."
                )
        elif failed and len(failed) + len(no_body) >= len(by_id):
            reason = (
                f"none of the {len(by_id)} products of {scope_name} could be built (see [INCOMPLETE VIEW])."
            )
        elif drawn_count == 0 and cache.unfinished:
            reason = (
                f"none of the {len(by_id)} products of {scope_name} is prepared yet (see [INCOMPLETE VIEW]); "
                "ask again in a moment, or with complete=true."
            )
        else:
            reason = f"nothing of the {len(by_id)} products of {scope_name} falls in this view."
        notes.insert(0, f"[BLANK VIEW] The image shows no geometry: {reason}")
    structured["blank"] = not rendered.covered
    structured["complete"] = not notes
    if rendered.frame is not None:
        structured["frame"] = {"min": list(rendered.frame[0]), "max": list(rendered.frame[1])}
    return Shot(rendered.png, notes, structured)


def _in_no_storey(f: Any) -> list[Any]:
    """Drawable products that no storey holds (directly, through spaces, assemblies or references)."""
    from cadmcp.hosts.ifc.shapes import drawable, storey_products

    held: set[int] = set()
    for storey in f.by_type("IfcBuildingStorey"):
        held.update(p.id() for p in storey_products(storey))
    out = []
    for product in f.by_type("IfcElement"):
        if product.id() not in held and drawable(product):
            out.append(product)
    return out


def _is_roof(slab: Any) -> bool:
    """A roof slab is cut like a wall in a plan, never drawn whole beneath it like a floor."""
    import ifcopenshell.util.element

    return ifcopenshell.util.element.get_predefined_type(slab) == "ROOF" or any(
        rel.RelatingObject.is_a("IfcRoof") for rel in getattr(slab, "Decomposes", ()) or ()
    )
