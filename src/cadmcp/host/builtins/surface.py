"""The built-in surface every document host serves, defined once over a :class:`DocumentAdapter`.

Tools: ``execute_python_code``, ``open_document``, ``list_documents``, ``activate_document``,
``save_document``, ``close_document``, ``navigate_history``, ``view_screenshot``. Resources:
``<scheme>://python-cheatsheet``, ``version``, ``model/context``, ``model/warnings``,
``schedules``, and the templates ``element/{elementId}`` and ``schedule/{scheduleId}/preview``.
Names, titles, descriptions, annotations, parameter schemas (every parameter described),
result shapes and error envelopes live here; the adapter only fills in its profile's words.

Every tool and resource function is sync: the host runtime runs it on the application thread.
"""

# No `from __future__ import annotations`: the tools' parameter annotations use words from the
# adapter's profile, so they must be evaluated where the functions are defined.
import contextlib
import inspect
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import Field
from typing_extensions import TypedDict

from cadmcp.host.appthread import AppCallCancelled
from cadmcp.host.builtins.adapter import PREVIEW_ROWS, DocumentAdapter, DocumentInfo, HostError
from cadmcp.host.builtins.checkpoint import position, stamped
from cadmcp.host.builtins.images import MAX_IMAGE_SIDE, MIN_IMAGE_SIDE, fit_height
from cadmcp.host.builtins.keywords import RESOURCE_KEYWORDS, TOOL_KEYWORDS, keywords_meta
from cadmcp.host.builtins.navigation import navigate
from cadmcp.host.builtins.ondisk import DiskStamps
from cadmcp.host.builtins.paths import check_document_path
from cadmcp.host.builtins.preview import Previewable
from cadmcp.host.builtins.previewtool import PREVIEW_NOTE, ScriptCode, StepName, previewing_tool
from cadmcp.host.builtins.scripts import run_script
from cadmcp.host.history import NavigationResult
from cadmcp.host.pyexec import EXEC_TIMEOUT_ENV, default_timeout
from cadmcp.host.runtime import HostRuntime
from cadmcp.wire.echo import echo
from cadmcp.wire.jsonwire import dumps
from cadmcp.wire.meta import ALIASES, NAVIGATES
from cadmcp.wire.meta import DOMAIN as DOMAIN_META
from cadmcp.wire.meta import FALLBACK as FALLBACK_META
from cadmcp.wire.meta import PREVIEW as PREVIEW_META

__all__ = [
    "DOMAIN_META",
    "FALLBACK_META",
    "MAX_IMAGE_SIDE",
    "MIN_IMAGE_SIDE",
    "WARM_UP_ENV",
    "BuiltinSurface",
    "build_server",
    "fit_height",
]

log = logging.getLogger("cadmcp.host.builtins")

DEFAULT_WIDTH = 1280
WARM_UP_ENV = "CADMCP_WARM_UP"
"""``0`` stops a host preparing its views in the background once ready (documents still open first)."""
T = TypeVar("T")
MAX_SAVED_FROM = 8
"""Earlier files of one document kept (it was saved as another file that many times)."""


class OpenResult(TypedDict):
    """Result of ``open_document``."""

    success: bool
    message: str
    documentTitle: str


class DocumentList(TypedDict):
    """Result of ``list_documents``."""

    documents: list[DocumentInfo]
    active: str | None


class ActivateResult(TypedDict):
    """Result of ``activate_document``: the document now active and the open documents."""

    success: bool
    message: str
    documentTitle: str
    active: str | None
    documents: list[DocumentInfo]


class SaveResult(TypedDict):
    """Result of ``save_document``."""

    success: bool
    message: str
    path: str
    savedAs: bool


class CloseResult(TypedDict):
    """Result of ``close_document``: what was closed, the document now active and those still open."""

    success: bool
    message: str
    documentTitle: str
    discarded: bool
    active: str | None
    documents: list[DocumentInfo]


def _hints(*, read_only: bool, destructive: bool, idempotent: bool) -> types.ToolAnnotations:
    """A built-in tool's annotations (none of them reaches outside the application)."""
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def _documents_summary(documents: list[DocumentInfo]) -> str | None:
    return next((d["title"] for d in documents if d["active"]), None)


class BuiltinSurface:
    """The built-in tools and resources of one host over its adapter, plus its published state."""

    def __init__(self, adapter: DocumentAdapter, version: str) -> None:
        self.adapter = adapter
        self.version = version
        self.runtime: HostRuntime | None = None
        """The HostRuntime serving this surface, once :meth:`attach` ran."""
        self._published: dict[str, Any] | None = None
        self.on_disk = DiskStamps()
        """Open files as this host last read or wrote them (a save over someone else's is refused)."""
        self.saved_from: dict[str, list[str]] = {}
        """A document's file -> the files it was saved as before (`save_document(filePath=...)`), latest
        first: the same document and history under another name (a revert follows it)."""
        profile = adapter.profile
        self.server: MCPServer[Any] = MCPServer(
            f"cadmcp-{profile.app.lower()}",
            title=f"{profile.app} host ({profile.library})",
            description=(
                f"Live {profile.app} {profile.noun}s through {profile.library}: run Python against the open "
                f"{profile.noun} with undo, inspect elements and schedules, render views."
            ),
            instructions=(
                f"Read {profile.scheme}://model/context first to see what the {profile.noun} holds, and "
                f"{profile.scheme}://python-cheatsheet before writing code for execute_python_code. Every "
                "change is one undoable step (navigate_history). Check results with view_screenshot."
            ),
            version=version,
        )
        self._tools()
        self._resources()

    @property
    def application(self) -> Any:
        """What toolsets get as ``cadmcp.host.current().application`` (the adapter's application)."""
        return self.adapter.application

    @property
    def domain(self) -> dict[str, list[str]]:
        """The search vocabulary the host declares on its ``tools/list`` results."""
        return self.adapter.profile.domain.as_meta()

    def attach(self, runtime: HostRuntime, *, warm_up: bool | None = None) -> None:
        """Serve this surface from ``runtime``: its server, the toolsets' application, the search
        vocabulary, the host state; the documents given at start-up open before the host says
        ``ready``, and the warm-up runs after (unless ``CADMCP_WARM_UP=0``), never delaying it."""
        runtime.add_server(self.server)
        runtime.application = self.application
        if self.domain:
            runtime.set_list_meta(DOMAIN_META, self.domain)
        self.runtime = runtime
        self.publish_state()
        runtime.before_ready(self.open_requested)  # `loading` until the documents asked for opened
        if warm_up is None:
            warm_up = os.environ.get(WARM_UP_ENV, "1") != "0"
        if warm_up:
            runtime.after_ready(self.warm_up)

    # -- host state ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The open documents, the active one and what became of those asked for at start-up
        (``requested``), as the host state publishes them.

        The phase (loading/ready) is the runtime's: it says `loading` while :meth:`open_requested`
        reads the documents given at start-up. Documents not read yet are not listed.
        """
        if self.adapter.pending():
            return {"documents": [], "activeDocument": None}
        requested = self.requested() or None
        try:
            documents = self.adapter.documents()
        except HostError as exc:
            return {
                "documents": [],
                "activeDocument": None,
                "problem": str(exc)[:300],
                "requested": requested,
            }
        return {
            "documents": documents,
            "activeDocument": _documents_summary(documents),
            "problem": None,
            "requested": requested,
        }

    def keep_unsaved(self) -> list[Path]:
        """Save a copy of every document with unsaved changes in the recovery folder
        (`cadmcp.userdirs.recovery_dir`): the host is stopping (its daemon's client closed, say)
        and would otherwise lose them. Returns the copies written; the files opened stay as they are.
        Call it from the application thread, once the host no longer serves."""
        try:
            modified = [d for d in self.adapter.documents() if d["modified"]]
        except Exception:  # a broken adapter: nothing to keep that it can tell
            return []
        if not modified:
            return []
        from cadmcp.userdirs import recovery_dir

        folder = recovery_dir()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        suffixes = self.adapter.profile.save_suffixes
        kept: list[Path] = []
        for document in modified:
            name = Path(document["path"]).name if document.get("path") else document["title"]
            stem, suffix = Path(name).stem or "document", Path(name).suffix
            suffix = suffix if suffix.lower() in suffixes else suffixes[0]
            target, n = folder / f"{stem}-unsaved-{stamp}{suffix}", 2
            while target.exists():  # two documents of one name (from two folders) in one second
                target, n = folder / f"{stem}-unsaved-{stamp}-{n}{suffix}", n + 1
            partial = target.with_name(f"{target.stem}.partial{suffix}")  # never a half copy named whole
            try:
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                self.adapter.activate(document["title"])
                self.adapter.save(partial)
                os.replace(partial, target)
            except Exception as exc:  # the next document may still be kept
                log.warning("unsaved changes of %s could not be kept: %s", document["title"], exc)
                continue
            log.warning("the host stopped with unsaved changes in %s: kept in %s", document["title"], target)
            kept.append(target)
        return kept

    def requested(self) -> list[Any]:
        """What became of each document asked for at start-up, with a warning where its file
        looked cut short (empty while they are still being read)."""
        return [self._with_ending(d) for d in self.adapter.requested()]

    def _with_ending(self, document: Any) -> Any:
        """A document asked for at start-up, with a warning when its file looked cut short."""
        cut = self.on_disk.warning(document.get("path")) if document.get("opened") else None
        if cut is None or cut in document.get("warnings", ()):
            return document
        return {**document, "warnings": [*document.get("warnings", ()), cut]}

    def publish_state(self) -> None:
        """Send the host state to the runtime when it changed (the one place that does)."""
        runtime = self.runtime
        if runtime is None:
            return
        try:
            state = self.state()
        except Exception:  # never let reporting break a call
            log.warning("host state could not be computed", exc_info=True)
            return
        if state != self._published:
            self._published = state
            runtime.update_state(**state)

    def open_requested(self) -> None:
        """Read the documents given at start-up (the host is `loading` until this has run)."""
        with contextlib.suppress(HostError):  # each failure is in the adapter's requested()
            self.adapter.documents()
        for document in self.adapter.requested():
            if document.get("opened"):
                self.on_disk.note(document.get("path"), read=True, lacking=document.get("lacking") or None)
        self.publish_state()

    def warm_up(self) -> Iterator[str]:
        """The adapter's warm-up steps (once ready), publishing the host state as they go."""
        self.publish_state()
        steps = self.adapter.warm_up()
        if steps is not None:
            for step in steps:
                self.publish_state()
                yield step
        self.publish_state()

    # -- envelopes -------------------------------------------------------------------------------
    def _saved_as(self) -> dict[str, str]:
        """Each file an open document was saved from -> the file it is open as now."""
        open_now = {d["path"] for d in self.adapter.documents() if d["path"]}
        return {old: new for new, olds in self.saved_from.items() if new in open_now for old in olds}

    def _tool_call(self, name: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except (HostError, AppCallCancelled) as exc:
            raise ToolError(str(exc)) from None
        except (ToolError, ResourceError):
            raise
        except Exception as exc:
            log.exception("%s failed", name)
            raise ToolError(
                f"{name} failed inside the {self.adapter.profile.app} host: {type(exc).__name__}: "
                f"{echo(str(exc), 300)}"
            ) from None
        finally:
            self.publish_state()

    def _resource_read(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except AppCallCancelled as exc:
            raise ResourceError(str(exc)) from None
        except HostError as exc:
            if exc.kind == "not_found":
                raise ResourceNotFoundError(str(exc)) from None
            raise ResourceError(str(exc)) from None
        except (ResourceError, ToolError):
            raise
        except Exception as exc:
            log.exception("resource read failed")
            raise ResourceError(
                f"Reading failed inside the {self.adapter.profile.app} host: {type(exc).__name__}: "
                f"{echo(str(exc), 300)}"
            ) from None
        finally:
            self.publish_state()  # a first read may have loaded the start-up documents

    # -- tools -------------------------------------------------------------------------------------
    def _add_tool(
        self,
        fn: Callable[..., Any],
        title: str,
        description: str,
        annotations: types.ToolAnnotations,
        *,
        meta: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        """`server.add_tool` under the function's name, with the tool's search keywords in its `_meta`."""
        name = fn.__name__
        meta = {**(keywords_meta(TOOL_KEYWORDS.get(name)) or {}), **(meta or {})}
        self.server.add_tool(
            fn,
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            meta=meta or None,
            **kw,
        )

    def _tools(self) -> None:
        adapter = self.adapter
        p = adapter.profile
        noun = p.noun
        suffixes = " or ".join(p.save_suffixes)
        history_note = f"{p.history_note} " if p.history_note else ""

        def execute_python_code(
            code: ScriptCode,
            description: StepName = None,
        ) -> types.CallToolResult:
            def run() -> types.CallToolResult:
                if not isinstance(code, str) or not code.strip():
                    raise HostError("code is empty: pass the Python source to run.", "invalid")
                before = position(adapter)
                result = run_script(adapter, code, description)
                answer = types.CallToolResult(
                    content=[types.TextContent(type="text", text=result.text())], is_error=result.is_error
                )
                return stamped(adapter, before, answer, self.saved_from)

            return self._tool_call("execute_python_code", run)

        previews = isinstance(adapter, Previewable)
        if previews:
            execute_python_code = previewing_tool(self, adapter)  # type: ignore[assignment]
        self._add_tool(
            execute_python_code,
            f"Run Python in the {p.app} {noun}",
            f"Run Python against the active {noun} of the live {p.app} host, like a notebook cell: what "
            f"it prints and the value of a final expression come back. In scope: {p.scope} Each call "
            "starts with a fresh namespace: variables do not carry over between calls, so look objects "
            f"up again. {p.step_rule} A run that raises, or runs past the time limit, is rolled back "
            "completely ([ROLLBACK], [TIMEOUT]), and so is a cancelled one ([CANCELLED]); a long script "
            "can report progress(fraction, message). PEP 723 '# /// script' dependencies are installed "
            f"with uv first. Read {p.scheme}://python-cheatsheet for recipes and "
            f"{p.scheme}://model/context for the current state.{PREVIEW_NOTE if previews else ''}",
            _hints(read_only=False, destructive=True, idempotent=False),
            meta={FALLBACK_META: ["change", "query"], **({PREVIEW_META: True} if previews else {})},
        )

        def open_document(
            filePath: Annotated[
                str,
                Field(description=f"Path of {p.file_kinds}; absolute paths are safest ('~' is expanded)."),
            ],
        ) -> OpenResult:
            def run() -> OpenResult:
                path = check_document_path(
                    filePath, kind=p.file_kinds, memory_factor=p.memory_factor, error=HostError
                )
                opened = adapter.open(path)
                if not opened.already_open:
                    self.on_disk.note(path, read=True, lacking=opened.lacking or None)
                if opened.already_open:
                    message = (
                        f"Already open: {opened.title} is the active {noun} again ({opened.summary}); it was "
                        "not read again from disk and its unsaved changes are kept."
                    )
                else:
                    message = f"Opened {opened.title} ({opened.summary}); it is now the active {noun}."
                if opened.note:
                    message += f" {opened.note}"
                if opened.warnings:
                    message += " " + " ".join(opened.warnings)
                if (cut := self.on_disk.warning(path)) is not None:
                    message += f" {cut}"
                return OpenResult(success=True, message=message, documentTitle=opened.title)

            return self._tool_call("open_document", run)

        self._add_tool(
            open_document,
            f"Open a {noun}",
            (
                f"Open {p.file_kinds} and make it the active {noun}. Several {noun}s can be open at once: "
                "list_documents shows them, activate_document switches. A file that is already open is not "
                f"read again: it just becomes the active {noun} again and its unsaved changes stay (the "
                f"message starts with 'Already open'). {p.open_note}"
            ).strip(),
            _hints(read_only=False, destructive=False, idempotent=True),
            meta={NAVIGATES: True},
        )

        def list_documents() -> DocumentList:
            def run() -> DocumentList:
                documents = adapter.documents()
                return DocumentList(documents=documents, active=_documents_summary(documents))

            return self._tool_call("list_documents", run)

        self._add_tool(
            list_documents,
            f"List open {noun}s",
            f"List the open {noun}s: title, path (null for a new one never saved), which one is active "
            "(code, screenshots and resources work on it) and which have unsaved changes.",
            _hints(read_only=True, destructive=False, idempotent=True),
        )

        def activate_document(
            document: Annotated[
                str, Field(description="Title (as list_documents shows it) or path of an open document.")
            ],
        ) -> ActivateResult:
            def run() -> ActivateResult:
                if not isinstance(document, str) or not document.strip():
                    raise HostError("document is empty: pass a title or path from list_documents.", "invalid")
                title = adapter.activate(document.strip())
                documents = adapter.documents()
                return ActivateResult(
                    success=True,
                    message=f"{title} is now the active {noun}.",
                    documentTitle=title,
                    active=_documents_summary(documents),
                    documents=documents,
                )

            return self._tool_call("activate_document", run)

        self._add_tool(
            activate_document,
            f"Switch the active {noun}",
            f"Make another open {noun} the active one, by its title or path (see list_documents). "
            "execute_python_code, view_screenshot, navigate_history and the resources then work on it.",
            _hints(read_only=False, destructive=False, idempotent=True),
            meta={NAVIGATES: True},
        )

        def save_document(
            filePath: Annotated[
                str | None,
                Field(
                    description=f"Save as this file (an absolute path ending in {suffixes}); an existing "
                    f"file there is overwritten. Omit to save the {noun} to its own file."
                ),
            ] = None,
        ) -> SaveResult:
            def run() -> SaveResult:
                target = None
                if filePath is not None and filePath.strip():
                    raw = filePath.strip()
                    try:
                        expanded = os.path.expanduser(raw)
                    except (RuntimeError, ValueError):
                        raise HostError(
                            f"Cannot use {echo(raw)} as a path: '~user' names no user here. Pass an absolute "
                            "path.",
                            "invalid",
                        ) from None
                    if not os.path.isabs(expanded):  # the host's working folder is nobody's choice
                        raise HostError(
                            f"filePath {echo(raw)} is relative; pass an absolute path (or one starting with "
                            f"~), as launch_host takes, e.g. {echo(os.path.join('/path/to/folder', raw))}.",
                            "invalid",
                        )
                    target = os.path.abspath(expanded)
                    _check_save_target(target, p.save_suffixes)
                from pathlib import Path

                active = next((d for d in adapter.documents() if d["active"]), None)
                earlier = active["path"] if active else None
                if target is None:  # in place: not over changes someone else saved meanwhile
                    self.on_disk.check_unchanged(earlier)
                saved = adapter.save(Path(target) if target else None)
                if target and earlier and earlier != str(saved.path):
                    chain = [earlier, *self.saved_from.get(earlier, [])]
                    self.saved_from[str(saved.path)] = chain[:MAX_SAVED_FROM]
                stack = adapter.history()
                self.on_disk.note(saved.path, steps=stack.undo_names(), dropped=stack.dropped())
                if target:
                    kept = "; the file it came from keeps its last saved state" if earlier else ""
                    message = (
                        f"Saved as {saved.path}: the {noun} is now {saved.title} (later saves go "
                        f"there{kept})."
                    )
                else:
                    message = f"Saved {saved.title} to {saved.path}."
                if saved.note:
                    message += f" {saved.note}"
                return SaveResult(success=True, message=message, path=str(saved.path), savedAs=bool(target))

            return self._tool_call("save_document", run)

        self._add_tool(
            save_document,
            f"Save the {noun} (or save as)",
            f"Save the active {noun}. Without filePath it is written to its own file. With filePath it "
            f"is saved as that file (save as): the {noun} then is that file, its title and path change "
            "and later saves go there, while the file it came from keeps its last saved state. A new "
            f"{noun} needs filePath the first time. The undo history is kept.",
            _hints(read_only=False, destructive=True, idempotent=True),
        )

        def close_document(
            document: Annotated[
                str | None,
                Field(
                    description=f"Title or path of the {noun}, as list_documents shows them; omit to close "
                    f"the active {noun}."
                ),
            ] = None,
            discard: Annotated[
                bool,
                Field(description="Close it even with unsaved changes, which are then lost."),
            ] = False,
        ) -> CloseResult:
            def run() -> CloseResult:
                wanted = document.strip() if isinstance(document, str) and document.strip() else None
                closed = adapter.close(wanted, bool(discard))
                if closed.path:
                    self.saved_from.pop(closed.path, None)  # its history is gone: no revert follows it
                documents = adapter.documents()
                active = _documents_summary(documents)
                message = f"Closed {closed.title}"
                if closed.discarded:
                    message += " without saving: its unsaved changes were dropped"
                message += (
                    f"; {active} is the active {noun}."
                    if active
                    else f"; no {noun} is open (open_document opens one)."
                )
                return CloseResult(
                    success=True,
                    message=message,
                    documentTitle=closed.title,
                    discarded=closed.discarded,
                    active=active,
                    documents=documents,
                )

            return self._tool_call("close_document", run)

        self._add_tool(
            close_document,
            f"Close a {noun}",
            f"Close a {noun} (the active one when document is omitted) and its undo history. One with "
            "unsaved changes needs discard=true, which drops them: save_document first to keep "
            f"them. When the active {noun} closes, the latest of those left becomes active.",
            _hints(read_only=False, destructive=True, idempotent=False),
        )

        def navigate_history(
            direction: Annotated[
                Literal["back", "forward"], Field(description="'back' undoes, 'forward' redoes.")
            ],
            steps: Annotated[
                int,
                Field(
                    description="Steps to move (at least 1); more than exist moves as far as it can.", ge=1
                ),
            ] = 1,
        ) -> NavigationResult:
            def run() -> NavigationResult:
                stack = adapter.history()
                moved = navigate(stack, direction, steps)
                active = next((d for d in adapter.documents() if d["active"]), None)
                path = active["path"] if active else None
                if held := self.on_disk.undone_in_file(path, stack.undo_names(), stack.dropped()):
                    moved["savedFileHolds"] = held
                    moved["message"] += (
                        f" {echo(Path(path).name)} was saved with {len(held)} step(s) not in the {noun} now "
                        f"({'; '.join(held[:5])}{'; ...' if len(held) > 5 else ''}): the file still holds "
                        f"them. save_document writes the {noun} as it is now."
                    )
                return moved

            return self._tool_call("navigate_history", run)

        self._add_tool(
            navigate_history,
            "Undo / redo",
            f"Undo ('back') or redo ('forward') whole steps of the active {noun}'s history; every "
            f"execute_python_code run that changed the {noun} is one step. {history_note}Moves at most "
            "as many steps as exist (an empty history is not an error) and returns the names of the "
            "steps moved and the steps left each way.",
            _hints(read_only=False, destructive=False, idempotent=False),
        )

        self._add_tool(
            self._screenshot_tool(),
            f"Screenshot of the {noun}",
            f"Render the active {noun} to a PNG image to check what it looks like. {p.screenshot_view} "
            f"Width and height are pixels ({MIN_IMAGE_SIDE}-{MAX_IMAGE_SIDE}); without a height the "
            f"image follows the view's proportions. When part of the {noun} cannot be drawn or is "
            "left out of the frame, a text note beside the image and structuredContent say which part "
            "and why.",
            _hints(read_only=True, destructive=False, idempotent=True),
        )

    def _screenshot_tool(self) -> Callable[..., types.CallToolResult]:
        adapter = self.adapter
        options = adapter.profile.screenshot_options
        noun = adapter.profile.noun

        def view_screenshot(**arguments: Any) -> types.CallToolResult:
            def run() -> types.CallToolResult:
                width, height = arguments.pop("width", DEFAULT_WIDTH), arguments.pop("height", None)
                for label, value in (("width", width), ("height", height)):
                    if value is not None and not MIN_IMAGE_SIDE <= value <= MAX_IMAGE_SIDE:
                        raise HostError(
                            f"{label} must be between {MIN_IMAGE_SIDE} and {MAX_IMAGE_SIDE} pixels, not "
                            f"{echo(value)}.",
                            "invalid",
                        )
                shot = adapter.screenshot(width, height, arguments)
                _explain_blank(shot, noun)
                content: list[Any] = [
                    types.ImageContent(type="image", data=_b64(shot.png), mime_type="image/png")
                ]
                if shot.notes:
                    content.append(types.TextContent(type="text", text="\n".join(shot.notes)))
                structured = {**(shot.coverage or {}), "notes": list(shot.notes)}
                return types.CallToolResult(content=content, structured_content=structured)

            return self._tool_call("view_screenshot", run)

        side = {"minimum": MIN_IMAGE_SIDE, "maximum": MAX_IMAGE_SIDE}
        parameters = [
            inspect.Parameter(
                "width",
                inspect.Parameter.KEYWORD_ONLY,
                default=DEFAULT_WIDTH,
                annotation=Annotated[
                    int,
                    Field(
                        description=f"Image width in pixels ({MIN_IMAGE_SIDE}-{MAX_IMAGE_SIDE}).",
                        json_schema_extra=side,
                    ),
                ],
            ),
            inspect.Parameter(
                "height",
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[
                    int | None,
                    Field(
                        description=f"Image height in pixels ({MIN_IMAGE_SIDE}-{MAX_IMAGE_SIDE}); omit to "
                        "follow the view's proportions.",
                        json_schema_extra=side,
                    ),
                ],
            ),
        ]
        for option in options:
            parameters.append(
                inspect.Parameter(
                    option.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=option.default,
                    annotation=Annotated[
                        option.annotation,
                        Field(
                            description=option.description,
                            json_schema_extra={ALIASES: dict(option.aliases)} if option.aliases else None,
                        ),
                    ],
                )
            )
        view_screenshot.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            parameters, return_annotation=types.CallToolResult
        )
        return view_screenshot

    # -- resources ---------------------------------------------------------------------------------
    def _resources(self) -> None:
        adapter, server = self.adapter, self.server
        p = adapter.profile
        scheme, noun = p.scheme, p.noun

        def add(
            uri: str,
            name: str,
            title: str,
            description: str,
            fn: Callable[..., Any],
            mime: str = "application/json",
        ) -> None:
            words = RESOURCE_KEYWORDS.get(uri.split("://", 1)[1])
            server.resource(
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime,
                meta=keywords_meta(words),
            )(fn)

        def cheatsheet() -> str:
            return self._resource_read(adapter.cheatsheet)

        def version() -> str:
            def read() -> str:
                info: dict[str, Any] = {
                    "host": p.app,
                    "adapter": self.version,
                    "python": sys.version.split()[0],
                    "exec_timeout_s": adapter.exec_timeout
                    if adapter.exec_timeout is not None
                    else default_timeout(),
                    "exec_timeout_env": EXEC_TIMEOUT_ENV,
                }
                info.update(adapter.versions())
                return dumps(info)

            return self._resource_read(read)

        def model_context() -> str:
            return self._resource_read(lambda: dumps(adapter.context()))

        def model_warnings() -> str:
            return self._resource_read(lambda: dumps(adapter.warnings()))

        def schedules() -> str:
            return self._resource_read(lambda: dumps(adapter.schedules()))

        def element(elementId: str) -> str:
            return self._resource_read(lambda: dumps(adapter.element(elementId)))

        def schedule_preview(scheduleId: str) -> str:
            return self._resource_read(lambda: adapter.schedule_preview(scheduleId))

        def model_history() -> str:
            def read() -> str:
                now = position(adapter)
                now["undoCount"] = len(adapter.history().undo_names())  # `undo` holds the latest alone
                earlier, renamed = self.saved_from.get(str(now["document"])), self._saved_as()
                if earlier:  # the active document was saved as another file: known by both
                    now["savedFrom"] = earlier
                if renamed:  # open documents saved as other files: their names now
                    now["savedAs"] = renamed
                return dumps(now)

            return self._resource_read(read)

        add(
            f"{scheme}://python-cheatsheet",
            "python-cheatsheet",
            f"{p.app} Python cheatsheet",
            "What execute_python_code puts in scope, the undo and rollback rules and tested recipes. Read "
            "it before writing code.",
            cheatsheet,
            "text/markdown",
        )
        add(
            f"{scheme}://version",
            "version",
            f"{p.app} host version",
            f"Versions of the {p.app} host adapter, {p.library} and the Python it runs, and the script time "
            "limit, as JSON.",
            version,
        )
        add(
            f"{scheme}://model/context",
            "model-context",
            f"{noun.capitalize()} context",
            f"Live state of the active {noun}: {p.context_fields}. Read it first to orient yourself; it is "
            "computed on every read.",
            model_context,
        )
        add(
            f"{scheme}://model/warnings",
            "model-warnings",
            f"{noun.capitalize()} warnings",
            f"Problems in the active {noun}: {p.warnings_fields}. Read it when something looks wrong or "
            "before saving.",
            model_warnings,
        )
        add(
            f"{scheme}://model/history",
            "model-history",
            f"{noun.capitalize()} history",
            f"Where the active {noun}'s step list stands, as JSON: its path and the names of the steps "
            "behind and ahead, most recent first (to see whether anyone changed it since a call).",
            model_history,
        )
        add(
            f"{scheme}://schedules",
            "schedules",
            "Available schedules",
            f"Tables derived from the active {noun}: {p.schedules_fields}. Read one with "
            f"{scheme}://schedule/{{scheduleId}}/preview.",
            schedules,
        )
        add(
            f"{scheme}://element/{{elementId}}",
            "element",
            "One element",
            f"One element of the active {noun} as JSON, by {p.element_ids}: {p.element_fields}.",
            element,
        )
        add(
            f"{scheme}://schedule/{{scheduleId}}/preview",
            "schedule-preview",
            "Schedule preview (CSV)",
            f"The first {PREVIEW_ROWS} rows of a schedule as CSV with a header row; scheduleId comes from "
            f"{scheme}://schedules.",
            schedule_preview,
            "text/csv",
        )


def _check_save_target(target: str, suffixes: tuple[str, ...]) -> None:
    name = os.path.basename(target)
    if not name.lower().endswith(tuple(s.lower() for s in suffixes)):
        raise HostError(
            f"Save as {echo(name)}: the file name must end in {' or '.join(suffixes)} (this host writes "
            f"{' and '.join(suffixes)} files only, whatever format a document was opened from).",
            "invalid",
        )
    if os.path.isdir(target):
        raise HostError(f"{echo(target, 160)} is a folder (directory); give a file path.", "invalid")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise HostError(
            f"The folder {echo(folder, 160)} does not exist. Create it or choose another path.", "invalid"
        )


def _explain_blank(shot: Any, noun: str) -> None:
    """A picture that is all background says so, whatever the application (never a silent blank)."""
    if shot.coverage is not None and "blank" in shot.coverage:  # the adapter checked and explained
        return
    from cadmcp.host.builtins.raster import uniform_colour

    colour = uniform_colour(shot.png)
    shot.coverage = {**(shot.coverage or {}), "blank": colour is not None}
    if colour is not None:
        shot.notes.append(
            f"[BLANK VIEW] Every pixel of this image is the background colour: nothing of the {noun} is "
            "visible, and the application gave no reason. Check the model context for elements with "
            "geometry, or try another view."
        )


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def build_server(adapter: DocumentAdapter, version: str) -> BuiltinSurface:
    """The built-in surface over ``adapter``: its MCP server (``.server``), served with :meth:`attach`."""
    return BuiltinSurface(adapter, version)
