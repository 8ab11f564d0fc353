"""Where a document's history stands: stamped on each execute_python_code result, readable any time.

A result that ran code carries `_meta["io.cadmcp/checkpoint"]`: the active document, how many
undo steps the call added (a run is one step or none), the names of the undo steps after it
(and their numbers, `undoIds`, where the history numbers them: :class:`NumberedStack`), and,
where the history can say (:class:`TouchingStack`), the ids of the objects the step created,
modified and deleted (`touched`: the dashboard marks them in its live view). The
daemon keeps these as checkpoints (call -> host -> history position) and, to revert, reads
`<scheme>://model/history` to see whether anyone changed the document since.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from cadmcp.host.builtins.adapter import DocumentAdapter, NumberedStack, TouchingStack

CHECKPOINT_META = "io.cadmcp/checkpoint"
MAX_NAMES = 64


def position(adapter: DocumentAdapter) -> dict[str, Any]:
    """The active document, its undo and redo step names (most recent first) and, where the history
    numbers them, its undo steps' numbers (`undoIds`: steps of the same name told apart)."""
    active = next((d for d in adapter.documents() if d["active"]), None)
    history = adapter.history()
    out = {
        "document": (active["path"] or active["title"]) if active else None,
        "undo": history.undo_names()[:MAX_NAMES],
        "redo": history.redo_names()[:MAX_NAMES],
    }
    if isinstance(history, NumberedStack):
        out["undoIds"] = history.undo_ids()[:MAX_NAMES]
    return out


def stamped(
    adapter: DocumentAdapter,
    before: dict[str, Any],
    result: types.CallToolResult,
    saved_from: Mapping[str, list[str]] | None = None,
) -> types.CallToolResult:
    """`result` with the checkpoint of the call that produced it (`before`: the position before it ran;
    `saved_from`: the files each document was saved as before, so a revert knows it by all of them)."""
    try:
        after = position(adapter)
    except Exception:  # a document that cannot say where it stands gets no checkpoint, the run stands
        return result
    changed = after["document"] == before["document"] and after["undo"] != before["undo"]
    mark: dict[str, Any] = {"document": after["document"], "added": int(changed), "undo": after["undo"]}
    if "undoIds" in after:
        mark["undoIds"] = after["undoIds"]
    earlier = (saved_from or {}).get(str(after["document"]))
    if earlier:
        mark["savedFrom"] = earlier
    if changed:
        try:
            stack = adapter.history()
            touched = stack.touched() if isinstance(stack, TouchingStack) else None
        except Exception:  # what the step touched is a help for the eye; the checkpoint stands without
            touched = None
        if touched is not None:
            mark["touched"] = touched.report()
    result.meta = {**(result.meta or {}), CHECKPOINT_META: mark}
    return result
