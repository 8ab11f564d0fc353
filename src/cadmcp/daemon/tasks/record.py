"""One task as the daemon keeps it, and its wire shapes in both protocol eras.

2026-07-28 (the `io.modelcontextprotocol/tasks` extension): a flat `Task` (`CreateTaskResult`
with `resultType: "task"`), and the `DetailedTask` of `tasks/get` and status notifications with
the result, error or input requests inlined. The lifetime and poll hint are sent in both
spellings the extension has used (`ttlMs`/`pollIntervalMs`, and SEP-2663's `ttlSeconds`/
`pollIntervalMilliseconds`) so clients of either draft read them.

2025-11-25 (experimental core tasks): `Task` with `ttl`/`pollInterval` in milliseconds,
wrapped as `{"task": ...}` on creation; the result comes from `tasks/result`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio

from cadmcp.daemon.tasks.owner import Owner

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
Era = Literal["extension", "legacy"]

TASK_META = "io.cadmcp/task"
"""`_meta` key on task objects: `{"executionStarted": bool}` (whether the call reached a host)."""
IMMEDIATE_RESPONSE_META = "io.modelcontextprotocol/model-immediate-response"


def iso(moment: float) -> str:
    """A wall-clock time as ISO 8601 UTC with milliseconds."""
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(eq=False)
class InputRound:
    """One round of a host's input requests while a task waits for the client's answers."""

    requests: dict[str, Any]
    """Outstanding requests under keys unique over the task's life (what clients see)."""
    host_keys: dict[str, str]
    """Client-visible key -> the host's own key."""
    responses: dict[str, Any] = field(default_factory=dict)
    """Answers so far, under the host's keys."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    failure: BaseException | None = None
    driven: bool = False
    """A 2025-11-25 `tasks/result` is asking the client for these answers right now."""

    def offer(self, responses: dict[str, Any]) -> None:
        """Take answers for outstanding keys; other keys are ignored. Complete once all are in."""
        for key, value in responses.items():
            if key in self.requests and self.host_keys[key] not in self.responses:
                self.responses[self.host_keys[key]] = value
        if len(self.responses) == len(self.requests):
            self.answered.set()

    def fail(self, error: BaseException) -> None:
        self.failure = error
        self.answered.set()


@dataclass(eq=False)
class TaskRecord:
    """A task: its identity, owner, status and outcome."""

    task_id: str
    owner: Owner
    era: Era
    label: str
    ttl: float
    poll_ms: int
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    expires_at: float = 0.0
    """Monotonic time after which the store forgets the task (or stops it, if still running)."""
    status: Status = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    execution_started: bool = False
    round: InputRound | None = None
    used_keys: set[str] = field(default_factory=set)
    result_bytes: int = 0
    changed: anyio.Event = field(default_factory=anyio.Event)
    """Set (and replaced) on every change: grab it, check the state, then wait on it."""

    def __post_init__(self) -> None:
        self.updated = self.updated or self.created
        self.expires_at = self.expires_at or time.monotonic() + self.ttl

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def touch(self) -> None:
        """Record a change: update the timestamp and wake whoever waits on `changed`."""
        self.updated = time.time()
        changed, self.changed = self.changed, anyio.Event()
        changed.set()

    def open_round(self, requests: dict[str, Any]) -> InputRound:
        """Start an input round; keys the task used before get a suffix, so each key names one request."""
        visible: dict[str, Any] = {}
        host_keys: dict[str, str] = {}
        for host_key, request in requests.items():
            key, n = str(host_key), 1
            while key in self.used_keys:
                n += 1
                key = f"{host_key}#{n}"
            self.used_keys.add(key)
            visible[key] = request
            host_keys[key] = str(host_key)
        self.round = InputRound(visible, host_keys)
        return self.round

    # -- wire shapes --------------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return {TASK_META: {"executionStarted": self.execution_started}}

    def flat(self) -> dict[str, Any]:
        """The extension's `Task` (what `CreateTaskResult` carries)."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso(self.created),
            "lastUpdatedAt": iso(self.updated),
            "ttlMs": round(self.ttl * 1000),
            "ttlSeconds": round(self.ttl),
            "pollIntervalMs": self.poll_ms,
            "pollIntervalMilliseconds": self.poll_ms,
            "_meta": self._meta(),
        }
        if self.status_message:
            task["statusMessage"] = self.status_message
        return task

    def created_result(self) -> dict[str, Any]:
        """The answer to the call that became this task, in its era's shape."""
        if self.era == "legacy":
            return {
                "task": self.legacy(),
                "_meta": {
                    IMMEDIATE_RESPONSE_META: f"{self.label} continues as task {self.task_id}; its result "
                    "comes with tasks/result."
                },
            }
        return {"resultType": "task", **self.flat()}

    def detailed(self) -> dict[str, Any]:
        """The extension's `DetailedTask`: the flat task plus its result, error or input requests."""
        task = self.flat()
        if self.status == "completed" and self.result is not None:
            task["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            task["error"] = self.error
        elif self.status == "input_required" and self.round is not None:
            task["inputRequests"] = self.round.requests
        return task

    def legacy(self) -> dict[str, Any]:
        """The 2025-11-25 `Task`."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso(self.created),
            "lastUpdatedAt": iso(self.updated),
            "ttl": round(self.ttl * 1000),
            "pollInterval": self.poll_ms,
            "_meta": self._meta(),
        }
        if self.status_message:
            task["statusMessage"] = self.status_message
        return task
