"""The approval queue: confirmations waiting for a person who is not behind the client.

A call whose client cannot ask its user waits here until someone answers it (the CLI's
`cadmcp policy approvals` / `cadmcp policy answer`, and the dashboard) or its time runs
out, which counts as no. The queue lives in the daemon's memory; nothing is written to disk.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

Answer = Literal["accept", "decline", "cancel", "timeout"]
MAX_PENDING = 256
"""Confirmations waiting at once; past it a new one is a no at once (nothing runs)."""


@dataclass
class Pending:
    """One confirmation waiting for an answer."""

    id: str
    question: dict[str, Any]
    """`message` (what will run, where, with which arguments) and the structured `call`."""
    asked_at: float
    deadline: float
    answer: Answer | None = None
    answered_by: str = ""
    done: anyio.Event = field(default_factory=anyio.Event)

    def view(self) -> dict[str, Any]:
        return {
            "approvalId": self.id,
            **self.question,
            "askedAt": self.asked_at,
            "secondsLeft": max(0, round(self.deadline - time.time())),
        }


class ApprovalQueue:
    """Pending confirmations by id; `ask` waits for `answer` (or the deadline)."""

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}

    def pending(self) -> list[dict[str, Any]]:
        """What waits now, oldest first."""
        return [p.view() for p in sorted(self._pending.values(), key=lambda p: p.asked_at)]

    async def ask(self, question: dict[str, Any], timeout: float) -> tuple[Answer, str]:
        """Wait for a person's answer to `question`: (answer, who answered)."""
        if len(self._pending) >= MAX_PENDING:
            return "timeout", "queue full"
        now = time.time()
        item = Pending(secrets.token_hex(6), question, now, now + timeout)
        self._pending[item.id] = item
        try:
            with anyio.move_on_after(timeout):
                await item.done.wait()
        finally:
            self._pending.pop(item.id, None)
        if item.answer is None:
            return "timeout", ""
        return item.answer, item.answered_by

    def answer(self, approval_id: str, answer: str, by: str = "approval queue") -> dict[str, Any]:
        """Answer one pending confirmation: `accept` runs the call, `decline` refuses it."""
        item = self._pending.get(approval_id)
        if item is None:
            return {
                "ok": False,
                "error": f"No confirmation {approval_id!r} is waiting (answered, timed out, or never "
                "asked). List them with `cadmcp policy approvals`.",
            }
        if answer not in ("accept", "decline"):
            return {"ok": False, "error": "Answer accept or decline."}
        item.answer, item.answered_by = answer, by[:120]  # type: ignore[assignment]
        item.done.set()
        return {"ok": True, "approvalId": approval_id, "answer": answer}
