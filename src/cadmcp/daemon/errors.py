"""Errors the daemon's tools answer with: typed, with a message that says what to do next."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class DaemonError(Exception):
    """An error answered as a tool result with `isError: true` and a structured body."""

    type: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, **self.details}


def validation_error(message: str, **details: Any) -> DaemonError:
    """The caller's arguments are wrong; the message says what to fix."""
    return DaemonError("validation_error", message, details)


def stale(reason: str, message: str, **details: Any) -> DaemonError:
    """The id no longer names a live capability; nothing ran. Search again, then re-invoke."""
    return DaemonError("stale", message, {"reason": reason, "retry": "search_then_reinvoke", **details})


def invocation_failed(message: str, *, execution_started: bool, **details: Any) -> DaemonError:
    """The host failed while handling the call."""
    return DaemonError("invocation_failed", message, {"executionStarted": execution_started, **details})
