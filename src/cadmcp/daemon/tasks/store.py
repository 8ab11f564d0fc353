"""The bounded task store: tasks by id, each reachable only by its owner, kept for a TTL.

Bounds: at most `max_tasks` tasks and `result_bytes` of finished results at once. Making room
drops the oldest finished tasks; when every kept task is still running, no new task is made
(the call then simply goes on as a normal request). Ids of tasks dropped lately are
remembered (bounded) so their owner is told "expired" rather than "not found".
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from cadmcp.daemon.tasks.owner import Owner
from cadmcp.daemon.tasks.record import Era, TaskRecord
from cadmcp.daemon.tasks.settings import TaskSettings
from cadmcp.wire.jsonwire import dumps

MAX_TASK_ID_CHARS = 64
EXPIRED_REMEMBERED = 10_000


class TaskNotFound(LookupError):
    """No task with this id belongs to the caller (`expired`: it did, and was dropped)."""

    def __init__(self, expired: bool) -> None:
        super().__init__("expired" if expired else "not found")
        self.expired = expired


def result_size(result: dict[str, Any] | None) -> int:
    """Roughly how many bytes a stored result holds (text, base64 data, structured content)."""
    if not result:
        return 0
    size = 0
    for item in result.get("content") or []:
        if isinstance(item, dict):
            inner = item.get("resource") if isinstance(item.get("resource"), dict) else item
            for key in ("text", "data", "blob"):
                value = inner.get(key)
                if isinstance(value, str):
                    size += len(value)
    if result.get("structuredContent") is not None:
        size += len(dumps(result["structuredContent"]))
    return size + 256


class TaskStore:
    """Tasks by id, bounded in number and in result bytes."""

    def __init__(self, settings: TaskSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._tasks: dict[str, TaskRecord] = {}  # creation order
        self._expired: OrderedDict[str, Owner] = OrderedDict()
        self.result_bytes = 0

    def __len__(self) -> int:
        return len(self._tasks)

    def create(self, owner: Owner, era: Era, label: str, ttl: float | None = None) -> TaskRecord | None:
        """A new working task, or None when the store is full of running tasks."""
        if len(self._tasks) >= self.settings.max_tasks and not self._drop_oldest_finished():
            return None
        ttl = min(ttl, self.settings.ttl) if ttl is not None else self.settings.ttl
        record = TaskRecord(
            task_id=secrets.token_urlsafe(24),
            owner=owner,
            era=era,
            label=label,
            ttl=ttl,
            poll_ms=self.settings.poll_ms,
            expires_at=self.clock() + ttl,
        )
        self._tasks[record.task_id] = record
        return record

    def lookup(self, owner: Owner, task_id: Any, era: Era) -> TaskRecord:
        """The caller's task with this id; `TaskNotFound` for any other (unknown, someone else's)."""
        if not isinstance(task_id, str) or len(task_id) > MAX_TASK_ID_CHARS:
            raise TaskNotFound(expired=False)
        record = self._tasks.get(task_id)
        if record is None or record.owner != owner or record.era != era:
            raise TaskNotFound(expired=record is None and self._expired.get(task_id) == owner)
        return record

    def owned(self, owner: Owner, era: Era) -> list[TaskRecord]:
        """The caller's tasks, newest first."""
        return [r for r in reversed(self._tasks.values()) if r.owner == owner and r.era == era]

    def finished(self, record: TaskRecord) -> None:
        """Account for a task's stored result, dropping the oldest finished tasks past the budget."""
        record.result_bytes = result_size(record.result)
        self.result_bytes += record.result_bytes
        while self.result_bytes > self.settings.result_bytes:
            if not self._drop_oldest_finished(keep=record):
                break

    def due(self) -> list[TaskRecord]:
        """Tasks whose time is up."""
        now = self.clock()
        return [r for r in self._tasks.values() if r.expires_at <= now]

    def forget(self, record: TaskRecord) -> None:
        """Drop a task; its owner is told it expired."""
        if self._tasks.pop(record.task_id, None) is None:
            return
        self.result_bytes -= record.result_bytes
        self._expired[record.task_id] = record.owner
        while len(self._expired) > EXPIRED_REMEMBERED:
            self._expired.popitem(last=False)

    def _drop_oldest_finished(self, keep: TaskRecord | None = None) -> bool:
        for record in self._tasks.values():
            if record.terminal and record is not keep:
                self.forget(record)
                return True
        return False
