"""Approvals, checkpoints, revert and undo/redo from the page, through the paths the CLI uses.

This daemon's queue and checkpoints are asked directly (`cadmcp.daemon.policy.control.handle`;
checkpoints are the machine's, so this daemon lists and reverts every daemon's calls); every
other daemon's queue through its door in the runtime directory, as `cadmcp policy` does. What
the page shows of a waiting call is masked like a call-log line.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

import anyio

from cadmcp.daemon.policy import control
from cadmcp.wire.calllog import clip, format_line, shared_log
from cadmcp.wire.masking import mask_text

if TYPE_CHECKING:
    from cadmcp.daemon.hosts import HostDirectory
    from cadmcp.daemon.policy.gate import Gate

DOOR_TIMEOUT = 2.0
OUTCOME_WAIT = 20.0
"""Seconds an Approve waits for the call's outcome to say it on the page (a longer run: in Calls)."""
HISTORY_TIMEOUT = 60.0
ANSWERED_BY = "dashboard"


class Steering:
    """The person's actions of the dashboard, over every daemon of this user."""

    def __init__(self, gate: Gate, directory: HostDirectory) -> None:
        self.gate = gate
        self.directory = directory

    async def _everyone(self, request: dict[str, Any], late: bool = False) -> list[dict[str, Any]]:
        """Every daemon's answer that is ok (with `late`: or says an approval was settled already)."""
        answers = [await control.handle(self.gate, self.directory, request)]
        mine = control.socket_path(self.directory.directory)
        for door in control.doors(self.directory.directory):
            if door == mine:
                continue
            with contextlib.suppress(OSError, TimeoutError, ValueError):
                waits = request.get("wait") if isinstance(request.get("wait"), int | float) else 0
                answers.append(await control.ask(door, request, timeout=DOOR_TIMEOUT + waits))
        return [a for a in answers if a.get("ok") or (late and a.get("late"))]

    async def approvals(self) -> list[dict[str, Any]]:
        """Every waiting confirmation, masked as the call log would, with its preview pictures."""
        out = []
        for answer in await self._everyone({"op": "list"}):
            for item in answer.get("pending") or []:
                call = item.get("call") if isinstance(item.get("call"), dict) else {}
                out.append(
                    {
                        "approvalId": item.get("approvalId"),
                        "daemonPid": answer.get("pid"),
                        "message": mask_text(str(item.get("message") or ""))[:8000],
                        "call": clip(call),
                        "pictures": [p for p in item.get("pictures") or [] if isinstance(p, str)][:2],
                        "secondsLeft": item.get("secondsLeft"),
                        "askedAt": item.get("askedAt"),
                    }
                )
        return sorted(out, key=lambda a: a.get("askedAt") or 0)

    async def answer(self, approval_id: str, answer: str) -> dict[str, Any]:
        if answer not in ("accept", "decline"):
            return {"ok": False, "error": "Answer accept or decline."}
        request = {"op": "answer", "approvalId": approval_id, "answer": answer, "by": ANSWERED_BY}
        if answer == "accept":  # the daemon that asked says how the call went, as to the CLI
            request["wait"] = OUTCOME_WAIT
        answers = await self._everyone(request, late=True)
        return (
            next((a for a in answers if a.get("ok")), None)
            or next(iter(answers), None)
            or {
                "ok": False,
                "error": f"No confirmation {approval_id[:40]!r} is waiting (answered, timed out, or never "
                "asked).",
            }
        )

    async def checkpoints(self, look: bool = True) -> list[dict[str, Any]]:
        """The machine's checkpoints (every daemon keeps them all: this one answers); ``look``: ask
        the hosts whether reverted calls were redone (after calls reached them, not every refresh)."""
        answer = await control.handle(self.gate, self.directory, {"op": "checkpoints", "look": look})
        return list(answer.get("checkpoints") or [])

    async def revert(self, call_id: str, since: bool) -> dict[str, Any]:
        """Revert a call (or it and everything since through the same daemon), from this daemon:
        it sees every daemon's checkpoints and reaches every host of the machine."""
        head = call_id.split("-", 1)[0]
        if not head.isdigit() or len(call_id) > 40:
            return {"ok": False, "error": "Pick a call from the history list (its id looks like 4242-1)."}
        return await control.handle(
            self.gate, self.directory, {"op": "revert", "callId": call_id, "since": since}
        )

    async def history(self, instance_id: str, direction: str) -> dict[str, Any]:
        """Undo (`back`) or redo (`forward`) one step in a host's active document."""
        if direction not in ("back", "forward"):
            return {"ok": False, "error": "direction is back (undo) or forward (redo)."}
        key = next((k for k in self.directory.local_entries() if k.instance_id == instance_id), None)
        link = self.directory.links.get(key) if key is not None else None
        if key is None or link is None:
            return {"ok": False, "error": "That host is not connected any more; reload the page."}
        entry = self.directory.entries[key]
        started = time.perf_counter()
        with anyio.move_on_after(HISTORY_TIMEOUT):
            answer = await link.raw_request(
                "tools/call", {"name": "navigate_history", "arguments": {"direction": direction}}
            )
            text = " ".join(
                str(c.get("text"))
                for c in answer.get("content") or []
                if isinstance(c, dict) and c.get("text")
            )
            ok = not answer.get("isError")
            if ok:
                text = _history_sentence(direction, answer.get("structuredContent")) or text
            fields = {
                "host": f"{entry.host_app}/{entry.version}/{key.pid}",
                "direction": direction,
                "durationMs": round((time.perf_counter() - started) * 1000),
                "message": clip(text, 300),
            }
            with contextlib.suppress(Exception):
                shared_log().write(format_line("dashboard/history", "ok" if ok else "error", fields))
            return {"ok": ok, "message": text[:600], **({} if ok else {"error": text[:600]})}
        return {"ok": False, "error": f"The host did not answer within {HISTORY_TIMEOUT:g} s."}


def _history_sentence(direction: str, done: Any) -> str | None:
    """What an undo or redo did, for the person (the tool's text is the JSON of its answer)."""
    if not isinstance(done, dict) or not isinstance(done.get("navigated"), int):
        return None
    steps, names = done["navigated"], [str(n) for n in done.get("operations") or []]
    if not steps:
        return "Nothing to undo." if direction == "back" else "Nothing to redo."
    verb = "Undid" if direction == "back" else "Redid"
    shown = ", ".join(repr(n[:80]) for n in names[:5])
    if len(names) > 5:
        shown += f" and {len(names) - 5} more"
    return f"{verb} {steps} step{'s' if steps != 1 else ''}" + (f": {shown}." if shown else ".")
