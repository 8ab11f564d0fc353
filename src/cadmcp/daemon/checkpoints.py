"""Checkpoints of what agents changed (call -> host -> history position), and reverting them.

Every `execute_python_code` result a host stamps with `io.cadmcp/checkpoint` (the document,
whether the run added an undo step, the undo step names after it) becomes a checkpoint: a
`policy/checkpoint` line in the call log, and the call's own line names it (`callId`, unique among
the machine's running daemons: the daemon's pid and a count). The result itself passes on untouched.

Checkpoints are machine-wide: every daemon of the user writes its lines into the one shared log
folder, and every daemon reads them all back (`LogScan`, only the bytes added since its last
look), so `list_checkpoints` in one daemon lists the calls made through another (a second AI
client), and either can revert them; a `policy/revert` line says which calls went back, for every
daemon alike. A line keeps the undo step names as digests, so comparing a host's history with it
is exact whatever the log masks or clips.

Reverting one call, or everything since a call (the later calls made through the same daemon),
checks every host it touched first: the document must still be the active one and its undo
steps exactly those after the last call reverted there. Where anyone else changed it since (a
person, or an agent through this or another daemon), nothing is undone anywhere and the answer
says which host and what changed. Otherwise each host goes back the steps with its own
`navigate_history`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from cadmcp.daemon.catalog import HostEntry
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.wire.calllog import clip, format_line, note, parse_line, shared_log

CHECKPOINT_META = "io.cadmcp/checkpoint"
CHECKPOINT_LINE = "policy/checkpoint"
REVERT_LINE = "policy/revert"
MAX_CHECKPOINTS = 1000
"""Checkpoints listed and revertable (the machine's most recent)."""
MAX_SAVED_FROM = 8
"""Earlier files of one document a checkpoint keeps."""
MAX_PLANNED = 20
"""Calls named one by one when a person is asked to allow a revert."""
MAX_UNDO_NAMES = 512
"""Undo step names kept per checkpoint (more than any host keeps)."""
_LOG_FILE = re.compile(r"^log_\d+_\d{10}_\d+\.log$")
_WANTED = (f" {CHECKPOINT_LINE} ".encode(), f" {REVERT_LINE} ok ".encode())


def step_digest(name: str) -> str:
    """An undo step name as a checkpoint keeps it (exact, and nothing for the log to mask)."""
    return hashlib.blake2b(name.encode("utf-8", "replace"), digest_size=6).hexdigest()


@dataclass(frozen=True)
class Checkpoint:
    """One agent call that changed a document."""

    call_id: str
    host: str
    """The host's `hostInstanceId`."""
    where: str
    """`DXF 1.4.5 pid 4242` for messages."""
    document: str
    added: int
    undo: tuple[str, ...]
    """Digests (`step_digest`) of the document's undo step names after the call, latest first."""
    step: str | None
    """The call's own undo step name, for people."""
    at: float
    target: str = ""
    """The capability the call ran (`execute_python_code`)."""
    client: str = ""
    """The agent's client as it introduced itself (`claude-code/2.1`), when it did."""
    was: tuple[str, ...] = ()
    """The files the document had been saved as before, latest first (it is the same document)."""
    ids: tuple[int | None, ...] | None = None
    """The numbers of the document's undo steps after the call, latest first, where its host numbers
    them: the same step names with other numbers are other steps (undone, and others of the same
    names made)."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every file the document was known by, its first last."""
        return (self.document, *self.was)

    @property
    def daemon(self) -> int:
        """The pid of the daemon the call went through."""
        return int(self.call_id.split("-")[0])

    @property
    def order(self) -> tuple[float, int, int]:
        return (self.at, self.daemon, int(self.call_id.split("-")[1]))

    def view(self, reverted: bool) -> dict[str, Any]:
        return {
            "callId": self.call_id,
            "host": self.where,
            "hostInstanceId": self.host,
            "target": self.target,
            "client": self.client,
            "document": self.document,
            "steps": self.added,
            "step": self.step,
            "at": self.at,
            "daemonPid": self.daemon,
            "reverted": reverted,
        }

    def line(self) -> str:
        fields = {k: v for k, v in self.view(False).items() if k != "reverted"}
        numbered = {"undoIds": list(self.ids)} if self.ids is not None else {}
        if self.was:
            numbered["savedFrom"] = list(self.was)
        return format_line(CHECKPOINT_LINE, "ok", {**clip(fields), "undo": list(self.undo), **numbered})

    @classmethod
    def from_line(cls, fields: dict[str, Any]) -> Checkpoint | None:
        """The checkpoint a `policy/checkpoint` line holds (None: not one this version reads)."""
        call_id, undo = fields.get("callId"), fields.get("undo")
        if not isinstance(call_id, str) or not re.fullmatch(r"[0-9]{1,10}-[0-9]{1,10}", call_id):
            return None
        if not isinstance(undo, list) or not all(isinstance(u, str) for u in undo):
            return None  # a line of an earlier version, without the step digests
        try:
            at, added = float(fields.get("at") or 0), int(fields.get("steps") or 0)
        except (TypeError, ValueError):
            return None
        step = fields.get("step")
        return cls(
            call_id,
            str(fields.get("hostInstanceId") or ""),
            str(fields.get("host") or ""),
            str(fields.get("document") or ""),
            added,
            tuple(undo),
            step if isinstance(step, str) else None,
            at,
            str(fields.get("target") or ""),
            str(fields.get("client") or ""),
            _files(fields.get("savedFrom")),
            _numbers(fields.get("undoIds")),
        )


def _files(value: Any) -> tuple[str, ...]:
    """File names as a host or a log line gives them (bounded)."""
    if not isinstance(value, list):
        return ()
    return tuple(str(v)[:4096] for v in value[:MAX_SAVED_FROM] if isinstance(v, str))


def _numbers(value: Any) -> tuple[int | None, ...] | None:
    """Undo step numbers as a host or a log line gives them (None: not given, or not numbers)."""
    if not isinstance(value, list):
        return None
    if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in value):
        return None
    return tuple(value[:MAX_UNDO_NAMES])


class LogScan:
    """The `policy/checkpoint` lines and successful `policy/revert` lines of every log file in the
    shared folder, read incrementally (each file is append-only: only what it gained is read).

    Each file keeps its newest `MAX_CHECKPOINTS` lines of each kind: only the machine's newest
    checkpoints are listed, so a file's older ones cannot be among them. A revert older than its
    file's newest `MAX_CHECKPOINTS` is forgotten; its call then lists as not reverted, and a
    second revert of it is refused by the host's history check."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    def lines(self) -> list[dict[str, Any]]:
        try:
            names = [p.name for p in self.folder.iterdir() if _LOG_FILE.match(p.name)]
        except OSError:
            return []
        for gone in self._files.keys() - set(names):
            del self._files[gone]
        out: list[dict[str, Any]] = []
        for name in names:
            offset, found = self._files.get(name, (0, []))
            with contextlib.suppress(OSError):
                offset, found = self._read(self.folder / name, offset, list(found))
            self._files[name] = (offset, found)
            out.extend(found)
        return out

    @staticmethod
    def _read(path: Path, offset: int, found: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
        if path.stat().st_size <= offset:
            return offset, found
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
        complete = data.rfind(b"\n") + 1  # a line being written waits for the next look
        for raw in data[:complete].splitlines():
            if any(w in raw for w in _WANTED):
                with contextlib.suppress(ValueError):
                    found.append(parse_line(raw.decode("utf-8", "replace")))
        return offset + complete, _newest(found)


def _newest(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest `MAX_CHECKPOINTS` checkpoint lines of `lines` (oldest first), then its newest
    `MAX_CHECKPOINTS` revert lines (their readers do not depend on the order between the two)."""
    checkpoints = [line for line in lines if line.get("method") == CHECKPOINT_LINE]
    if len(checkpoints) <= MAX_CHECKPOINTS and len(lines) - len(checkpoints) <= MAX_CHECKPOINTS:
        return lines
    reverts = [line for line in lines if line.get("method") != CHECKPOINT_LINE]
    return checkpoints[-MAX_CHECKPOINTS:] + reverts[-MAX_CHECKPOINTS:]


class Checkpoints:
    """The checkpoints of every daemon of this machine, oldest first (this daemon's own are also
    kept in memory, so a log that cannot be written does not lose them)."""

    def __init__(self, folder: Path | None = None) -> None:
        self._own: dict[str, Checkpoint] = {}
        self._own_reverted: set[str] = set()
        self._redone: set[str] = set()
        """Reverted calls found redone when the hosts' histories were last looked at."""
        self._numbers = itertools.count(1)
        self._folder = folder
        self._scan: LogScan | None = None
        self._reading = threading.Lock()

    def record(self, entry: HostEntry, target: str, result: dict[str, Any], client: str = "") -> str | None:
        """Keep the checkpoint a host stamped on `result` (a call of `target` by `client`); its call
        id, or None when the call changed nothing. `result` is not touched."""
        meta = result.get("_meta")
        mark = meta.get(CHECKPOINT_META) if isinstance(meta, dict) else None
        if not isinstance(mark, dict) or not mark.get("added") or result.get("isError"):
            return None
        call_id = f"{os.getpid()}-{next(self._numbers)}"  # unique among the user's running daemons
        undo = [str(u) for u in mark.get("undo") or [] if isinstance(mark.get("undo"), list)]
        checkpoint = Checkpoint(
            call_id,
            entry.key.instance_id,
            f"{entry.host_app} {entry.version} pid {entry.key.pid}"
            + (f" on the machine {entry.machine!r}" if entry.machine is not None else ""),
            str(mark.get("document") or ""),
            int(mark.get("added") or 0),
            tuple(step_digest(u) for u in undo[:MAX_UNDO_NAMES]),
            undo[0] if undo else None,
            time.time(),
            target,
            client,
            _files(mark.get("savedFrom")),
            _numbers(mark.get("undoIds")),
        )
        self._own[call_id] = checkpoint
        while len(self._own) > MAX_CHECKPOINTS:
            self._own.pop(next(iter(self._own)))
        with contextlib.suppress(Exception):  # logging never breaks a call
            shared_log().write(checkpoint.line())
            note(callId=call_id)  # and the call's own line names it
        return call_id

    async def _state(self) -> tuple[list[Checkpoint], set[str]]:
        """Every checkpoint of the machine (the most recent `MAX_CHECKPOINTS`, in call order) and
        the call ids reverted; the log folder is read off the event loop."""
        lines = await anyio.to_thread.run_sync(self._read_lines)
        found: dict[str, Checkpoint] = {}
        reverted = set(self._own_reverted)
        for line in lines:
            if line.get("method") == CHECKPOINT_LINE:
                checkpoint = Checkpoint.from_line(line)
                if checkpoint is not None:
                    found[checkpoint.call_id] = checkpoint
            elif isinstance(line.get("reverted"), list):
                reverted.update(str(c) for c in line["reverted"])
        found.update(self._own)
        items = sorted(found.values(), key=lambda c: c.order)[-MAX_CHECKPOINTS:]
        return items, reverted

    def _read_lines(self) -> list[dict[str, Any]]:
        with self._reading, contextlib.suppress(Exception):  # unreadable logs leave this daemon's own
            if self._scan is None:
                self._scan = LogScan(self._folder or shared_log().directory)
            return self._scan.lines()
        return []

    async def listing(
        self, directory: HostDirectory | None = None, *, look: bool = True
    ) -> list[dict[str, Any]]:
        """Every checkpoint, oldest first; with `directory`, a reverted call whose steps were
        redone since (its host's history is again as that call left it) is listed as not reverted,
        and each says whether its host still runs (`hostRunning`: only then can it be reverted).
        ``look=False`` asks no host (a page's frequent refresh): the last look's redone calls stand."""
        items, reverted = await self._state()
        if directory is None:
            return [c.view(c.call_id in reverted) for c in items]
        if look:
            self._redone = await _redone(directory, items, reverted)
        reverted -= self._redone
        running = {k.instance_id for k in directory.entries}
        return [{**c.view(c.call_id in reverted), "hostRunning": c.host in running} for c in items]

    async def planned(self, call_id: str, since: bool) -> list[str]:
        """What a revert of `call_id` would undo, one line per call, for the person asked to allow
        it (what the last look found: the hosts are checked when it runs)."""
        items, reverted = await self._state()
        chosen = _chosen(items, reverted - self._redone, call_id, since)
        if isinstance(chosen, str):
            return [f"It would undo nothing: {chosen}"]
        lines = [f"It would undo {len(chosen)} agent call(s), on every host they changed:"]
        for c in chosen[:MAX_PLANNED]:
            when = time.strftime("%H:%M:%S", time.localtime(c.at))
            lines.append(
                f"  {c.call_id} at {when}, {c.where}, {c.document}: {clip(c.step or c.target)} "
                f"({c.added} step(s))"
            )
        if len(chosen) > MAX_PLANNED:
            lines.append(f"  and {len(chosen) - MAX_PLANNED} more")
        return lines

    async def hosts(self, call_id: str, since: bool) -> list[str]:
        """The hosts (`hostInstanceId`) a revert of `call_id` would go back on (what the last look
        found), for the policy of each to apply to it."""
        items, reverted = await self._state()
        chosen = _chosen(items, reverted - self._redone, call_id, since)
        return [] if isinstance(chosen, str) else sorted({c.host for c in chosen})

    async def revert(
        self, directory: HostDirectory, call_id: str, since: bool, save: bool = False
    ) -> dict[str, Any]:
        """Undo call `call_id` (with `since`, it and every later one made through the same daemon)
        on every host it touched; with `save`, save each document whose file still holds the steps
        undone (for a call reverted already: its document, when it stands as the revert left it,
        `savedOnly`). The outcome is a `policy/revert` line in the call log."""
        answer = await self._revert(directory, call_id, since, save)
        if answer.get("ok"):
            self._own_reverted.update(answer["reverted"])
            self._redone.difference_update(answer["reverted"])
        fields = {"callId": call_id, "since": since, **answer}
        with contextlib.suppress(Exception):  # logging never breaks a revert
            shared_log().write(format_line(REVERT_LINE, "ok" if answer.get("ok") else "refused", fields))
        return answer

    async def _revert(
        self, directory: HostDirectory, call_id: str, since: bool, save: bool
    ) -> dict[str, Any]:
        items, reverted = await self._state()
        self._redone = await _redone(directory, items, reverted)
        reverted -= self._redone
        chosen = _chosen(items, reverted, call_id, since)
        if isinstance(chosen, str):
            reverted_one = next((c for c in items if c.call_id == call_id and c.call_id in reverted), None)
            if save and reverted_one is not None:
                return await _save_reverted(directory, reverted_one)
            return _refused(chosen)
        first = chosen[0]
        live = [c for c in items if c.call_id not in reverted]
        groups: dict[tuple[str, str], list[Checkpoint]] = {}  # per host and document (by its first name)
        for checkpoint in chosen:
            groups.setdefault((checkpoint.host, checkpoint.names[-1]), []).append(checkpoint)
        plans = []
        for (host, origin), group in groups.items():
            document = group[-1].document
            later = [
                c for c in live if c.host == host and c.names[-1] == origin and c.order > group[-1].order
            ]
            mine = [c for c in later if c.daemon == first.daemon]
            problem, link, now_at, standing = await _check(directory, host, group, later)
            if problem is not None and mine and not since:  # their steps are on top: revert them too
                return _refused(
                    f"{group[0].where}: later agent calls changed {document} after {call_id} "
                    f"({', '.join(c.call_id for c in mine)}); revert since {call_id} instead."
                )
            if problem is not None:
                return _refused(problem, host=group[0].where)
            for earlier, later_one in itertools.pairwise(standing):  # the calls whose steps are there
                if not _follows(earlier, later_one):
                    return _refused(
                        f"{group[0].where}: someone changed {document} between {earlier.call_id} and "
                        f"{later_one.call_id}; nothing was undone, so their work stays. Revert since "
                        f"{later_one.call_id} first.",
                        host=group[0].where,
                    )
            plans.append((group, link, now_at, standing))
        undone = []
        for group, link, now_at, standing in plans:
            if link is None:  # undone by hand already (navigate_history, the dashboard's Undo)
                undone.append(
                    {
                        "host": group[0].where,
                        "document": group[0].document,
                        "steps": 0,
                        "note": f"{group[0].document} was already back where it was before "
                        f"{group[0].call_id} (its steps were undone by hand): nothing more to undo.",
                    }
                )
                continue
            steps = sum(c.added for c in standing)
            answer = await link.raw_request(
                "tools/call", {"name": "navigate_history", "arguments": {"direction": "back", "steps": steps}}
            )
            if answer.get("isError"):
                text = " ".join(
                    str(c.get("text")) for c in answer.get("content") or [] if isinstance(c, dict)
                )
                return _refused(
                    f"{group[0].where} could not go back {steps} step(s): {text[:300]}", partial=undone
                )
            moved = (answer.get("structuredContent") or {}).get("navigated")
            if isinstance(moved, int) and moved < steps:  # the history lost steps meanwhile
                return _refused(
                    f"{group[0].where} went back only {moved} of the {steps} step(s) of these calls: the "
                    "oldest were no longer on its history. The document is now before the calls whose steps "
                    "were there; set back the rest by hand.",
                    partial=undone,
                )
            went = {
                "host": group[0].where,
                "hostInstanceId": group[0].host,
                "document": group[0].document,
                "steps": steps,
            }
            if now_at != group[0].document:
                went["savedAs"] = now_at
            if len(standing) < len(group):
                by_hand = [c.call_id for c in group if c not in standing]
                went["undoneByHand"] = by_hand
                went["note"] = f"The steps of {', '.join(by_hand)} were undone by hand already."
            held = (answer.get("structuredContent") or {}).get("savedFileHolds")
            if isinstance(held, list) and held:
                went["savedFileHolds"] = [str(h) for h in held[:MAX_UNDO_NAMES]]
                went["note"] = (went.get("note", "") + " ").lstrip() + (
                    f"The file of {now_at} on disk still holds {len(held)} step(s) now undone "
                    f"({', '.join(repr(h) for h in went['savedFileHolds'][:3])}); save the document "
                    "(the agent's save_document) to write it as it is now."
                )
                if save:
                    await _save(link, went)
            undone.append(went)
        return {"ok": True, "reverted": [c.call_id for c in chosen], "undone": undone}


async def _save_reverted(directory: HostDirectory, checkpoint: Checkpoint) -> dict[str, Any]:
    """Save the document of a call reverted already (`revert --save` after a revert without it),
    when it still stands as the revert left it: as before the call, nothing changed since."""
    found = await _history(directory, checkpoint.host)
    document = checkpoint.document
    if found == "gone":
        return _refused(f"{checkpoint.where} is no longer running; {document} cannot be saved from here.")
    if isinstance(found, str):
        return _refused(f"{checkpoint.where} does not say where its history stands, so nothing is saved.")
    link, now = found
    names = [str(u) for u in now.get("undo") or []]
    digests = tuple(step_digest(u) for u in names[:MAX_UNDO_NAMES])
    before = checkpoint.undo[checkpoint.added :]
    if now.get("document") not in checkpoint.names or (
        len(checkpoint.undo) < MAX_UNDO_NAMES and digests != before
    ):
        return _refused(
            f"{checkpoint.call_id} was reverted already, and {document} changed since (its active document "
            f"is {now.get('document')!r}, its last steps {names[:3]}): nothing was saved. Save it as it is "
            "now with the agent's save_document, or in the application.",
            host=checkpoint.where,
        )
    went: dict[str, Any] = {
        "host": checkpoint.where,
        "hostInstanceId": checkpoint.host,
        "document": document,
        "steps": 0,
    }
    await _save(link, went)
    if "saveError" in went:
        return _refused(f"{checkpoint.where}: {went['saveError']}", host=checkpoint.where)
    went["note"] = f"{checkpoint.call_id} was reverted already; {went['note']}"
    return {"ok": True, "reverted": [], "savedOnly": True, "undone": [went]}


def _standing(calls: list[Checkpoint]) -> list[Checkpoint] | None:
    """Of `calls` (one document's, oldest first; the last one's steps on top of its undo stack) the
    ones whose steps are still on the stack, oldest first: going down from the top, the next is the
    call whose stack after it is the stack before the one above; a call undone by hand (the person's
    Undo, then another call) is passed over. None when the stack under them holds steps of no call
    of `calls` (someone's own change between two of them)."""
    chain = [calls[-1]]
    below = calls[-1].undo[calls[-1].added :]
    for checkpoint in reversed(calls[:-1]):
        if _same_stack(checkpoint.undo, below):
            chain.append(checkpoint)
            below = checkpoint.undo[checkpoint.added :]
    first = calls[0]
    return chain[::-1] if _same_stack(below, first.undo[first.added :]) else None


def _same_stack(one: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """Whether two undo stacks (step digests, latest first) are the same, as far as both are known:
    stacks that long may be clipped to their latest `MAX_UNDO_NAMES` names (and less the steps of a
    call taken off the top), so they are compared on what both hold."""
    if len(one) == len(other):
        return one == other
    n = min(len(one), len(other))
    return max(len(one), len(other)) >= MAX_UNDO_NAMES // 2 and one[:n] == other[:n]


def _fell_off(standing: list[Checkpoint], kept: int) -> str:
    """Why the steps of `standing` (oldest first) cannot all be undone when the document's history
    holds `kept` steps (the application keeps only so many), or ""."""
    steps = sum(c.added for c in standing)
    if steps <= kept:
        return ""
    whole, room = [], kept
    for checkpoint in reversed(standing):  # the latest calls' steps are the ones still there
        if checkpoint.added > room:
            break
        whole.append(checkpoint)
        room -= checkpoint.added
    lost = [c.call_id for c in standing[: len(standing) - len(whole)]]
    named = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
    by_hand = "set the values back by hand (or reopen the file without saving)"
    instead = (
        f"Revert since {whole[-1].call_id} to undo the calls still there, or {by_hand}" if whole else by_hand
    )
    return (
        f"keeps {kept} undo step(s), fewer than the {steps} of these calls: the steps of {named} fell off "
        f"its history, so they cannot be undone. Nothing was undone. {instead[0].upper()}{instead[1:]}."
    )


def _chosen(items: list[Checkpoint], reverted: set[str], call_id: str, since: bool) -> list[Checkpoint] | str:
    """The calls a revert of `call_id` (with `since`: and the later ones through the same daemon)
    undoes, oldest first, or why there are none."""
    by_id = {c.call_id: c for c in items}
    if call_id not in by_id:
        return f"No checkpoint {call_id!r}: list_checkpoints (or `cadmcp policy checkpoints`) lists them."
    first = by_id[call_id]
    if not since:
        return [first] if first.call_id not in reverted else f"{call_id} was reverted already."
    live = [c for c in items if c.call_id not in reverted]
    chosen = [c for c in live if c.order >= first.order and c.daemon == first.daemon]
    return chosen or f"{call_id} was reverted already."


async def _history(directory: HostDirectory, host: str) -> tuple[Any, dict[str, Any]] | str:
    """The host's link and where its active document's history stands (`document`, `undo` names,
    latest first), or why that cannot be known ("gone" when the host is not connected)."""
    key = next((k for k in directory.entries if k.instance_id == host), None)
    entry = directory.entries.get(key) if key is not None else None
    link = directory.links.get(key) if key is not None else None
    if entry is None or link is None:
        return "gone"
    uri = next((c.target for c in entry.capabilities if c.target.endswith("://model/history")), None)
    if uri is None:
        return "silent"
    read = await link.raw_request("resources/read", {"uri": uri})
    try:
        now = json.loads((read.get("contents") or [{}])[0].get("text") or "{}")
    except (ValueError, AttributeError, IndexError):
        now = {}
    return link, now if isinstance(now, dict) else {}


async def _redone(directory: HostDirectory, items: list[Checkpoint], reverted: set[str]) -> set[str]:
    """The reverted calls whose own steps are on their document's undo stack again (redone since)."""
    groups: dict[tuple[str, str], list[Checkpoint]] = {}
    for checkpoint in items:
        if checkpoint.call_id in reverted and checkpoint.undo:
            groups.setdefault((checkpoint.host, checkpoint.document), []).append(checkpoint)
    back: set[str] = set()
    for (host, document), group in groups.items():
        with contextlib.suppress(Exception):  # a host that cannot say leaves its marks as they are
            found = await _history(directory, host)
            if isinstance(found, str) or found[1].get("document") != document:
                continue
            names = [str(u) for u in found[1].get("undo") or []]
            now = tuple(step_digest(u) for u in names[:MAX_UNDO_NAMES])
            ids = _numbers(found[1].get("undoIds"))
            back.update(c.call_id for c in group if _on_stack(now, c) and _numbered_alike(ids, c))
    return back


def _on_stack(now: tuple[str, ...], checkpoint: Checkpoint) -> bool:
    """Whether the undo stack `now` ends as the checkpoint's call left it (any later steps on top):
    the whole stack after the call, not a part of it, so steps of the same name shifted down by a
    revert are not taken for the call's own."""
    after = checkpoint.undo
    return len(now) >= len(after) and now[len(now) - len(after) :] == after


def _numbered_alike(now: tuple[int | None, ...] | None, checkpoint: Checkpoint) -> bool:
    """Whether the undo stack's step numbers `now` end as the call left them, where both are known:
    the same code run again makes steps of the same names, which are other steps."""
    after = checkpoint.ids
    if now is None or after is None:
        return True
    return len(now) >= len(after) and now[len(now) - len(after) :] == after


async def _check(
    directory: HostDirectory,
    host: str,
    group: list[Checkpoint],
    later: list[Checkpoint],
) -> tuple[str | None, Any, str, list[Checkpoint]]:
    """Whether the document is where the calls of `group` (one document's, oldest first) left it,
    else why not (`later`: the calls made there since, through any daemon, to name the one whose
    change is in the way); the host's link; the document's file now (saved as another file since, it
    is followed there); and the calls of `group` whose steps are still on its undo stack (the later
    ones were undone by hand: navigate_history, the dashboard's Undo). None of them: no link."""
    first, last = group[0], group[-1]
    document = last.document
    known = {name for c in group for name in c.names}
    found = await _history(directory, host)
    if found == "gone":
        gone = f"{last.where} is no longer running; its changes cannot be reverted from here."
        return gone, None, document, []
    if isinstance(found, str):
        silent = f"{last.where} does not say where its history stands, so nothing is reverted."
        return silent, None, document, []
    link, now = found
    earlier = now.get("savedFrom") if isinstance(now.get("savedFrom"), list) else []
    if now.get("document") not in known and not known & set(map(str, earlier)):  # saved as: the same
        renamed = now.get("savedAs") if isinstance(now.get("savedAs"), dict) else {}
        current = renamed.get(document)
        named = f"{document} (saved as {current} since)" if current else document
        return (
            f"{last.where}: {named} is not the active document any more ({now.get('document')!r} is); "
            f"activate {current or 'it'}, then revert again. Nothing was undone.",
            None,
            document,
            [],
        )
    names = [str(u) for u in now.get("undo") or []]
    digests = tuple(step_digest(u) for u in names[:MAX_UNDO_NAMES])
    ids = _numbers(now.get("undoIds"))
    at = str(now.get("document") or document)
    kept = now.get("undoCount")  # how many steps the history holds (`undo` names the latest only)
    for n in range(len(group), 0, -1):  # the latest call whose steps are on top (later ones undone)
        if digests == group[n - 1].undo and (ids is None or group[n - 1].ids in (None, ids)):
            # the calls below it whose steps are there too (one undone by hand is not, nor counted);
            # steps of no call among them under it: the pairwise check names who changed it between
            standing = _standing(group[:n]) or group[:n]
            if isinstance(kept, int) and not isinstance(kept, bool) and (short := _fell_off(standing, kept)):
                return f"{last.where}: {document} {short}", None, document, []
            return None, link, at, standing
    if len(first.undo) < MAX_UNDO_NAMES and digests == first.undo[first.added :]:
        return None, None, at, []  # exactly as before the first call: undone by hand
    if digests == last.undo:
        return (
            f"{last.where}: someone changed {document} since {last.call_id}: its last steps have the "
            f"names they had then ({names[:3]}) but are other steps (undone, and others of the same "
            "names made). Nothing was undone, so their work stays.",
            None,
            document,
            [],
        )
    in_way = next((c for c in reversed(later) if c.undo == digests), None)
    whose = (
        f" by call {in_way.call_id} through another daemon (pid {in_way.daemon}), another client's; "
        f"revert {in_way.call_id} first, then this one"
        if in_way is not None and in_way.daemon != last.daemon
        else ""
    )
    return (
        f"{last.where}: someone changed {document} since {last.call_id}{whose} (its last steps are now "
        f"{names[:3]}, after {last.call_id} its last step was {last.step!r}). "
        "Nothing was undone, so their work stays.",
        None,
        document,
        [],
    )


async def _save(link: Any, went: dict[str, Any]) -> None:
    """Save the document a revert just went back on (the person asked for it), saying how it went."""
    answer = await link.raw_request("tools/call", {"name": "save_document", "arguments": {}})
    text = " ".join(str(c.get("text")) for c in answer.get("content") or [] if isinstance(c, dict))
    if answer.get("isError"):
        went["saveError"] = f"Not saved: {text[:300]}"
        return
    said = (answer.get("structuredContent") or {}).get("message") or text
    went.pop("savedFileHolds", None)
    went["saved"] = True
    went["note"] = f"Saved: {str(said)[:300]}"


def _follows(earlier: Checkpoint, later: Checkpoint) -> bool:
    """True when `later` was the very next change after `earlier` (its steps on top of earlier's)."""
    n = later.added
    kept = len(later.undo) - n
    return kept >= 0 and later.undo[n:] == earlier.undo[:kept]


def _refused(message: str, **more: Any) -> dict[str, Any]:
    return {"ok": False, "error": message, **more}
