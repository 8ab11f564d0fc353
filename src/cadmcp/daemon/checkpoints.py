"""Checkpoints of what agents changed (call -> host -> history position), and reverting them.

Every `execute_python_code` result a host stamps with `io.cadmcp/checkpoint` (the document,
whether the run added an undo step, the undo step names after it) becomes a checkpoint here,
numbered in call order. The result itself passes on untouched; the call's id is kept here, in a
`policy/checkpoint` call-log line and in the call's own line (`callId`), and the agent reads it
from `list_checkpoints` (the daemon's own catalog, `cadmcp.daemon.owncatalog`). Reverting one
call, or everything since a call, checks every host it touched first: the document must still be
the active one and its undo steps exactly those after the agent's last call there. Where someone
else changed it since, nothing is undone anywhere and the answer says which host and what
changed. Otherwise each host goes back the agent's steps with its own `navigate_history`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.wire.calllog import clip, format_line, note, shared_log

CHECKPOINT_META = "io.cadmcp/checkpoint"
MAX_CHECKPOINTS = 1000


@dataclass
class Checkpoint:
    """One agent call that changed a document."""

    call_id: str
    host: HostKey
    where: str
    """`DXF 1.4.5 pid 4242` for messages."""
    document: str
    added: int
    undo: tuple[str, ...]
    at: float
    target: str = ""
    """The capability the call ran (`execute_python_code`)."""
    reverted: bool = False

    def view(self) -> dict[str, Any]:
        return {
            "callId": self.call_id,
            "host": self.where,
            "hostInstanceId": self.host.instance_id,
            "target": self.target,
            "document": self.document,
            "steps": self.added,
            "step": self.undo[0] if self.undo else None,
            "at": self.at,
            "reverted": self.reverted,
        }


class Checkpoints:
    """The checkpoints of this daemon's calls, oldest first (bounded; the oldest go first)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Checkpoint] = OrderedDict()
        self._numbers = itertools.count(1)

    def record(self, entry: HostEntry, target: str, result: dict[str, Any]) -> str | None:
        """Keep the checkpoint a host stamped on `result` (a call of `target`); its call id, or None
        when the call changed nothing. `result` is not touched."""
        meta = result.get("_meta")
        mark = meta.get(CHECKPOINT_META) if isinstance(meta, dict) else None
        if not isinstance(mark, dict) or not mark.get("added") or result.get("isError"):
            return None
        call_id = f"{os.getpid()}-{next(self._numbers)}"  # unique among the user's running daemons
        undo = mark.get("undo") if isinstance(mark.get("undo"), list) else []
        checkpoint = self._items[call_id] = Checkpoint(
            call_id,
            entry.key,
            f"{entry.host_app} {entry.version} pid {entry.key.pid}",
            str(mark.get("document") or ""),
            int(mark.get("added") or 0),
            tuple(str(u) for u in undo),
            time.time(),
            target,
        )
        while len(self._items) > MAX_CHECKPOINTS:
            self._items.popitem(last=False)
        with contextlib.suppress(Exception):  # logging never breaks a call
            shared_log().write(format_line("policy/checkpoint", "ok", clip(checkpoint.view())))
            note(callId=call_id)  # and the call's own line names it
        return call_id

    def listing(self) -> list[dict[str, Any]]:
        return [c.view() for c in self._items.values()]

    async def revert(self, directory: HostDirectory, call_id: str, since: bool) -> dict[str, Any]:
        """Undo call `call_id` (with `since`, it and every later one) on every host it touched; the
        outcome is a `policy/revert` line in the call log."""
        answer = await self._revert(directory, call_id, since)
        fields = {"callId": call_id, "since": since, **answer}
        with contextlib.suppress(Exception):  # logging never breaks a revert
            shared_log().write(format_line("policy/revert", "ok" if answer.get("ok") else "refused", fields))
        return answer

    async def _revert(self, directory: HostDirectory, call_id: str, since: bool) -> dict[str, Any]:
        if call_id not in self._items:
            return _refused(
                f"No checkpoint {call_id!r}: list_checkpoints (or `cadmcp policy checkpoints`) lists them."
            )
        order = list(self._items)
        chosen = [self._items[c] for c in order[order.index(call_id) :] if not self._items[c].reverted]
        if not since:
            chosen = [self._items[call_id]] if not self._items[call_id].reverted else []
        if not chosen:
            return _refused(f"{call_id} was reverted already.")
        groups: dict[tuple[HostKey, str], list[Checkpoint]] = {}
        for checkpoint in chosen:
            groups.setdefault((checkpoint.host, checkpoint.document), []).append(checkpoint)
        plans = []
        for (host, document), items in groups.items():
            later = [
                c
                for c in self._items.values()
                if c.host == host and c.document == document and not c.reverted and c.at > items[-1].at
            ]
            if later and not since:
                return _refused(
                    f"{items[0].where}: later agent calls changed {document} after {call_id} "
                    f"({', '.join(c.call_id for c in later)}); revert since {call_id} instead."
                )
            for earlier, later_one in itertools.pairwise(items):
                if not _follows(earlier, later_one):
                    return _refused(
                        f"{items[0].where}: someone changed {document} between {earlier.call_id} and "
                        f"{later_one.call_id}; nothing was undone, so their work stays. Revert since "
                        f"{later_one.call_id} first.",
                        host=items[0].where,
                    )
            problem, link = await _check(directory, host, document, items[-1])
            if problem is not None:
                return _refused(problem, host=items[0].where)
            plans.append((items, link))
        undone = []
        for items, link in plans:
            steps = sum(c.added for c in items)
            answer = await link.raw_request(
                "tools/call", {"name": "navigate_history", "arguments": {"direction": "back", "steps": steps}}
            )
            if answer.get("isError"):
                text = " ".join(
                    str(c.get("text")) for c in answer.get("content") or [] if isinstance(c, dict)
                )
                return _refused(
                    f"{items[0].where} could not go back {steps} step(s): {text[:300]}", partial=undone
                )
            for checkpoint in items:
                checkpoint.reverted = True
            undone.append({"host": items[0].where, "document": items[0].document, "steps": steps})
        return {"ok": True, "reverted": [c.call_id for c in chosen], "undone": undone}


async def _check(
    directory: HostDirectory, host: HostKey, document: str, last: Checkpoint
) -> tuple[str | None, Any]:
    """Whether the document is where the agent's last call left it (else why not)."""
    entry, link = directory.entries.get(host), directory.links.get(host)
    if entry is None or link is None:
        return f"{last.where} is no longer running; its changes cannot be reverted from here.", None
    uri = next((c.target for c in entry.capabilities if c.target.endswith("://model/history")), None)
    if uri is None:
        return f"{last.where} does not say where its history stands, so nothing is reverted.", None
    read = await link.raw_request("resources/read", {"uri": uri})
    try:
        now = json.loads((read.get("contents") or [{}])[0].get("text") or "{}")
    except (ValueError, AttributeError, IndexError):
        now = {}
    if now.get("document") != document:
        return (
            f"{last.where}: {document} is not the active document any more ({now.get('document')!r} is); "
            "activate it, then revert again. Nothing was undone.",
            None,
        )
    if tuple(now.get("undo") or ()) != last.undo:
        return (
            f"{last.where}: someone changed {document} since {last.call_id} (its last steps are now "
            f"{(now.get('undo') or [])[:3]}, after {last.call_id} they were {list(last.undo[:3])}). "
            "Nothing was undone, so their work stays.",
            None,
        )
    return None, link


def _follows(earlier: Checkpoint, later: Checkpoint) -> bool:
    """True when `later` was the very next change after `earlier` (its steps on top of earlier's)."""
    n = later.added
    kept = len(later.undo) - n
    return kept >= 0 and later.undo[n:] == earlier.undo[:kept]


def _refused(message: str, **more: Any) -> dict[str, Any]:
    return {"ok": False, "error": message, **more}
