"""Live pictures of the open documents, asked of each host with its own `view_screenshot`.

A change to a document (a call reached its host, or its state changed) marks its picture
stale; a fresh one is asked only while a page watches, never more than one in flight per
host and at most one every `MIN_INTERVAL` seconds: changes meanwhile are coalesced into
the next picture, so the agent's calls never queue behind a burst of screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

if TYPE_CHECKING:
    from cadmcp.daemon.hosts import HostDirectory

MIN_INTERVAL = 1.0
SHOT_TIMEOUT = 60.0
WIDTH = 960
MAX_VIEWS = 32
MAX_MARKED = 400


@dataclass
class View:
    png: bytes | None = None
    revision: int = 0
    at: float = 0.0
    notes: str = ""
    error: str | None = None
    options: dict[str, Any] | None = None
    stale: bool = True
    busy: bool = False
    touched: dict[str, Any] | None = None
    """What the last change the host recorded touched (ids by kind), marked in the next picture."""
    marks: bool = False
    """Whether the host's view_screenshot takes `mark` (the ids to draw marked)."""
    marked: list[str] | None = None
    """The ids the picture shows marked, as the host said."""


class DocumentViews:
    """The latest picture per host instance, refreshed by `mark` (coalesced, one in flight)."""

    def __init__(self, directory: HostDirectory, on_fresh: Callable[[str, View], None]) -> None:
        self.directory = directory
        self.on_fresh = on_fresh
        self.views: dict[str, View] = {}
        self.shots = 0
        self._tg: anyio.abc.TaskGroup | None = None

    def bind(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg

    def get(self, instance_id: str) -> View:
        view = self.views.get(instance_id)
        if view is None:
            if len(self.views) >= MAX_VIEWS:
                self.views.pop(next(iter(self.views)))
            view = self.views[instance_id] = View()
        return view

    def choose(self, instance_id: str, options: dict[str, Any]) -> None:
        """The page picked another view (an IFC/FreeCAD direction): next picture uses it."""
        view = self.get(instance_id)
        if view.options != options:
            view.options = options
            self.mark(instance_id)

    def touch(self, instance_id: str, touched: dict[str, Any] | None, marks: bool) -> None:
        """What the host's last recorded change touched (None: nothing to mark, e.g. after an undo);
        the next picture marks it where the host's views can (`marks`)."""
        view = self.views.get(instance_id)
        if view is not None:
            view.touched, view.marks = touched, marks

    def mark(self, instance_id: str) -> None:
        """The document of `instance_id` changed: a new picture is due (coalesced)."""
        view = self.views.get(instance_id)
        if view is None:
            return  # nobody looked at this one yet: nothing to refresh
        view.stale = True
        if not view.busy and self._tg is not None:
            view.busy = True
            self._tg.start_soon(self._refresh, instance_id, view)

    async def _refresh(self, instance_id: str, view: View) -> None:
        try:
            while view.stale:
                view.stale = False
                since = time.monotonic() - view.at
                if view.at and since < MIN_INTERVAL:
                    await anyio.sleep(MIN_INTERVAL - since)
                try:
                    await self._shoot(instance_id, view)
                except Exception as exc:  # a failed picture never reaches the daemon's task group
                    view.error = f"the picture failed ({type(exc).__name__})"
                view.at = time.monotonic()
        finally:
            view.busy = False

    async def _shoot(self, instance_id: str, view: View) -> None:
        key = next((k for k in self.directory.local_entries() if k.instance_id == instance_id), None)
        link = self.directory.links.get(key) if key is not None else None
        if key is None or link is None:
            view.error = "the host is not connected"
            return
        arguments: dict[str, Any] = {"width": WIDTH, **(view.options or {})}
        touched = view.touched
        if touched is not None and view.marks:
            arguments["mark"] = [*touched["created"]["ids"], *touched["modified"]["ids"]][:MAX_MARKED]
        answer: dict[str, Any] = {}
        with anyio.move_on_after(SHOT_TIMEOUT):
            try:
                answer = await link.raw_request(
                    "tools/call", {"name": "view_screenshot", "arguments": arguments}
                )
            except Exception as exc:  # a host that fails a picture keeps working for the agent
                view.error = f"the picture failed ({type(exc).__name__})"
                return
        self.shots += 1
        content = answer.get("content") or []
        image = next((c for c in content if isinstance(c, dict) and c.get("type") == "image"), None)
        texts = [str(c.get("text")) for c in content if isinstance(c, dict) and c.get("type") == "text"]
        structured = (
            answer.get("structuredContent") if isinstance(answer.get("structuredContent"), dict) else {}
        )
        marked = structured.get("marked")
        view.marked = [str(m) for m in marked[:MAX_MARKED]] if isinstance(marked, list) else None
        if image is None or answer.get("isError"):
            view.error = (" ".join(texts) or "no picture came back")[:400]
        else:
            with contextlib.suppress(ValueError):
                view.png = base64.b64decode(image.get("data") or "")
                view.error = None
        view.notes = " ".join(texts)[:400]
        view.revision += 1
        self.on_fresh(instance_id, view)
