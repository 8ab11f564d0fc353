"""The DXF host's built-in MCP server: tools, resources and templates over open drawings.

Every tool and resource here is a plain sync function: the host runtime runs them on the
application thread, one at a time, so they may touch the documents freely.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import mcp_types as types
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from typing_extensions import TypedDict

from cadmcp.host.history import HistoryError
from cadmcp.host.pyexec import EXEC_TIMEOUT_ENV, default_timeout
from cadmcp.hosts.dxf import context as model
from cadmcp.hosts.dxf.cheatsheet import CHEATSHEET
from cadmcp.hosts.dxf.documents import DocumentSet, DxfDocument, DxfHostError
from cadmcp.hosts.dxf.schedules import list_schedules, schedule_csv
from cadmcp.wire.jsonwire import dumps

__all__ = ["create_server"]


class OpenResult(TypedDict):
    success: bool
    message: str
    documentTitle: str


class DocumentInfo(TypedDict):
    title: str
    path: str | None
    active: bool
    modified: bool


class DocumentList(TypedDict):
    documents: list[DocumentInfo]
    active: str | None


class SaveResult(TypedDict):
    success: bool
    message: str
    path: str


class HistoryResult(TypedDict):
    direction: Literal["back", "forward"]
    navigated: int
    operations: list[str]
    back_remaining: int
    forward_available: int
    message: str


def create_server(paths: Sequence[str] = (), *, exec_timeout: float | None = None) -> MCPServer[Any]:
    """Check ``paths`` and build the MCP server; the drawings are read on first use (first active;
    none → a new empty drawing), so the host is ready before ezdxf is even imported."""
    from importlib.metadata import version as package_version

    from cadmcp.hosts.dxf import HOST_APP, HOST_VERSION

    documents = DocumentSet()
    for path in paths:
        documents.open_later(path)
    documents.blank_on_first_use()

    server: MCPServer[Any] = MCPServer(
        f"cadmcp-{HOST_APP.lower()}",
        title="DXF drawings (ezdxf)",
        description=(
            f"Live DXF drawings (the AutoCAD analogue) driven by ezdxf {package_version('ezdxf')}: "
            "run Python "
            "against the open drawing, undo/redo, screenshots, model context, schedules."
        ),
        instructions=(
            "Read dxf://model/context first to see layers, layouts, blocks and counts, and "
            "dxf://python-cheatsheet before writing code for execute_python_code. Every change is one "
            "undoable step (navigate_history). Check results with view_screenshot."
        ),
        version=HOST_VERSION,
    )

    # what toolsets reach through cadmcp.host.current().application
    server.application = documents  # type: ignore[attr-defined]

    def warm_up() -> Iterator[str]:
        """Make the first calls fast, one short application-thread job per step (see
        `HostRuntime.after_ready`): import ezdxf, read the drawings queued at start-up, load the
        code-execution and drawing machinery. A drawing that fails is left for the first call."""
        import ezdxf

        yield "ezdxf"
        list(documents)  # reads the queued drawings (errors are kept for the first call)
        yield "documents"
        import ezdxf.addons.drawing  # noqa: F401

        from cadmcp.hosts.dxf import execution  # noqa: F401

        yield "imports"

    server.warm_up = warm_up  # type: ignore[attr-defined]

    def active() -> DxfDocument:
        try:
            return documents.active
        except DxfHostError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        title="Run Python in the drawing",
        annotations=types.ToolAnnotations(destructive_hint=True, open_world_hint=False),
    )
    def execute_python_code(code: str, description: str | None = None) -> types.CallToolResult:
        """Run Python code against the active DXF drawing, like a notebook cell.

        In scope: `doc` (ezdxf Drawing), `msp` (modelspace), `ezdxf`. Returns printed output and
        the value of the last expression. Use it to query the drawing (counts, attributes, geometry)
        or to change it (add/modify/delete entities, layers, blocks, header variables). A run that
        changes the drawing becomes one undo step named `description` (default: the first code line);
        a run that fails is rolled back. PEP 723 `# /// script` dependencies are installed with uv.
        Read dxf://python-cheatsheet for recipes.
        """
        entry = active()
        from cadmcp.hosts.dxf.execution import execute  # imports ezdxf: keep it off start-up

        result = execute(entry, code, description, exec_timeout)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text())], is_error=result.is_error
        )

    @server.tool(title="Open a DXF drawing")
    def open_document(filePath: str) -> OpenResult:
        """Open a DXF file (ASCII or binary) and make it the active document (a file already open is
        just activated).

        Several drawings can be open; use list_documents/activate_document to switch. DWG files
        cannot be opened (convert them to DXF first). The file is audited on open; see
        dxf://model/warnings for what was fixed.
        """
        try:
            entry = documents.open(filePath)
        except DxfHostError as exc:
            raise ToolError(str(exc)) from None
        fixes = len(entry.auditor.fixes) if entry.auditor is not None else 0
        note = f" Audit fixed {fixes} issue(s) (see dxf://model/warnings)." if fixes else ""
        return OpenResult(
            success=True,
            message=f"Opened {entry.title} ({entry.doc.dxfversion}, {len(entry.doc.modelspace())} "
            f"modelspace entities); it is now the active document.{note}",
            documentTitle=entry.title,
        )

    @server.tool(title="List open drawings", annotations=types.ToolAnnotations(read_only_hint=True))
    def list_documents() -> DocumentList:
        """List the open DXF documents (title, path, whether active, unsaved changes)."""
        current = documents.active if any(True for _ in documents) else None
        docs = [
            DocumentInfo(title=e.title, path=e.display_path(), active=e is current, modified=e.modified)
            for e in documents
        ]
        return DocumentList(documents=docs, active=current.title if current else None)

    @server.tool(title="Switch the active drawing")
    def activate_document(document: str) -> DocumentList:
        """Make an open document active, by its title or path (see list_documents)."""
        try:
            documents.activate(document)
        except DxfHostError as exc:
            raise ToolError(str(exc)) from None
        return list_documents()

    @server.tool(title="Save the drawing", annotations=types.ToolAnnotations(destructive_hint=True))
    def save_document(filePath: str | None = None) -> SaveResult:
        """Save the active document to its file, or save it as `filePath` (a path ending in .dxf).

        A new (untitled) document needs `filePath`. Undo history is kept after saving.
        """
        try:
            entry = documents.save(filePath)
        except DxfHostError as exc:
            raise ToolError(str(exc)) from None
        return SaveResult(success=True, message=f"Saved {entry.title} to {entry.path}.", path=str(entry.path))

    @server.tool(title="Undo / redo")
    def navigate_history(direction: Literal["back", "forward"], steps: int = 1) -> HistoryResult:
        """Undo (`back`) or redo (`forward`) steps recorded by execute_python_code on the active document.

        Moves at most as many steps as exist; an empty history is not an error.
        """
        entry = active()
        try:
            result = entry.history.navigate(direction, steps)
        except HistoryError as exc:
            raise ToolError(str(exc)) from None
        if result["navigated"]:
            entry.modified = True
        return HistoryResult(**result)

    @server.tool(title="Screenshot of the drawing", annotations=types.ToolAnnotations(read_only_hint=True))
    def view_screenshot(
        width: int = 1280,
        height: int | None = None,
        layout: str | None = None,
        window: list[float] | None = None,
        layers: list[str] | None = None,
        background: str = "white",
    ) -> Image:
        """Render the active drawing to a PNG image to check what it looks like.

        Modelspace by default (or a paperspace `layout` by name), zoomed to extents unless `window`
        ([x1, y1, x2, y2] in drawing units) is given. `layers` limits the view to those layers.
        `background`: 'white' (default), 'black', 'dark' or '#rrggbb'. Height follows the aspect
        ratio when omitted.
        """
        from cadmcp.hosts.dxf.screenshot import render_png

        entry = active()
        try:
            data = render_png(
                entry.doc,
                width=width,
                height=height,
                layout=layout,
                window=window,
                layers=layers,
                background=background,
            )
        except DxfHostError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # a drawing ezdxf's frontend cannot render
            raise ToolError(
                f"Rendering failed ({type(exc).__name__}: {exc}). "
                "Try another layout, a window or a layers filter."
            ) from None
        return Image(data=data, format="png")

    # -- resources ----------------------------------------------------------------------

    @server.resource(
        "dxf://python-cheatsheet",
        name="python-cheatsheet",
        title="DXF Python cheatsheet",
        description="What is in scope for execute_python_code, the undo rules and common ezdxf recipes.",
        mime_type="text/markdown",
    )
    def python_cheatsheet() -> str:
        return CHEATSHEET

    @server.resource(
        "dxf://version",
        name="version",
        title="DXF host version",
        description="Host application, adapter and ezdxf versions as JSON.",
        mime_type="application/json",
    )
    def version() -> str:
        import sys

        return dumps(
            {
                "host": HOST_APP,
                "adapter": HOST_VERSION,
                "ezdxf": package_version("ezdxf"),
                "python": sys.version.split()[0],
                "exec_timeout_s": exec_timeout if exec_timeout is not None else default_timeout(),
                "exec_timeout_env": EXEC_TIMEOUT_ENV,
            }
        )

    def resource_entry() -> DxfDocument:
        try:
            return documents.active
        except DxfHostError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource(
        "dxf://model/context",
        name="model-context",
        title="Drawing context",
        description=(
            "Live state of the active drawing: title/path, DXF version, units, layers (colour, on/off, "
            "frozen, entity count), entity counts by type per layout, blocks with attribute tags, "
            "active layout, extents and undo depth. Read it first to orient yourself."
        ),
        mime_type="application/json",
    )
    def model_context() -> str:
        return dumps(model.model_context(resource_entry()))

    @server.resource(
        "dxf://model/warnings",
        name="model-warnings",
        title="Drawing audit warnings",
        description="ezdxf audit of the active drawing, grouped by kind (first 50): fixes applied on open "
        "and issues present now. Use it when a drawing looks broken or before saving.",
        mime_type="application/json",
    )
    def model_warnings() -> str:
        entry = resource_entry()

        def audit() -> Any:
            from cadmcp.hosts.dxf.execution import run_tracked

            auditor, changes = run_tracked(entry, entry.doc.audit)
            changes.undo()  # report only: the audit's own fixes are not kept
            return auditor

        return dumps(model.model_warnings(entry, audit))

    @server.resource(
        "dxf://schedules",
        name="schedules",
        title="Available schedules",
        description="Tables derived from the active drawing: one per block with attributes (id = block "
        "name, e.g. DOOR; columns handle, layout, layer, insertion point, one per attribute tag) and "
        "`layers`. Read a table with dxf://schedule/{scheduleId}/preview.",
        mime_type="application/json",
    )
    def schedules() -> str:
        return dumps({"schedules": list_schedules(resource_entry().doc)})

    @server.resource(
        "dxf://element/{elementId}",
        name="element",
        title="Entity by handle",
        description="One entity of the active drawing by handle (hex, e.g. 2A) as JSON: type, layer, owner, "
        "DXF attributes, xdata, block attributes for INSERTs, points for polylines, bounding box.",
        mime_type="application/json",
    )
    def element(elementId: str) -> str:
        try:
            return dumps(model.element_info(resource_entry(), elementId))
        except DxfHostError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @server.resource(
        "dxf://schedule/{scheduleId}/preview",
        name="schedule-preview",
        title="Schedule preview (CSV)",
        description="The first 30 rows of a schedule as CSV with a header row. Ids come from dxf://schedules.",
        mime_type="text/csv",
    )
    def schedule_preview(scheduleId: str) -> str:
        try:
            return schedule_csv(resource_entry().doc, scheduleId)
        except DxfHostError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    return server
