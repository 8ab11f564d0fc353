"""The timeline of calls, read from the call logs every daemon and host of this user writes.

The log folder is followed by polling file sizes (a few `stat`s a quarter second); new
complete lines are parsed (`cadmcp.wire.calllog.parse_line`) and kept in a bounded ring.
Only what the log holds is shown, and the log masks secrets and leaves binary content out,
so the dashboard can show no more than it.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadmcp.wire.calllog import parse_line
from cadmcp.wire.masking import mask_secrets

KEEP_CALLS = 1000
"""Calls kept in memory for the page (the oldest go first)."""
FIRST_READ_BYTES = 256 * 1024
"""Of a log file seen for the first time, only its end is read."""
READ_BYTES = 1024 * 1024
"""Read at most this much of one file per poll (a burst is caught up over a few polls)."""
RECENT_FILE_SECONDS = 2 * 3600.0
SHOWN_METHODS = frozenset(
    {"tools/call", "resources/read", "policy/decision", "policy/revert", "dashboard/history"}
)
_FILE_RE = re.compile(r"^log_(\d+)_\d{10}_\d+\.log$")
CHECKPOINT_META = "io.cadmcp/checkpoint"
MAX_TOUCHED_IDS = 200


@dataclass
class Call:
    """One line of a call log, as the page shows it."""

    id: int
    pid: int
    line: dict[str, Any]
    at: float = field(default_factory=time.time)

    def summary(self, host_pids: set[int]) -> dict[str, Any]:
        line = self.line
        result = line.get("result") if isinstance(line.get("result"), dict) else {}
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        mark = meta.get(CHECKPOINT_META) if isinstance(meta.get(CHECKPOINT_META), dict) else {}
        images = [
            {"mimeType": c.get("mimeType"), "length": c.get("length")}
            for c in result.get("content") or []
            if isinstance(c, dict) and c.get("type") == "image"
        ]
        return {
            "id": self.id,
            "pid": self.pid,
            "source": "host" if self.pid in host_pids else "daemon",
            "time": line.get("time"),
            "method": line.get("method"),
            "outcome": line.get("outcome"),
            "target": line.get("target"),
            "host": line.get("host"),
            "hostTarget": line.get("hostTarget"),
            "machine": line.get("machine"),
            "document": line.get("document") or mark.get("document"),
            "client": line.get("client") or _remote_caller(line),
            "callerMachine": line.get("callerMachine"),  # a call another machine sent through the gateway
            "durationMs": line.get("durationMs"),
            "undoStep": (mark.get("undo") or [None])[0] if mark.get("added") else None,
            "callId": line.get("callId"),  # the checkpoint the call made (`cadmcp.daemon.checkpoints`)
            "images": images,
            "touched": self.touched(),
            "imagesKey": line.get("images") if isinstance(line.get("images"), str) else None,
            # the daemon's recent pictures of this answer (`cadmcp.daemon.recentimages`), while kept
        }

    def touched(self) -> dict[str, Any] | None:
        """What the undo step this call added created, modified and deleted, as its host reported it
        (`touched` of the checkpoint stamp: ids by kind); None when it added none or the host cannot say."""
        result = self.line.get("result") if isinstance(self.line.get("result"), dict) else {}
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        mark = meta.get(CHECKPOINT_META) if isinstance(meta.get(CHECKPOINT_META), dict) else {}
        touched = mark.get("touched")
        if not mark.get("added") or not isinstance(touched, dict):
            return None
        out = {}
        for kind in ("created", "modified", "deleted"):
            part = touched.get(kind) if isinstance(touched.get(kind), dict) else {}
            ids = part.get("ids") if isinstance(part.get("ids"), list) else []
            count = part.get("count")
            out[kind] = {
                "count": count if isinstance(count, int) else len(ids),
                "ids": [str(i)[:80] for i in ids[:MAX_TOUCHED_IDS]],
            }
        return out

    def whole(self, host_pids: set[int]) -> dict[str, Any]:
        return {**self.summary(host_pids), "line": mask_secrets(self.line)}


class Timeline:
    """Follows the log folder; `poll` returns the calls that appeared since the last poll."""

    def __init__(self, folder: Path, keep: int = KEEP_CALLS) -> None:
        self.folder = folder
        self.calls: deque[Call] = deque(maxlen=keep)
        self._offsets: dict[Path, int] = {}
        self._rest: dict[Path, bytes] = {}
        self._ids = itertools.count(1)

    def poll(self) -> list[Call]:
        """Read what the logs gained; every new call is kept and returned, oldest first."""
        new: list[Call] = []
        now = time.time()
        try:
            names = [p for p in self.folder.iterdir() if _FILE_RE.match(p.name)]
        except OSError:
            return new
        for path in sorted(names, key=lambda p: p.stat().st_mtime if p.exists() else 0):
            with contextlib.suppress(OSError):
                size = path.stat().st_size
                if path not in self._offsets:
                    if path.stat().st_mtime < now - RECENT_FILE_SECONDS:
                        self._offsets[path] = size
                        continue
                    self._offsets[path] = max(0, size - FIRST_READ_BYTES)
                    self._rest[path] = (
                        b"" if self._offsets[path] == 0 else b"\0"
                    )  # \0: drop partial first line
                new.extend(self._read(path, size))
        for gone in [p for p in self._offsets if p not in names]:
            self._offsets.pop(gone, None)
            self._rest.pop(gone, None)
        new.sort(key=lambda call: str(call.line.get("time") or ""))  # files interleave: by the lines' time
        for call in new:
            call.id = next(self._ids)
        self.calls.extend(new)
        return new

    def _read(self, path: Path, size: int) -> list[Call]:
        offset = self._offsets[path]
        if size <= offset:
            return []
        with path.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read(min(READ_BYTES, size - offset))
        self._offsets[path] = offset + len(chunk)
        data = self._rest.get(path, b"") + chunk
        *lines, rest = data.split(b"\n")
        if lines and data.startswith(b"\0"):
            lines = lines[1:]  # the partial line where reading started
        self._rest[path] = rest
        match = _FILE_RE.match(path.name)
        pid = int(match.group(1)) if match else 0
        out = []
        for raw in lines:
            parts = raw.split(b" ", 3)
            if len(parts) < 3 or parts[1].decode(errors="replace") not in SHOWN_METHODS:
                continue
            try:
                line = parse_line(raw.decode("utf-8", errors="replace"))
            except (ValueError, IndexError):
                continue
            out.append(Call(0, pid, line))  # numbered once the poll has put its calls in order
        return out

    def find(self, call_id: int) -> Call | None:
        return next((c for c in self.calls if c.id == call_id), None)

    def listing(
        self,
        host_pids: set[int],
        *,
        host: str | None = None,
        outcome: str | None = None,
        sides: str = "daemon",
        limit: int = 200,
        keep: Callable[[Call], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first, filtered by host (`DXF/1.4.5/4242` or a pid), outcome, and side."""
        out = []
        for call in reversed(self.calls):
            item = call.summary(host_pids)
            if sides != "all" and item["source"] != sides:
                continue
            if outcome and item["outcome"] != outcome:
                continue
            if host and host not in (str(item["host"] or ""), str(item["pid"])):
                continue
            if keep is not None and not keep(call):
                continue
            out.append(item)
            if len(out) >= limit:
                break
        return out


def _remote_caller(line: dict[str, Any]) -> str | None:
    """Who sent a call that came through the gateway: its client, on which machine."""
    machine = line.get("callerMachine")
    if not isinstance(machine, str) or not machine:
        return None
    caller = line.get("caller")
    return f"{caller} on {machine}" if isinstance(caller, str) and caller else f"a client on {machine}"
