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
MAX_RUNNING = 256
"""Confirmed calls whose outcome the queue keeps for whoever said yes (the oldest go first)."""
MAX_OUTCOME_WAIT = 120.0
"""The longest an answer waits for the outcome of the call it confirmed."""
MAX_ANSWERED = 256
"""Finished confirmations remembered, to tell a late answer what happened (the oldest go first)."""


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
    reports: bool = False
    """Whoever asked says what became of the call (`ApprovalQueue.settle`)."""
    outcome: str | None = None
    """What became of the call once confirmed (`ran`, `failed: ...`, `did not run: ...`)."""
    settled: anyio.Event = field(default_factory=anyio.Event)

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
        self._running: dict[str, Pending] = {}  # confirmed, their outcome not known yet or kept
        self._answered: dict[str, str] = {}  # finished: how, by whom, when (for a late answer)

    def pending(self) -> list[dict[str, Any]]:
        """What waits now, oldest first."""
        return [p.view() for p in sorted(self._pending.values(), key=lambda p: p.asked_at)]

    async def ask(
        self, question: dict[str, Any], timeout: float, reports: bool = False
    ) -> tuple[Answer, str, str]:
        """Wait for a person's answer to `question`: (answer, who answered, the approval id). With
        ``reports``, the caller will `settle` that id with what the call did, for whoever said yes."""
        if len(self._pending) >= MAX_PENDING:
            return "timeout", "queue full", ""
        now = time.time()
        item = Pending(secrets.token_hex(6), question, now, now + timeout, reports=reports)
        self._pending[item.id] = item
        withdrawn = False
        try:
            with anyio.move_on_after(timeout):
                await item.done.wait()
        except BaseException:  # withdrawn (its host went away) as the yes came
            withdrawn = True
            self.settle(item.id, "did not run: it was withdrawn before it could be sent")
            raise
        finally:
            self._pending.pop(item.id, None)
            self._remember(item, withdrawn)
        if item.answer is None:
            return "timeout", "", item.id
        return item.answer, item.answered_by, item.id

    def _remember(self, item: Pending, withdrawn: bool) -> None:
        at = time.strftime("%H:%M:%S", time.localtime())
        if item.answer in ("accept", "decline"):
            said = f"{item.answer}{'ed' if item.answer == 'accept' else 'd'} by {item.answered_by} at {at}"
        elif withdrawn or item.answer == "cancel":
            said = f"withdrawn at {at} (its host or its caller went away): nothing ran"
        else:
            said = f"not answered in time ({at}), which counts as no: nothing ran"
        self._answered[item.id] = said
        while len(self._answered) > MAX_ANSWERED:
            self._answered.pop(next(iter(self._answered)))

    def settle(self, approval_id: str, outcome: str) -> None:
        """Say what became of a confirmed call, to whoever waits on its answer."""
        item = self._running.get(approval_id)
        if item is not None and item.outcome is None:
            item.outcome = outcome
            item.settled.set()

    def reported(self, approval_id: str) -> bool:
        """Whether what became of this confirmed call will be said (`outcome`)."""
        return approval_id in self._running

    async def outcome(self, approval_id: str, timeout: float) -> str | None:
        """The outcome of a confirmed call, waited for up to `timeout` s (None: still running)."""
        item = self._running.get(approval_id)
        if item is None:
            return None
        with anyio.move_on_after(min(timeout, MAX_OUTCOME_WAIT)):
            await item.settled.wait()
        return item.outcome

    def answer(self, approval_id: str, answer: str, by: str = "approval queue") -> dict[str, Any]:
        """Answer one pending confirmation: `accept` runs the call, `decline` refuses it."""
        item = self._pending.get(approval_id)
        if item is None and approval_id in self._answered:
            running = self._running.get(approval_id)
            ran = f"; the call {running.outcome}" if running is not None and running.outcome else ""
            return {
                "ok": False,
                "late": True,
                "error": f"Confirmation {approval_id!r} was settled already: {self._answered[approval_id]}"
                f"{ran}. Your answer changed nothing.",
            }
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
        if answer == "accept" and item.reports:  # from now on the call runs: its outcome is kept
            item.question = {}  # not its pictures
            self._running[item.id] = item
            while len(self._running) > MAX_RUNNING:
                self._running.pop(next(iter(self._running))).settled.set()
        return {"ok": True, "approvalId": approval_id, "answer": answer}
