"""The IFC host's built-in MCP tools and resources over a :class:`Workspace` of open models.

Every tool and resource here is a plain sync function: the host runtime runs them on the
application thread, one at a time, so they may touch the documents freely.
"""

from __future__ import annotations

import importlib
import importlib.resources
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from cadmcp import __version__
from cadmcp.host import pyexec
from cadmcp.host.history import HistoryError, NavigationResult
from cadmcp.hosts.ifc.documents import DocumentError, IfcDocument, Workspace, check_ifc_path
from cadmcp.wire.jsonwire import dumps

if TYPE_CHECKING:
    import ifcopenshell

HOST_APP = "IFC"
MAX_IMAGE_SIDE = 4096
MIN_IMAGE_SIDE = 64
WARM_UP_BATCH = 16
"""Elements tessellated per warm-up step (one application-thread job; ~0.1 s on the sample)."""
PLAN_CUT_HEIGHT = 1.2
"""Metres above the storey's elevation where a plan view cuts the walls."""


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


class OpenResult(TypedDict):
    """Result of ``open_document``."""

    success: bool
    message: str
    documentTitle: str


class DocumentEntry(TypedDict):
    title: str
    path: str | None
    active: bool
    modified: bool


class DocumentList(TypedDict):
    """Result of ``list_documents``."""

    documents: list[DocumentEntry]
    active: str | None


class SaveResult(TypedDict):
    """Result of ``save_document``."""

    success: bool
    message: str
    path: str


class ActivateResult(TypedDict):
    """Result of ``activate_document``."""

    success: bool
    message: str
    documentTitle: str


def _first_line(code: str) -> str:
    for line in code.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:80]
    return "Python script"


class IfcHost:
    """The application side: open documents, caches and the operations the tools expose."""

    def __init__(self, exec_timeout: float | None = None) -> None:
        from cadmcp.hosts.ifc.validation import WarningsCache

        self.workspace = Workspace()
        self.exec_timeout = exec_timeout
        self.warnings = WarningsCache()
        self._geometry: dict[IfcDocument, Any] = {}
        self._namespace_modules: dict[str, Any] | None = None

    # Documents -------------------------------------------------------------------------
    def active(self) -> IfcDocument:
        try:
            return self.workspace.require_active()
        except DocumentError as exc:
            raise ToolError(str(exc)) from None

    def geometry(self, doc: IfcDocument) -> Any:
        from cadmcp.hosts.ifc.geometry import GeometryCache

        cache = self._geometry.get(doc)
        if cache is None:
            cache = self._geometry[doc] = GeometryCache(doc)
        return cache

    def open_document(
        self, filePath: Annotated[str, Field(description="Path of an .ifc file (absolute is safest).")]
    ) -> OpenResult:
        try:
            doc, is_new = self.workspace.open(filePath)
        except DocumentError as exc:
            raise ToolError(str(exc)) from None
        f = doc.file
        walls, storeys = len(f.by_type("IfcWall")), len(f.by_type("IfcBuildingStorey"))
        verb = "Opened" if is_new else "Already open; activated"
        summary = f"{f.schema_identifier}, {storeys} storeys, {walls} walls"
        message = f"{verb} {doc.title} ({summary}). It is the active document."
        return OpenResult(success=True, message=message, documentTitle=doc.title)

    def list_documents(self) -> DocumentList:
        ws = self.workspace
        try:
            documents, active = ws.documents, ws.active
        except DocumentError as exc:
            raise ToolError(str(exc)) from None
        entries = [
            DocumentEntry(
                title=d.title,
                path=str(d.path) if d.path else None,
                active=d is active,
                modified=d.modified,
            )
            for d in documents
        ]
        return DocumentList(documents=entries, active=active.title if active else None)

    def activate_document(
        self, document: Annotated[str, Field(description="Title or path of an open document.")]
    ) -> ActivateResult:
        try:
            doc = self.workspace.find(document)
        except DocumentError as exc:
            raise ToolError(str(exc)) from None
        self.workspace.active = doc
        return ActivateResult(
            success=True, message=f"{doc.title} is now the active document.", documentTitle=doc.title
        )

    def save_document(
        self,
        filePath: Annotated[
            str | None, Field(description="Save as this .ifc path; omit to save to the document's own file.")
        ] = None,
    ) -> SaveResult:
        doc = self.active()
        try:
            path = doc.save(Path(filePath.strip()) if filePath and filePath.strip() else None)
        except DocumentError as exc:
            raise ToolError(str(exc)) from None
        return SaveResult(success=True, message=f"Saved {doc.title} to {path}.", path=str(path))

    # Code and history --------------------------------------------------------------------
    def _namespace(self, doc: IfcDocument) -> dict[str, Any]:
        if self._namespace_modules is None:
            import ifcopenshell
            import ifcopenshell.util.element

            self._namespace_modules = {
                "ifcopenshell": ifcopenshell,
                "api": LazyPackage("ifcopenshell.api"),
                "util": LazyPackage("ifcopenshell.util"),
                "element": ifcopenshell.util.element,
            }
        return {"__name__": "__agent__", "model": doc.file, **self._namespace_modules}

    def execute_python_code(
        self,
        code: Annotated[str, Field(description="Python source; a final expression's value is returned.")],
        description: Annotated[
            str | None, Field(description="Name of the undo step (default: the first line of code).")
        ] = None,
    ) -> CallToolResult:
        doc = self.active()
        name = (description or "").strip() or _first_line(code)
        result = pyexec.run_code(
            code,
            self._namespace(doc),
            timeout=self.exec_timeout,
            begin=doc.begin,
            commit=lambda _token: doc.commit(name),
            rollback=lambda _token: doc.rollback(),
        )
        return CallToolResult(
            content=[TextContent(type="text", text=result.text())], is_error=result.is_error
        )

    def navigate_history(
        self,
        direction: Annotated[
            Literal["back", "forward"], Field(description="'back' undoes, 'forward' redoes.")
        ],
        steps: Annotated[
            int, Field(description="How many steps; more than available moves as far as possible.")
        ] = 1,
    ) -> NavigationResult:
        doc = self.active()
        try:
            return doc.history.navigate(direction, steps)
        except HistoryError as exc:
            raise ToolError(str(exc)) from None

    # Views -----------------------------------------------------------------------------------
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
        raise ToolError(f"No storey {storey!r} in {doc.title}. Storeys: {names}.")

    def view_screenshot(
        self,
        width: Annotated[int, Field(description="Image width in pixels (64-4096).")] = 1280,
        height: Annotated[
            int | None, Field(description="Image height; omit to fit the model's shape.")
        ] = None,
        view: Annotated[
            Literal["axonometric", "plan"],
            Field(description="3D view from the south-east, or a top-down plan."),
        ] = "axonometric",
        storey: Annotated[
            str | None,
            Field(description="Storey name or id to show alone (plan default: the lowest storey)."),
        ] = None,
    ) -> Image:
        from cadmcp.hosts.ifc.context import storeys
        from cadmcp.hosts.ifc.geometry import drawable_elements
        from cadmcp.hosts.ifc.render import render_png

        for label, value in (("width", width), ("height", height)):
            if value is not None and not MIN_IMAGE_SIDE <= value <= MAX_IMAGE_SIDE:
                raise ToolError(
                    f"{label} must be between {MIN_IMAGE_SIDE} and {MAX_IMAGE_SIDE} pixels, not {value}."
                )
        doc = self.active()
        f = doc.file
        level = self._storey(doc, storey)
        if level is None and view == "plan":
            levels = storeys(f)
            level = f.by_id(levels[0]["id"]) if levels else None
        cache = self.geometry(doc)
        underlay: list[Any] = []
        cut_z = None
        if level is not None:
            import ifcopenshell.util.element
            import ifcopenshell.util.unit

            members = [
                e
                for e in ifcopenshell.util.element.get_contained(level)
                if e.is_a("IfcElement") and not e.is_a("IfcFeatureElement") and e.Representation is not None
            ]
            if view == "plan":
                # Section 1.2 m above the floor; floors and rooms are drawn beneath everything else.
                scale = ifcopenshell.util.unit.calculate_unit_scale(f)
                cut_z = (level.Elevation or 0.0) * scale + PLAN_CUT_HEIGHT
                floors = [e for e in members if e.is_a("IfcSlab") or e.is_a("IfcCovering")]
                members = [e for e in members if e not in floors]
                spaces = [
                    e
                    for e in ifcopenshell.util.element.get_decomposition(level, is_recursive=False)
                    if e.is_a("IfcSpace") and e.Representation is not None
                ]
                underlay = cache.meshes_for(floors + spaces)
            caption = f"{doc.title} | {view} | {level.Name}"
        else:
            members = drawable_elements(f)
            caption = f"{doc.title} | {view}"
        png = render_png(
            cache.meshes_for(members), width, height, view, underlay=underlay, caption=caption, cut_z=cut_z
        )
        return Image(data=png, format="png")

    # Warm-up ---------------------------------------------------------------------------------
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
        self.model_context()
        yield "context"
        import ifcopenshell.geom
        import ifcopenshell.util.element
        import ifcopenshell.util.unit  # noqa: F401  (plan views)

        from cadmcp.hosts.ifc.geometry import drawable_elements
        from cadmcp.hosts.ifc.render import render_png

        yield "imports"
        documents = [active, *(d for d in self.workspace.documents if d is not active)]
        for doc in documents:
            f = doc.file
            ids = [e.id() for e in drawable_elements(f)]
            ids += [e.id() for e in f.by_type("IfcSpace") if e.Representation is not None]
            cache = self.geometry(doc)
            for start in range(0, len(ids), WARM_UP_BATCH):
                # by id each step: a call between steps may have edited or removed elements
                batch = []
                for step_id in ids[start : start + WARM_UP_BATCH]:
                    try:
                        batch.append(f.by_id(step_id))
                    except RuntimeError:
                        continue
                cache.meshes_for(batch)
                yield f"geometry {doc.title}"
        import numpy.ma  # noqa: F401  (loaded lazily by numpy.unique in the rasteriser)
        import PIL.Image
        import PIL.PngImagePlugin  # noqa: F401

        yield "render imports"
        meshes = [m for m in self.geometry(active).meshes.values() if not m.empty][:1]
        render_png(meshes, MIN_IMAGE_SIDE, MIN_IMAGE_SIDE, "axonometric", caption=active.title)
        yield "render"

    # Resources -------------------------------------------------------------------------------
    def _resource_doc(self) -> IfcDocument:
        try:
            return self.workspace.require_active()
        except DocumentError as exc:
            raise ResourceError(str(exc)) from None

    def model_context(self) -> str:
        from cadmcp.hosts.ifc.context import model_context

        return dumps(model_context(self._resource_doc()))

    def model_warnings(self) -> str:
        return dumps(self.warnings.get(self._resource_doc()))

    def schedules(self) -> str:
        from cadmcp.hosts.ifc.schedules import list_schedules

        doc = self._resource_doc()
        return dumps({"document": doc.title, "schedules": list_schedules(doc.file)})

    def schedule_preview(self, scheduleId: str) -> str:
        from cadmcp.hosts.ifc.schedules import ScheduleNotFound, schedule_preview

        try:
            return schedule_preview(self._resource_doc().file, scheduleId)
        except ScheduleNotFound as exc:
            raise ResourceNotFoundError(str(exc)) from None

    def element(self, elementId: str) -> str:
        from cadmcp.hosts.ifc.elements import ElementNotFound, element_info, find_element

        doc = self._resource_doc()
        try:
            entity = find_element(doc.file, elementId)
        except ElementNotFound as exc:
            raise ResourceNotFoundError(str(exc)) from None
        return dumps(element_info(entity, self.geometry(doc).bounding_box))


def library_versions() -> dict[str, str]:
    """Versions of the host adapter and the libraries it runs on."""
    import ifcopenshell
    import numpy
    import PIL

    return {
        "host": HOST_APP,
        "adapter": __version__,
        "ifcopenshell": ifcopenshell.version,
        "numpy": numpy.__version__,
        "pillow": PIL.__version__,
    }


def ifcopenshell_version() -> str:
    """IfcOpenShell's version from its package metadata (without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ifcopenshell")
    except PackageNotFoundError:
        return "unknown"


def build_server(host: IfcHost) -> MCPServer:
    """An MCPServer with the IFC host's built-in tools, resources and templates."""
    server = MCPServer(
        name="cadmcp-ifc",
        title="IFC host (IfcOpenShell)",
        description=f"Live IFC/BIM models through IfcOpenShell {ifcopenshell_version()}: run Python "
        "against the model with undo, inspect elements and schedules, render views.",
        version=__version__,
        instructions="Read ifc://model/context first; run code with execute_python_code "
        "(see ifc://python-cheatsheet); undo with navigate_history.",
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
    server.add_tool(
        host.execute_python_code,
        name="execute_python_code",
        description=(
            "Run Python against the live IFC model of the active document, like a notebook cell: returns "
            "printed output and the value of a final expression. In scope: model (ifcopenshell.file), "
            "ifcopenshell, api (ifcopenshell.api), util (ifcopenshell.util), element "
            "(ifcopenshell.util.element). A run that changes the model becomes one undo step named by "
            "description; a run that raises is rolled back. PEP 723 '# /// script' dependencies are "
            "installed first. Read ifc://python-cheatsheet for recipes."
        ),
        annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False),
    )
    server.add_tool(
        host.open_document,
        name="open_document",
        description="Open an IFC model (.ifc) from disk and make it the active document. Several models "
        "can be open at once; opening one that is already open just activates it.",
        annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False),
    )
    server.add_tool(
        host.list_documents,
        name="list_documents",
        description="List the open IFC documents with their paths, which one is active and which have "
        "unsaved changes.",
        annotations=read_only,
    )
    server.add_tool(
        host.activate_document,
        name="activate_document",
        description="Make another open document active (by title or path); code, views and resources "
        "then use it.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
    )
    server.add_tool(
        host.save_document,
        name="save_document",
        description="Save the active document to its file, or to filePath (save as, must end in .ifc). A new "
        "document needs a filePath the first time.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
    )
    server.add_tool(
        host.navigate_history,
        name="navigate_history",
        description="Undo ('back') or redo ('forward') whole execute_python_code steps of the active "
        "document. Returns the names of the steps moved and how many remain each way.",
        annotations=ToolAnnotations(destructive_hint=False),
    )
    server.add_tool(
        host.view_screenshot,
        name="view_screenshot",
        description="Render the active model to a PNG from its real geometry: an axonometric view of the "
        "whole building (or one storey), or a top-down plan of one storey (default: the lowest). "
        "Use it to check the result of an edit.",
        annotations=read_only,
    )

    def resource(uri: str, fn: Any, description: str, mime: str = "application/json") -> None:
        server.resource(uri, description=description, mime_type=mime)(fn)

    def cheatsheet() -> str:
        return (
            importlib.resources.files("cadmcp.hosts.ifc")
            .joinpath("cheatsheet.md")
            .read_text(encoding="utf-8")
        )

    def version() -> str:
        return dumps(library_versions())

    resource(
        "ifc://python-cheatsheet",
        cheatsheet,
        "What is in scope for execute_python_code, the undo rules and common ifcopenshell.api recipes. "
        "Read before writing code.",
        "text/markdown",
    )
    resource("ifc://version", version, "Versions of the IFC host adapter, IfcOpenShell and its libraries.")
    resource(
        "ifc://model/context",
        host.model_context,
        "Live state of the active model: title, path, schema, project, length unit, storeys with element "
        "counts, element counts by IFC class and undo history depth. Always current.",
    )
    resource(
        "ifc://model/warnings",
        host.model_warnings,
        "IFC schema validation of the active model: issues grouped by kind, the first 50 in full with "
        "element ids. Recomputed only after changes.",
    )
    resource(
        "ifc://schedules",
        host.schedules,
        "Schedules available for the active model, one per element class present (IfcDoor, IfcWall, "
        "IfcSpace…), with row counts and preview URIs.",
    )
    resource(
        "ifc://element/{elementId}",
        host.element,
        "One element by step id (e.g. 123) or GlobalId: class, name, storey, type, property sets, "
        "quantities, attributes and bounding box.",
    )
    resource(
        "ifc://schedule/{scheduleId}/preview",
        host.schedule_preview,
        "CSV preview (header + first 30 rows) of one schedule: GlobalId, Name, Storey, Type and key "
        "properties such as FireRating, IsExternal, sizes and quantities. scheduleId is an IFC class "
        "like IfcDoor.",
        "text/csv",
    )
    return server


def create_server(
    paths: Sequence[str] = (), *, exec_timeout: float | None = None, defer_loading: bool = True
) -> MCPServer:
    """Serve the built-ins over ``paths`` (the first one active) or a new empty IFC4 project.

    The paths are checked at once (existence, type, IFC header) and a bad one raises
    :class:`DocumentError`; with ``defer_loading`` (the default) IfcOpenShell is imported and the
    models parsed on the first tool or resource call, so the host is ready sooner.
    """
    host = IfcHost(exec_timeout=exec_timeout)
    host.workspace.defer([check_ifc_path(Path(str(p))) for p in paths])
    if not defer_loading:
        host.workspace.documents  # noqa: B018  (loads now)
    server = build_server(host)
    server.ifc_host = host  # type: ignore[attr-defined]  # for tests and the bench
    server.application = host  # type: ignore[attr-defined]  # cadmcp.host.current().application
    server.warm_up = host.warm_up  # type: ignore[attr-defined]  # `cadmcp host` runs it once ready
    return server


__all__ = ["HOST_APP", "IfcHost", "build_server", "create_server", "library_versions"]
