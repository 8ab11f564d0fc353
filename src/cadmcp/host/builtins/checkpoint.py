"""Where a document's history stands: stamped on each execute_python_code result, readable any time.

A result that ran code carries `_meta["io.cadmcp/checkpoint"]`: the active document, how many
undo steps the call added (a run is one step or none), and the names of the undo steps after
it. The daemon keeps these as checkpoints (call -> host -> history position) and, to revert,
reads `<scheme>://model/history` to see whether anyone changed the document since.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from cadmcp.host.builtins.adapter import DocumentAdapter

CHECKPOINT_META = "io.cadmcp/checkpoint"
MAX_NAMES = 64


def position(adapter: DocumentAdapter) -> dict[str, Any]:
    """The active document and its undo and redo step names (most recent first)."""
    active = next((d for d in adapter.documents() if d["active"]), None)
    history = adapter.history()
    return {
        "document": (active["path"] or active["title"]) if active else None,
        "undo": history.undo_names()[:MAX_NAMES],
        "redo": history.redo_names()[:MAX_NAMES],
    }


def stamped(
    adapter: DocumentAdapter, before: dict[str, Any], result: types.CallToolResult
) -> types.CallToolResult:
    """`result` with the checkpoint of the call that produced it (`before`: the position before it ran)."""
    try:
        after = position(adapter)
    except Exception:  # a document that cannot say where it stands gets no checkpoint, the run stands
        return result
    changed = after["document"] == before["document"] and after["undo"] != before["undo"]
    mark = {"document": after["document"], "added": 1 if changed else 0, "undo": after["undo"]}
    result.meta = {**(result.meta or {}), CHECKPOINT_META: mark}
    return result
