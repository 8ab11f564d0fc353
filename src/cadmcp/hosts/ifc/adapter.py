"""The IFC application adapter: IfcOpenShell models behind the built-in surface."""

from __future__ import annotations

import contextlib
import importlib
import importlib.resources
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from cadmcp.host.builtins import (
    COMPLETE_OPTION,
    MIN_IMAGE_SIDE,
    Closed,
    DocumentInfo,
    Domain,
    HistoryStack,
    HostProfile,
    Opened,
    RecordedStep,
    RequestedDocument,
    Saved,
    ScreenshotOption,
    Shot,
    unsaved_changes,
)
from cadmcp.host.builtins.images import VIEW_BUDGET_ENV, view_budget
from cadmcp.host.builtins.surface import WARM_UP_ENV
from cadmcp.hosts.ifc.documents import MEMORY_FACTOR, DocumentError, IfcDocument, Workspace
from cadmcp.hosts.ifc.staleshapes import stale_shapes_note
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    import ifcopenshell

__all__ = ["DOMAIN", "IfcAdapter", "LazyPackage", "library_versions", "profile"]

WARM_UP_BATCH = 64
"""Elements offered to one warm-up step (one application-thread job)..."""
WARM_UP_STEP_S = 0.15
"""...which tessellates for about this long at most, so a call arriving meanwhile soon runs."""

VIEW_ALIASES = {"isometric": "axonometric"}
"""Views taken under another host's name for them (FreeCAD's)."""

DOMAIN = Domain(
    names=("IFC", "BIM", "openBIM", "IfcOpenShell", "IFC4", "IFC2x3", "BIM model"),
    terms=(
        "building", "model", "storey", "story", "storeys", "level", "floor", "ground floor", "wall", "walls",
        "slab", "slabs", "beam", "column", "door", "doors", "window", "windows", "roof", "stair", "space",
        "room", "zone", "site", "project", "property set", "pset", "quantity", "qto", "material",
        "element", "GlobalId", "guid", "type", "classification", "opening", "furniture", "furnishing",
        "proxy", "spatial structure", "structural", "duct", "pipe", "railing", "curtain wall", "covering",
        "footing", "fire rating", "load bearing",
        "Gebäude", "Geschoss", "Wand", "Wände", "Decke", "Stütze", "Träger", "Tür", "Fenster", "Raum",
        "bâtiment", "étage", "niveau", "mur", "dalle", "poutre", "poteau", "porte", "fenêtre",
        "edificio", "planta", "muro", "losa", "viga", "pilar", "puerta", "ventana",
        "gebouw", "verdieping", "bouwlaag", "muur", "vloer", "balk", "kolom", "deur", "raam", "ruimte",
    ),
)  # fmt: skip


def ifcopenshell_version() -> str:
    """IfcOpenShell's version from its package metadata (without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ifcopenshell")
    except PackageNotFoundError:
        return "unknown"


def profile() -> HostProfile:
    """The IFC host's words for the built-in surface."""
    return HostProfile(
        app="IFC",
        scheme="ifc",
        library=f"IfcOpenShell {ifcopenshell_version()}",
        noun="model",
        file_kinds="an IFC model (.ifc, IFC-SPF)",
        save_suffixes=(".ifc",),
        scope=(
            "`model` (the ifcopenshell.file), `ifcopenshell`, `api` (ifcopenshell.api), `util` "
            "(ifcopenshell.util) and `element` (ifcopenshell.util.element). ifcopenshell.api takes metres; "
            "values read from the model are in its project units (see ifc://model/context)."
        ),
        step_rule=(
            "A run that changes the model is one IfcOpenShell transaction and one undo step named by "
            "`description`; a run that only reads records nothing and keeps the redo steps."
        ),
        context_fields=(
            "title, path, schema, project, length unit, storeys with element counts, element counts by IFC "
            "class and the undo history"
        ),
        warnings_fields=(
            "IFC schema validation issues grouped by kind, the first 50 in full with element ids "
            "(recomputed only after changes)"
        ),
        schedules_fields="one per element class present (IfcDoor, IfcWall, IfcSpace...), with row counts",
        element_ids="step id (e.g. 123) or GlobalId",
        element_fields="class, name, storey, type, property sets, quantities, attributes and bounding box",
        screenshot_view=(
            "An axonometric view of the whole building from the south-east, or one `storey` alone, or a "
            "top-down `plan` of one storey (default: the ground floor), drawn from the real geometry."
        ),
        screenshot_options=(
            ScreenshotOption(
                "view",
                Literal["axonometric", "plan", "top", "isometric"],
                "axonometric",
                "'axonometric' (3D view from the south-east; 'isometric' is the same), 'plan' (top-down "
                "section 1.2 m above the storey's floor) or 'top' (the whole model, or `storey`, seen from "
                "above, roofs included).",
                VIEW_ALIASES,
            ),
            ScreenshotOption(
                "storey",
                str | None,
                None,
                "Storey name or id to show alone (see ifc://model/context); a plan defaults to the ground "
                "floor (the storey at or just above elevation 0, not a foundation level below it).",
            ),
            ScreenshotOption(
                "extents",
                Literal["main", "all"],
                "main",
                "'main' frames where most of the model is and names far elements it leaves out; 'all' frames "
                "every element however far apart.",
            ),
            ScreenshotOption(
                "mark",
                list[str] | None,
                None,
                "Step ids (e.g. '12' or '#12': what the last change created or modified) or GlobalIds "
                "of elements to mark: drawn in orange. structuredContent.marked lists those in the "
                "picture; a note names any not in it.",
            ),
            COMPLETE_OPTION,
        ),
        domain=DOMAIN,
        memory_factor=MEMORY_FACTOR,
    )


class LazyPackage(ModuleType):
    """A package whose submodules import on first attribute access (``api.root``, ``util.element``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._package = importlib.import_module(name)
        self.__doc__ = self._package.__doc__

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        try:
            return getattr(self._package, attr)
        except AttributeError:
            try:
                return importlib.import_module(f"{self.__name__}.{attr}")
            except ModuleNotFoundError:
                raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}") from None

    def __dir__(self) -> list[str]:
        import pkgutil

        return sorted({*dir(self._package), *(m.name for m in pkgutil.iter_modules(self._package.__path__))})


class IfcScriptRun:
    """One script run: a fresh namespace and an IfcOpenShell transaction on the active model."""

    def __init__(self, doc: IfcDocument, name: str, modules: dict[str, Any]) -> None:
        self.doc = doc
        self.name = name
        self.namespace: dict[str, Any] = {"__name__": "__agent__", "model": doc.file, **modules}

    def begin(self) -> None:
        self.doc.begin()

    def caution(self) -> str:
        """What the open transaction leaves out of step: shapes its layer edits did not rebuild."""
        transaction = self.doc.file.transaction
        return stale_shapes_note(self.doc.file, transaction.operations) if transaction else ""

    def commit(self) -> RecordedStep | None:
        transaction = self.doc.file.transaction
        operations = len(transaction.operations) if transaction else 0
        stale = self.caution() if operations else ""
        if self.doc.commit(self.name) is None:
            return None
        history = self.doc.history
        return RecordedStep(
            self.name,
            f"{operations} changes",
            warning=stale,
            undo_steps=history.back_remaining,
            depth=history.max_depth,
            dropped=self.doc.dropped_step,
        )

    def rollback(self) -> bool:
        transaction = self.doc.file.transaction
        changed = transaction is not None and bool(transaction.operations)
        self.doc.rollback()
        return changed


class IfcAdapter:
    """IfcOpenShell models as a :class:`cadmcp.host.builtins.DocumentAdapter`.

    It is also what toolsets get from ``cadmcp.host.current().application``: ``.workspace``
    holds the open documents (``workspace.require_active().file`` is the live model).
    """

    def __init__(self, exec_timeout: float | None = None) -> None:
        from cadmcp.hosts.ifc.validation import WarningsCache

        self.workspace = Workspace()
        self.exec_timeout = exec_timeout
        self.application = self
        self.profile = profile()
        self.warnings_cache = WarningsCache()
        self._geometry: dict[IfcDocument, Any] = {}
        self._preview_touched: set[int] | None = None
        self._namespace_modules: dict[str, Any] | None = None

    def active(self) -> IfcDocument:
        return self.workspace.require_active()

    def geometry(self, doc: IfcDocument) -> Any:
        from cadmcp.hosts.ifc.geometry import GeometryCache

        cache = self._geometry.get(doc)
        if cache is None:
            cache = self._geometry[doc] = GeometryCache(doc, disk_stamp=doc.disk_stamp)
        return cache

    def prepare_shapes(self, doc: IfcDocument) -> None:
        """Start tessellating ``doc`` in a worker process if it is large and unchanged since it was
        read (the worker reads the file), so views of it are drawn from shapes prepared meanwhile."""
        from cadmcp.hosts.ifc.tessellator import ShapeWorker, worker_wanted

        cache = self.geometry(doc)
        if doc.path is None or doc.revision != 0 or cache.worker is not None or not worker_wanted(doc.path):
            return
        cache.worker = ShapeWorker(doc.path)

    def shape_workers(self) -> list[Any]:
        """This host's tessellation processes still following a document."""
        return [cache.worker for cache in self._geometry.values() if cache.worker is not None]

    # documents -----------------------------------------------------------------------------------
    def pending(self) -> bool:
        return self.workspace.pending

    def requested(self) -> list[RequestedDocument]:
        return list(self.workspace.requested)

    def documents(self) -> list[DocumentInfo]:
        documents, active = self.workspace.documents, self.workspace.active
        return [
            DocumentInfo(
                title=d.title, path=str(d.path) if d.path else None, active=d is active, modified=d.modified
            )
            for d in documents
        ]

    def open(self, path: Path) -> Opened:
        doc, is_new = self.workspace.open(str(path))
        if is_new and os.environ.get(WARM_UP_ENV, "1") != "0":
            self.prepare_shapes(doc)
        f = doc.file
        walls, storeys = len(f.by_type("IfcWall")), len(f.by_type("IfcBuildingStorey"))
        summary = f"{f.schema_identifier}, {storeys} storeys, {walls} walls"
        return Opened(
            doc.title,
            summary,
            already_open=not is_new,
            warnings=tuple(doc.read_warnings),
            lacking=doc.lacking,
        )

    def activate(self, document: str) -> str:
        doc = self.workspace.find(document)
        self.workspace.active = doc
        return doc.title

    def close(self, document: str | None, discard: bool) -> Closed:
        workspace = self.workspace
        doc = workspace.find(document) if document is not None else self.active()
        if doc.modified and not discard:
            raise unsaved_changes(doc.title, "model")
        workspace.close(doc)
        cache = self._geometry.pop(doc, None)
        if cache is not None:
            cache.stop()  # its shape worker too
        self.warnings_cache.forget(doc)
        return Closed(doc.title, str(doc.path) if doc.path else None, discarded=doc.modified)

    def save(self, target: Path | None) -> Saved:
        doc = self.active()
        path = doc.save(target)
        lost = (
            f"Not written: {doc.lacking}, which IfcOpenShell left out when it read the file."
            if doc.lacking
            else ""
        )
        return Saved(doc.title, path, note=lost)

    # code and history ----------------------------------------------------------------------------
    def script(self, step_name: str) -> IfcScriptRun:
        doc = self.active()
        if self._namespace_modules is None:
            import ifcopenshell
            import ifcopenshell.util.element

            self._namespace_modules = {
                "ifcopenshell": ifcopenshell,
                "api": LazyPackage("ifcopenshell.api"),
                "util": LazyPackage("ifcopenshell.util"),
                "element": ifcopenshell.util.element,
            }
        return IfcScriptRun(doc, step_name, self._namespace_modules)

    def inventory(self, baseline: Any = None) -> dict[str, tuple[str, str, str]]:
        """Every entity of the active model, for previews (`cadmcp.host.builtins.preview`)."""
        from cadmcp.hosts.ifc.inventory import inventory

        return inventory(self.active().file, baseline)

    def forget_views(self) -> None:
        """Drop the active model's cached meshes of what a preview changed (inside its transaction,
        then again once it rolled back); without a transaction seen, drop them all."""
        from cadmcp.hosts.ifc.documents import touched_ids

        doc = self.active()
        transaction = doc.file.transaction
        if transaction is not None and transaction.operations:
            self._preview_touched = touched_ids(transaction)
            self.geometry(doc).invalidate(self._preview_touched)
        elif self._preview_touched is not None:
            self.geometry(doc).invalidate(self._preview_touched)
            self._preview_touched = None
        else:
            cache = self._geometry.pop(doc, None)
            if cache is not None:
                cache.stop()

    def history(self) -> HistoryStack:
        return HistoryStack(self.active().history)

    # views -------------------------------------------------------------------------------------------
    def _storey(self, doc: IfcDocument, storey: str | None) -> ifcopenshell.entity_instance | None:
        from cadmcp.hosts.ifc.context import storeys

        levels = storeys(doc.file)
        if storey is None:
            return None
        key = storey.strip()
        for level in levels:
            if key in (level["name"], level["globalId"], str(level["id"]), f"#{level['id']}"):
                return doc.file.by_id(level["id"])
        for level in levels:
            if (level["name"] or "").lower() == key.lower():
                return doc.file.by_id(level["id"])
        names = ", ".join(repr(level["name"]) for level in levels) or "none"
        raise DocumentError(f"No storey {echo(storey)} in {doc.title}. Storeys: {names}.", "invalid")

    def screenshot(self, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        """A view in bounded time: elements not tessellated yet get at most
        ``CADMCP_SCREENSHOT_BUDGET`` seconds (in the host, or waiting for the worker process); what
        is still missing then is named in a note. ``complete=True`` waits for every element."""
        doc = self.active()
        if os.environ.get(WARM_UP_ENV, "1") != "0":  # asked before the warm-up began: start it now
            self.prepare_shapes(doc)
        cache = self.geometry(doc)
        options = dict(options)
        if options.pop("complete", False):
            cache.unfinished = {}
            return self._screenshot(width, height, options)
        with cache.budget(view_budget()):
            shot = self._screenshot(width, height, options)
        if cache.unfinished:
            shot.notes.append(_unfinished_note(cache))
            shot.coverage = {
                **(shot.coverage or {}),
                "complete": False,
                "notPreparedYet": len(cache.unfinished),
            }
        return shot

    def _screenshot(self, width: int, height: int | None, options: Mapping[str, Any]) -> Shot:
        from cadmcp.hosts.ifc.context import ground_floor, storeys
        from cadmcp.hosts.ifc.views import screenshot

        doc = self.active()
        if options.get("view") in VIEW_ALIASES:  # as FreeCAD names it
            options = {**options, "view": VIEW_ALIASES[options["view"]]}
        level = self._storey(doc, options.get("storey"))
        chosen = ""
        if level is None and options.get("view") == "plan":
            levels = storeys(doc.file)
            ground = ground_floor(levels)
            level = doc.file.by_id(ground["id"]) if ground else None
            if ground is not None and ground is not levels[0]:  # a foundation or basement below it
                others = ", ".join(
                    f"{echo(str(r['name']), 30)} ({r['elevation']})" for r in levels if r is not ground
                )
                chosen = (
                    f"[STOREY] A plan of {echo(str(ground['name']), 30)} (elevation {ground['elevation']}), "
                    f"the ground floor (not the lowest storey); the other storeys: {others}. Pass "
                    "storey=... for another."
                )
        if options.get("extents", "main") not in ("main", "all"):
            raise DocumentError(
                f"extents {echo(str(options.get('extents')))} is not understood: use 'main' (where most of "
                "the model is, far outliers left out and named) or 'all' (everything).",
                "invalid",
            )
        shot = screenshot(doc, self.geometry(doc), level, width, height, options)
        if chosen:
            shot.notes.insert(0, chosen)
        return shot

    # resources -------------------------------------------------------------------------------------
    def cheatsheet(self) -> str:
        return (
            importlib.resources.files("cadmcp.hosts.ifc")
            .joinpath("cheatsheet.md")
            .read_text(encoding="utf-8")
        )

    def versions(self) -> dict[str, Any]:
        return library_versions()

    def context(self) -> dict[str, Any]:
        from cadmcp.hosts.ifc.context import model_context

        doc = self.active()
        context = model_context(doc)
        if doc.read_warnings:
            context["readWarnings"] = list(doc.read_warnings)
        return context

    def warnings(self) -> dict[str, Any]:
        return self.warnings_cache.get(self.active())

    def schedules(self) -> dict[str, Any]:
        from cadmcp.hosts.ifc.schedules import list_schedules, quantity_units

        doc = self.active()
        return {
            "document": doc.title,
            "schedules": list_schedules(doc.file),
            "quantityUnits": quantity_units(doc.file),  # what the previews' lengths, areas, volumes are in
        }

    def schedule_preview(self, schedule_id: str) -> str:
        from cadmcp.hosts.ifc.schedules import schedule_preview

        return schedule_preview(self.active().file, schedule_id)

    def element(self, element_id: str) -> dict[str, Any]:
        from cadmcp.hosts.ifc.elements import element_info, find_element

        doc = self.active()
        return element_info(find_element(doc.file, element_id), self.geometry(doc).bounding_box)

    # warm-up ---------------------------------------------------------------------------------------
    def warm_up(self) -> Iterator[str]:
        """Make the first calls fast: each step is one short application-thread job (see
        ``HostRuntime.after_ready``), so a call arriving meanwhile waits for one step at most.

        Loads the deferred documents (IfcOpenShell import and parse), reads the model context,
        imports the geometry modules, tessellates every drawable element and storey space of
        the open documents into their caches (active first) and renders one tiny image (numpy
        and Pillow import parts of themselves on first use). A document that cannot be loaded
        is left for the first real call to report.
        """
        # importing IfcOpenShell is about half of the first load: a job of its own
        import ifcopenshell

        yield "ifcopenshell"
        if not self.workspace.preload():
            return
        yield "documents"
        active = self.workspace.active
        if active is None:
            return
        for doc in [active, *(d for d in self.workspace.documents if d is not active)]:
            self.prepare_shapes(doc)  # the large ones tessellate in worker processes from now on
        self.context()
        yield "context"
        import ifcopenshell.geom
        import ifcopenshell.util.element
        import ifcopenshell.util.unit  # noqa: F401  (plan views)

        from cadmcp.hosts.ifc.render import render_png
        from cadmcp.hosts.ifc.shapes import draw_order, drawable_elements

        yield "imports"
        documents = [active, *(d for d in self.workspace.documents if d is not active)]
        for doc in documents:
            f = doc.file
            ids = [e.id() for e in draw_order(drawable_elements(f))]  # what shapes the view first
            ids += [e.id() for e in f.by_type("IfcSpace") if e.Representation is not None]
            cache = self.geometry(doc)
            while ids:
                # by id each step: a call between steps may have edited or removed elements
                batch = []
                for step_id in ids[:WARM_UP_BATCH]:
                    with contextlib.suppress(RuntimeError):
                        batch.append(f.by_id(step_id))
                # a call arriving meanwhile waits this long at most; a worker's shapes are only taken
                with cache.budget(WARM_UP_STEP_S, build=not cache.preparing):
                    cache.meshes_for(batch)
                done = {e.id() for e in batch if e.id() in cache.meshes}
                gone = set(ids[:WARM_UP_BATCH]) - {e.id() for e in batch}
                ids = [i for i in ids[:WARM_UP_BATCH] if i not in done and i not in gone] + ids[
                    WARM_UP_BATCH:
                ]
                yield f"geometry {doc.title}"
        import numpy.ma  # noqa: F401  (loaded lazily by numpy.unique in the rasteriser)
        import PIL.Image
        import PIL.PngImagePlugin  # noqa: F401

        yield "render imports"
        meshes = [m for m in self.geometry(active).meshes.values() if not m.empty][:1]
        render_png(meshes, MIN_IMAGE_SIDE, MIN_IMAGE_SIDE, "axonometric", caption=active.title)
        yield "render"


def _unfinished_note(cache: Any) -> str:
    """Say what a budgeted view left out because it is not prepared yet, and when to ask again."""
    from collections import Counter

    missing = cache.unfinished
    kinds = ", ".join(f"{n} {name}" for name, n in Counter(missing.values()).most_common(5))
    rate = cache.worker.rate if cache.preparing else cache.rate
    eta = f" (about {len(missing) / rate:.0f} s more)" if rate > 0 else ""
    if cache.preparing and cache.worker.listed_at is None:
        eta = " (it is still reading the file)"
    where = "a separate process tessellates them" if cache.preparing else "the host tessellates them"
    return (
        f"[INCOMPLETE VIEW] {len(missing)} elements are not in this image yet: {kinds}. Their shapes are "
        f"still being prepared ({where} in the background{eta}; this view waited "
        f"{view_budget():g} s, {VIEW_BUDGET_ENV}). Call view_screenshot again for more, or with "
        "complete=true to wait for the whole model."
    )


def library_versions() -> dict[str, str]:
    """Versions of IfcOpenShell and the libraries the renderer uses."""
    import ifcopenshell
    import numpy
    import PIL

    return {
        "ifcopenshell": ifcopenshell.version,
        "numpy": numpy.__version__,
        "pillow": PIL.__version__,
    }
