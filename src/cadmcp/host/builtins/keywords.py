"""Search keywords of the built-in surface: what users call each capability in words its name,
title and description do not use ("what's open" for `list_documents`, "roll back" for
`navigate_history`). Sent as `_meta["io.cadmcp/keywords"]`; the daemon's search weighs them
between title and description.

Keep them specific: a keyword that contains a change verb ("keep the changes") makes the
capability count as named for that verb, and search then no longer offers the code-execution
tool for such requests. Synonyms shared by every app (undo/revert, screenshot/render) live in the
search vocabulary; these are the phrases that belong to one capability.
"""

from __future__ import annotations

from typing import Any

from cadmcp.wire.meta import KEYWORDS

TOOL_KEYWORDS: dict[str, tuple[str, ...]] = {
    "execute_python_code": ("script", "automate"),
    "open_document": ("load", "import", "open a file"),
    "list_documents": (
        "open documents",
        "open files",
        "open models",
        "open drawings",
        "loaded",
        "currently open",
    ),
    "activate_document": ("switch to", "make active", "active document", "current document", "focus"),
    "save_document": ("save as", "write to disk"),
    "close_document": ("close the file", "unload"),
    "navigate_history": ("undo", "redo", "revert", "roll back", "previous state", "step back"),
    "view_screenshot": ("picture", "image", "render", "snapshot", "what it looks like", "view"),
}
"""Keywords of the built-in tools, by tool name."""

RESOURCE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "python-cheatsheet": ("how to script", "api reference", "code examples", "recipes", "scripting help"),
    "version": ("release", "file format version", "schema version", "library version", "time limit"),
    "model/context": ("units", "extents", "what is in it", "statistics"),
    "model/warnings": ("errors", "problems", "invalid", "broken", "audit", "check"),
    "schedules": ("tables", "quantity takeoff", "bill of materials", "lists"),
    "element/{elementId}": ("properties", "attributes", "details", "inspect one"),
    "schedule/{scheduleId}/preview": ("table rows", "csv", "read a table"),
}
"""Keywords of the built-in resources and templates, by their URI after `scheme://`."""


def keywords_meta(words: tuple[str, ...] | None) -> dict[str, Any] | None:
    """The `_meta` entry for `words`, or None when there are none."""
    return {KEYWORDS: list(words)} if words else None
