"""The DXF application adapter: ezdxf drawings behind the built-in surface."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any, Literal

from cadmcp.host.builtins import (
    COMPLETE_OPTION,
    Closed,
    DocumentInfo,
    Domain,
    HistoryStack,
    HostProfile,
    Opened,
    RequestedDocument,
    Saved,
    ScreenshotOption,
    Shot,
    unsaved_changes,
)
from cadmcp.hosts.dxf.cheatsheet import CHEATSHEET
from cadmcp.hosts.dxf.documents import MEMORY_FACTOR, DocumentSet, DxfDocument, DxfHostError

__all__ = ["DOMAIN", "DxfAdapter", "profile"]

DOMAIN = Domain(
    names=("AutoCAD", "DWG", "DXF", "ezdxf", "CAD drawing"),
    terms=(
        "drawing", "drawings", "plan", "floor plan", "site plan", "layout", "paperspace", "paper space",
        "modelspace", "model space", "layer", "layers", "block", "blocks", "block reference", "insert",
        "attribute", "attdef", "entity", "entities", "handle", "line", "polyline", "lwpolyline", "arc",
        "circle", "ellipse", "spline", "hatch", "dimension", "text", "mtext", "leader", "linetype",
        "lineweight", "viewport", "xref", "ucs", "extents", "title block", "drafting",
        "Zeichnung", "Grundriss", "Layer", "Block", "Bemaßung", "dessin", "calque", "cotation",
        "plano", "capa", "tekening", "plattegrond", "laag", "lagen", "blok", "maatvoering", "arcering",
    ),
)  # fmt: skip


def profile() -> HostProfile:
    """The DXF host's words for the built-in surface."""
    return HostProfile(
        app="DXF",
        scheme="dxf",
        library=f"ezdxf {package_version('ezdxf')}",
        noun="drawing",
        file_kinds=(
            "a DXF file (.dxf, ASCII or binary) or a DWG drawing (.dwg, R13-R2018, read through a converter)"
        ),
        save_suffixes=(".dxf",),
        scope=(
            "`doc` (the ezdxf Drawing), `msp` (its modelspace) and `ezdxf`; entities are addressed by "
            "handle (`doc.entitydb['2A']`)."
        ),
        step_rule=(
            "A run that changes the drawing becomes one undo step named by `description` (navigate_history "
            "undoes it); a run that only reads records nothing."
        ),
        context_fields=(
            "title and path, DXF version, units, layers (colour, on/off, frozen, entity count), entity "
            "counts by type per layout, blocks with attribute tags, the active layout, extents and undo "
            "depth; for a drawing read from DWG, its release, the reader and what was not carried over"
        ),
        warnings_fields=(
            "the ezdxf audit, grouped by kind (first 50): fixes applied on open and issues present now; for "
            "a drawing read from DWG, the entities and objects the conversion did not carry over (count and "
            "kind) and the file's release"
        ),
        schedules_fields=(
            "one per block with attributes (id = block name, e.g. DOOR; columns handle, layout, layer, "
            "insertion point, one per attribute tag) and `layers`"
        ),
        element_ids="handle (hex, e.g. 2A)",
        element_fields=(
            "type, layer, owner, DXF attributes, xdata, block attributes of INSERTs, points of polylines, "
            "bounding box"
        ),
        screenshot_view=(
            "Modelspace by default, zoomed to where most of the drawing is (far outliers are left out "
            "and named; `extents='all'` shows everything), or a paperspace `layout` as a whole sheet, "
            "unless `window` picks an area; `layers` limits what is drawn."
        ),
        screenshot_options=(
            ScreenshotOption(
                "layout",
                str | None,
                None,
                "Name of a paperspace layout to show (e.g. 'A1 Plan'); omit for modelspace.",
            ),
            ScreenshotOption(
                "window",
                list[float] | None,
                None,
                "The area to show instead of the whole drawing: [x1, y1, x2, y2], two opposite corners in "
                "drawing units (modelspace coordinates, or paper units for a layout). Omit to zoom to "
                "extents.",
            ),
            ScreenshotOption(
                "layers", list[str] | None, None, "Draw only these layers (names as in dxf://model/context)."
            ),
            ScreenshotOption(
                "background", str, "white", "Background colour: 'white', 'black', 'dark' or '#rrggbb'."
            ),
            ScreenshotOption(
                "extents",
                Literal["main", "all"] | None,
                None,
                "Without a window: 'main' frames where most of the drawing is and names the far entities "
                "it leaves out; 'all' frames every entity however far apart. Default: 'main' for "
                "modelspace, 'all' for a layout.",
            ),
            ScreenshotOption(
                "mark",
                list[str] | None,
                None,
                "Handles of entities to mark: drawn over in orange, each framed (e.g. what the last "
                "change created or modified). structuredContent.marked lists those in the picture.",
            ),
            COMPLETE_OPTION,
        ),
        domain=DOMAIN,
        open_note=(
            "A .dwg is converted to DXF on open (LibreDWG as a separate process, when installed); the answer "
            "and dxf://model/warnings name its release and any entities or objects not carried over, and "
            "saving writes a .dxf beside it (the .dwg is never overwritten). The file is audited on open; "
            "dxf://model/warnings lists what was fixed."
        ),
        memory_factor=MEMORY_FACTOR,
    )


WARM_UP_STEP_S = 0.5
"""Seconds one warm-up step draws of the default view (a call arriving meanwhile waits this long)."""


class DxfAdapter:
    """ezdxf drawings as a :class:`cadmcp.host.builtins.DocumentAdapter`.

    ``application`` (what toolsets get from ``cadmcp.host.current().application``) is the
    :class:`DocumentSet`: ``app.active.doc`` is the live drawing, ``app.transaction(name)``
    makes edits one undo step.
    """

    def __init__(self, documents: DocumentSet, exec_timeout: float | None = None) -> None:
        self.documents_set = documents
        self.application = documents
        self.exec_timeout = exec_timeout
        self.profile = profile()

    def _active(self) -> DxfDocument:
        return self.documents_set.active

    # documents -----------------------------------------------------------------------------------
    def pending(self) -> bool:
        return self.documents_set.pending()

    def requested(self) -> list[RequestedDocument]:
        return list(self.documents_set.requested)

    def documents(self) -> list[DocumentInfo]:
        current = self.documents_set.current()
        return [
            DocumentInfo(title=e.title, path=e.display_path(), active=e is current, modified=e.modified)
            for e in self.documents_set
        ]

    def open(self, path: Path) -> Opened:
        entry, is_new = self.documents_set.open_or_activate(str(path))
        fixes = len(entry.auditor.fixes) if entry.auditor is not None and is_new else 0
        note = f"Audit fixed {fixes} issue(s) (see dxf://model/warnings)." if fixes else ""
        if is_new and entry.read_notes:
            note = " ".join([*entry.read_notes, *([note] if note else [])])
        summary = f"{entry.doc.dxfversion}, {len(entry.doc.modelspace())} modelspace entities"
        if entry.source is not None:
            source = entry.source
            summary = f"DWG {source.release} ({source.version}) read by {source.reader}; {summary}"
            note = " ".join([*source.notes(), *([note] if note else [])])
        return Opened(entry.title, summary, already_open=not is_new, note=note)

    def activate(self, document: str) -> str:
        return self.documents_set.activate(document).title

    def close(self, document: str | None, discard: bool) -> Closed:
        documents = self.documents_set
        entry = documents.find(document) if document is not None else documents.active
        if entry.modified and not discard:
            raise unsaved_changes(entry.title, "drawing")
        documents.close(entry)
        return Closed(entry.title, entry.display_path(), discarded=entry.modified)

    def save(self, target: Path | None) -> Saved:
        before = self.documents_set.active
        source = before.source
        from_dwg = target is None and source is not None and before.path == source.path
        entry = self.documents_set.save(str(target) if target is not None else None)
        note = ""
        if from_dwg and source is not None and entry.path is not None:
            note = (
                f"{source.path.name} was not overwritten: no DWG writer that keeps the whole drawing is "
                f"available, so it was saved as DXF beside it ({entry.path.name}; AutoCAD opens DXF) and "
                "later saves go there."
            )
        from cadmcp.hosts.dxf.dwg import not_written

        skipped = not_written(entry.doc)
        if skipped:
            kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(skipped.items()))
            note += (
                f" Not written: {kinds} (solids without their ACIS data, or kinds that DXF of this "
                f"drawing's version, {entry.doc.dxfversion}, cannot hold)."
            )
        units = entry.doc.header.get("$INSUNITS", 0) if entry.doc.dxfversion <= "AC1009" else 0
        if units:
            from ezdxf.units import unit_name

            note += (
                f" Not written: the drawing units ($INSUNITS {units}, {unit_name(units)}): DXF R12 has no "
                "units, so the file reads back unitless. To keep them, save the drawing as a later version "
                "(execute_python_code: doc.dxfversion = 'R2000', then save_document)."
            )
        return Saved(entry.title, Path(str(entry.path)), note=note.strip())

    # code and history ----------------------------------------------------------------------------
    def script(self, step_name: str) -> Any:
        from cadmcp.hosts.dxf.execution import DxfScriptRun  # imports ezdxf: keep it off start-up

        return DxfScriptRun(self._active(), step_name)

    def inventory(self, baseline: Any = None) -> dict[str, tuple[str, str, str]]:
        """Every entity of the active drawing, for previews (`cadmcp.host.builtins.preview`); the
        baseline is not needed (undo gives the handle seed back, so handles repeat)."""
        from cadmcp.hosts.dxf.inventory import inventory

        return inventory(self._active().doc)

    def history(self) -> HistoryStack:
        entry = self._active()

        def moved() -> None:
            entry.views.changed()

        return HistoryStack(entry.history, moved)

    # views and resources -------------------------------------------------------------------------
    def screenshot(self, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        """A view in bounded time (``CADMCP_SCREENSHOT_BUDGET``): what is not drawn by then is named,
        and the next view goes on from there; ``complete=True`` draws everything."""
        from cadmcp.hosts.dxf.readguard import unchanged
        from cadmcp.hosts.dxf.screenshot import render, view_budget

        entry = self._active()
        options = dict(options)
        budget = None if options.pop("complete", False) else view_budget()
        try:
            with unchanged(entry.doc):  # drawing a proxy graphic adds text styles to the drawing
                return render(
                    entry.doc, width=width, height=height, budget=budget, cache=entry.views, **options
                )
        except DxfHostError:
            raise
        except Exception as exc:  # a drawing ezdxf's frontend cannot render
            raise DxfHostError(
                f"Rendering failed ({type(exc).__name__}). Try another layout, a window or a layers filter."
            ) from None

    def forget_views(self) -> None:
        """Drop what views drew of the active drawing (a preview changed it, then rolled back)."""
        self._active().views.changed()

    def cheatsheet(self) -> str:
        return CHEATSHEET

    def versions(self) -> dict[str, Any]:
        return {"ezdxf": package_version("ezdxf")}

    def context(self) -> dict[str, Any]:
        from cadmcp.hosts.dxf.context import model_context
        from cadmcp.hosts.dxf.readguard import unchanged

        entry = self._active()
        with unchanged(entry.doc):  # the extents decompose proxy graphics, which add text styles
            return model_context(entry)

    def warnings(self) -> dict[str, Any]:
        from cadmcp.hosts.dxf.context import model_warnings
        from cadmcp.hosts.dxf.execution import run_tracked

        entry = self._active()

        def audit() -> Any:
            auditor, changes = run_tracked(entry, entry.doc.audit)
            changes.undo()  # report only: the audit's own fixes are not kept
            return auditor

        return model_warnings(entry, audit)

    def schedules(self) -> dict[str, Any]:
        from cadmcp.hosts.dxf.readguard import unchanged
        from cadmcp.hosts.dxf.schedules import list_schedules

        doc = self._active().doc
        with unchanged(doc):
            return {"schedules": list_schedules(doc)}

    def schedule_preview(self, schedule_id: str) -> str:
        from cadmcp.hosts.dxf.readguard import unchanged
        from cadmcp.hosts.dxf.schedules import schedule_csv

        doc = self._active().doc
        with unchanged(doc):
            return schedule_csv(doc, schedule_id)

    def element(self, element_id: str) -> dict[str, Any]:
        from cadmcp.hosts.dxf.context import element_info
        from cadmcp.hosts.dxf.readguard import unchanged

        entry = self._active()
        with unchanged(entry.doc):  # an element's extents decompose its proxy graphic
            return element_info(entry, element_id)

    def warm_up(self) -> Iterator[str]:
        """Import ezdxf, read the drawings queued at start-up, load the code-execution and drawing
        machinery; one short application-thread job per step. A drawing that fails is left for the
        first call to report."""
        import ezdxf

        from cadmcp.hosts.dxf.escapes import autocad_escapes

        autocad_escapes()  # scripts' own saves write what a code page lacks as the host's saves do
        yield "ezdxf"
        list(self.documents_set)  # reads the queued drawings (errors are kept for the first call)
        yield "documents"
        import ezdxf.addons.drawing  # noqa: F401

        from cadmcp.hosts.dxf import execution  # noqa: F401
        from cadmcp.hosts.dxf.screenshot import draw_ahead

        yield "imports"
        # the default view of the active drawing, a short job at a time, kept for the first views
        entry = self.documents_set.current()
        if entry is None:
            return
        for _ in draw_ahead(entry.doc, entry.views, WARM_UP_STEP_S):
            yield "view"
            if entry is not self.documents_set.current():
                return
