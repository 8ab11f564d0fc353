"""`Gate`: the policy applied to a call, the question put to the person, and the audit trail.

The invoking path asks the gate before anything reaches a host: `decide` answers the
decision (and raises `policy_denied` for a deny); for a confirm, `ask` puts the question
to whoever can answer it (the client through elicitation, a task's channel, the approval
queue) and raises `not_confirmed` unless the answer is yes within the set time. Every
decision leaves one `policy/decision` line in the call log (arguments masked as in any line).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from cadmcp.daemon.catalog import Capability, HostEntry
from cadmcp.daemon.checkpoints import Checkpoints
from cadmcp.daemon.policy.approvals import ApprovalQueue
from cadmcp.daemon.policy.engine import Policy, subject_for
from cadmcp.daemon.policy.envelopes import denied, not_confirmed, where
from cadmcp.daemon.policy.rules import Decision, Subject
from cadmcp.daemon.policy.watch import PolicyFile
from cadmcp.daemon.screening import flag, visible
from cadmcp.wire.calllog import clip, format_line, shared_log, timestamp
from cadmcp.wire.jsonwire import dumps

APPROVAL_KEY = "io.cadmcp/approval"
"""The key of the daemon's own confirmation among a round's `inputRequests`."""
MAX_SHOWN_CODE = 6000
MAX_SHOWN_ARGUMENTS = 2000
MAX_SHOWN_DESCRIPTION = 400
"""Characters of a capability's own description shown in a question (it is the host author's text)."""
CODE_ARGUMENTS = ("code", "script", "source")
MAX_REMEMBERED = 8192
"""Decisions remembered (by subject) before the memory starts over."""

Answerer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Answers one round of `inputRequests` with the matching `inputResponses` (as invoking's)."""


MAX_PREVIEW_NOTES = 4
"""Notes of a preview given the person: what its pictures cannot show (the same pictures, layers
hidden), what the script tried outside the document."""


def _shown(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n… ({len(text) - limit} more characters)"


def preview_summary(result: dict[str, Any]) -> dict[str, Any] | None:
    """The part of a host's dryRun answer the person sees: counts, kinds, samples, revision, pictures."""
    found = result.get("structuredContent")
    if not isinstance(found, dict) or found.get("dryRun") is not True:
        return None
    parts = {k: found.get(k) for k in ("created", "modified", "deleted") if isinstance(found.get(k), dict)}
    pictures = [
        c.get("data") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "image"
    ]
    previewed = (found.get("applyWith") or {}).get("previewed")
    tried = found.get("outsideDocument") or []
    outside = [str(t)[:MAX_SHOWN_DESCRIPTION] for t in tried if isinstance(t, str)]
    warnings = [str(w)[:MAX_SHOWN_DESCRIPTION] for w in found.get("warnings") or [] if isinstance(w, str)]
    notes = [str(n)[:MAX_SHOWN_DESCRIPTION] for n in found.get("notes") or [] if isinstance(n, str)]
    return {
        **parts,
        "previewed": previewed if isinstance(previewed, str) else None,
        "pictures": pictures[:2],
        **({"warnings": warnings[:3]} if warnings else {}),
        **({"notes": notes[:MAX_PREVIEW_NOTES]} if notes else {}),
        **({"outsideDocument": outside[:MAX_PREVIEW_NOTES]} if outside else {}),
    }


def changes_nothing(preview: dict[str, Any]) -> bool:
    """Whether a preview shows the call changes nothing in the document (and warns of nothing): it is
    then applied as previewed, which the host does only if the run again ends where it began."""
    previewed = preview.get("previewed")
    if not isinstance(previewed, str) or preview.get("warnings"):
        return False
    before, _, after = previewed.partition(":")
    counts = [(preview.get(k) or {}).get("count") or 0 for k in ("created", "modified", "deleted")]
    return bool(before) and before == after and not any(counts)


def _sampled(entry: dict[str, Any]) -> str:
    """An object of a preview's sample: its name, and the properties that changed where known."""
    name = str(entry.get("name") or entry.get("id"))
    changed = entry.get("changed")
    if isinstance(changed, list) and changed:
        more = f", +{len(changed) - 4}" if len(changed) > 4 else ""
        return f"{name} ({', '.join(str(c) for c in changed[:4])}{more})"
    return name


def _preview_lines(preview: dict[str, Any]) -> list[str]:
    outside = preview.get("outsideDocument")
    if outside:
        return [
            f"No preview: the script {'; '.join(outside)}, outside the document, which a preview cannot "
            "do without doing it (it was stopped there and rolled back). If you say yes, it runs and does so."
        ]
    lines = [
        "Preview (run in the document's transaction and rolled back; it wrote no file, started no "
        "program and made no connection: a script that tries is asked about without a preview):"
    ]
    for key, verb in (("created", "creates"), ("modified", "modifies"), ("deleted", "deletes")):
        part = preview.get(key) or {}
        count = part.get("count") or 0
        if not count:
            lines.append(f"  {verb} nothing")
            continue
        by_kind = list((part.get("byKind") or {}).items())  # the host's order: named kinds first
        kinds = ", ".join(f"{n} {k}" for k, n in by_kind[:6])
        if others := sum(n for _, n in by_kind[6:] if isinstance(n, int)):
            kinds += f", {others} more"
        names = [_sampled(s) for s in (part.get("sample") or [])[:6] if isinstance(s, dict)]
        lines.append(f"  {verb} {count} ({kinds}): {', '.join(names)}")
    lines.extend(f"  warning: {w}" for w in preview.get("warnings") or [])
    return lines


def question(
    decision: Decision,
    subject: Subject,
    arguments: dict[str, Any],
    preview: dict[str, Any] | None = None,
    about: dict[str, Any] | None = None,
    details: list[str] | None = None,
) -> dict[str, Any]:
    """What the person is asked: what will run, where, with which arguments (a script's code in full,
    up to a bound), what a preview showed it would change, and why they are asked. ``about``: the
    capability as its host lists it, whose own words (and any warning about them) are shown too;
    ``details``: what the call would do, in lines its link wrote (`cadmcp.daemon.hostlink.Describing`)."""
    code = next((arguments[k] for k in CODE_ARGUMENTS if isinstance(arguments.get(k), str)), None)
    rest = {k: v for k, v in arguments.items() if not (code is not None and v is code)}
    lines = [f"Allow {where(subject)}?"]
    if subject.caller == "remote":
        lines.append(
            f"Asked by the machine {subject.caller_machine or 'another machine'} through the gateway."
        )
    lines.append(
        f"You are asked because of rule {decision.rule.name!r} ({decision.rule.origin}): {decision.why}."
    )
    if rest:
        lines.append(f"Arguments: {_shown(dumps(rest), MAX_SHOWN_ARGUMENTS)}")
    if details:
        lines.extend(details)
    if code is not None:
        lines.append(f"Code:\n{_shown(code, MAX_SHOWN_CODE)}")
    if preview is not None:
        lines.extend(_preview_lines(preview))
    if about is not None:  # after what will run: the card shows that first, the tool's own words below
        lines.extend(_self_description(about))
    return {
        "message": "\n".join(lines),
        **({"pictures": preview.get("pictures") or []} if preview is not None else {}),
        "call": {
            "capability": subject.capability,
            "hostApp": subject.host_app,
            "version": subject.version,
            "machine": subject.machine_name or subject.machine_id,
            "document": subject.document or None,
            "arguments": arguments,
            "rule": decision.rule.name,
            **(
                {"preview": {k: preview.get(k) for k in ("created", "modified", "deleted", "notes")}}
                if preview
                else {}
            ),
        },
    }


def _self_description(raw: dict[str, Any]) -> list[str]:
    """The capability's description in its author's words (clipped), and cadmcp's warning when
    those words try to steer the agent: the person sees what the agent was told."""
    text = raw.get("description")
    lines = []
    if isinstance(text, str) and text.strip():
        said = " ".join(visible(text).split())
        lines.append(f"It describes itself as: {_shown(said, MAX_SHOWN_DESCRIPTION)}")
    if (warning := flag(raw)) is not None:
        lines.append(f"Warning: {warning}")
    return lines


def elicitation(asked: dict[str, Any]) -> dict[str, Any]:
    """The question as an `elicitation/create` request (a yes/no form)."""
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": asked["message"],
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "approve": {
                        "type": "boolean",
                        "title": "Run it",
                        "description": "Yes runs exactly this call; no refuses it.",
                        "default": False,
                    }
                },
                "required": ["approve"],
            },
        },
    }


def answer_of(response: Any) -> str:
    """`accept`, `decline` or `cancel` from an elicitation result (accept with approve=false is a no)."""
    if not isinstance(response, dict):
        return "cancel"
    action = response.get("action")
    if action == "accept":
        content = response.get("content")
        if isinstance(content, dict) and content.get("approve") is False:
            return "decline"
        return "accept"
    return "decline" if action == "decline" else "cancel"


class Gate:
    """The daemon's policy at work: decisions, questions, the approval queue and the audit."""

    def __init__(
        self,
        policy: Policy,
        machine_name: str = "",
        queue: ApprovalQueue | None = None,
        watch: PolicyFile | None = None,
    ) -> None:
        self._policy = policy
        self.machine_name = machine_name
        self.queue = queue or ApprovalQueue()
        self.checkpoints = Checkpoints()
        """What agents changed on this machine, every daemon's calls (`cadmcp.daemon.checkpoints`)."""
        self._trusting = policy.is_trusting
        self._watch = watch
        self._decided: dict[Subject, Decision] = {}

    @property
    def policy(self) -> Policy:
        """The policy in force: the configuration file's as it is now, when the gate watches it."""
        fresh = self._watch.changed() if self._watch is not None else None
        if fresh is not None:
            self._policy, self._trusting = fresh, fresh.is_trusting
            self._decided.clear()
        return self._policy

    @property
    def trusting(self) -> bool:
        """True when nothing can be refused or held: the check can be skipped."""
        _ = self.policy  # the file is looked at again when it is due
        return self._trusting

    def _decide(self, subject: Subject) -> Decision:
        """The policy's decision, remembered until the policy changes."""
        policy = self.policy
        decision = self._decided.get(subject)
        if decision is None:
            if len(self._decided) >= MAX_REMEMBERED:
                self._decided.clear()
            decision = self._decided[subject] = policy.decide(subject)
        return decision

    def subject(
        self,
        entry: HostEntry,
        cap: Capability,
        caller: str = "local",
        caller_machine: str = "",
        arguments: Mapping[str, Any] | None = None,
    ) -> Subject:
        return subject_for(
            entry,
            cap,
            machine_name=self.machine_name,
            caller=caller,
            caller_machine=caller_machine,
            arguments=arguments,
        )

    def decide(self, subject: Subject, arguments: dict[str, Any]) -> Decision:
        """The decision for a call; a deny is audited and raised as `policy_denied`."""
        decision = self._decide(subject)
        if decision.verdict == "deny":
            self.audit(decision, subject, arguments, outcome="denied")
            raise denied(decision, subject)
        if decision.verdict == "allow" and not self.trusting:  # trusted: the call's own line says it ran
            self.audit(decision, subject, arguments, outcome="allowed")
        return decision

    async def ask(
        self,
        answerer: Answerer | None,
        how: str,
        decision: Decision,
        subject: Subject,
        arguments: dict[str, Any],
        preview: dict[str, Any] | None = None,
        about: dict[str, Any] | None = None,
        details: list[str] | None = None,
        reports: bool = False,
    ) -> str | None:
        """Put the question to `answerer` (None: the approval queue); return on yes, raise on no.
        ``about``, ``details``: the capability as its host lists it, what it would do (`question`).
        A yes from the queue returns its approval id; with ``reports``, the caller `settle`s it with
        what the call did (`ApprovalQueue.settle`)."""
        asked = question(decision, subject, arguments, preview, about, details)
        started = time.time()
        timeout = self.policy.confirm_timeout
        answer, by, approval_id = "timeout", "", None
        if answerer is None:
            if asked.get("pictures"):  # only the queue's entry carries them (a prompt is text)
                asked["message"] += (
                    "\n  before- and after-pictures are in this entry"
                    if len(asked["pictures"]) > 1
                    else "\n  one picture is in this entry (the other could not be made: see below)"
                )
                for note in (preview or {}).get("notes") or []:  # what they cannot show, beside them
                    asked["message"] += f"\n  the pictures: {note}"
            how, (answer, by, approval_id) = "approval queue", await self.queue.ask(asked, timeout, reports)
        else:
            with anyio.move_on_after(timeout):
                responses = await answerer({APPROVAL_KEY: elicitation(asked)})
                answer, by = answer_of(responses.get(APPROVAL_KEY)), "client"
        self.settle(decision, subject, arguments, answer, by=by, how=how, asked_at=started, preview=preview)
        return approval_id

    def settle(
        self,
        decision: Decision,
        subject: Subject,
        arguments: dict[str, Any],
        answer: str,
        *,
        by: str,
        how: str,
        asked_at: float,
        preview: dict[str, Any] | None = None,
    ) -> None:
        """Audit a confirmation's answer; raise `not_confirmed` unless it was yes."""
        self.audit(
            decision,
            subject,
            arguments,
            outcome="confirmed" if answer == "accept" else "refused",
            answer=answer,
            answeredBy=by or None,
            how=how,
            askedAt=_stamp(asked_at),
            answeredAt=_stamp(time.time()),
            waitedMs=round((time.time() - asked_at) * 1000),
            preview=audited(preview),
        )
        if answer != "accept":
            raise not_confirmed(decision, subject, answer, by or "nobody", previewed=preview is not None)

    def audit(
        self, decision: Decision, subject: Subject, arguments: dict[str, Any], *, outcome: str, **more: Any
    ) -> None:
        """One `policy/decision` line in the call log: the rule, the call, and any answer."""
        fields: dict[str, Any] = {
            "decision": decision.verdict,
            "rule": decision.rule.name,
            "ruleFrom": decision.rule.origin,
            "target": subject.capability,
            "host": f"{subject.host_app}/{subject.version}",
            "machine": subject.machine_name or subject.machine_id,
            "document": subject.document or None,
            "caller": subject.caller if subject.caller == "local" else f"remote:{subject.caller_machine}",
            **more,
            "args": arguments,
        }
        stamp = timestamp()
        with contextlib.suppress(Exception):  # the audit never breaks a call; built on the log's thread
            shared_log().write_later(
                lambda: format_line("policy/decision", outcome, {**fields, "args": clip(arguments)}, stamp)
            )


def audited(preview: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the call log keeps of a preview the person saw: counts and the previewed revisions."""
    if preview is None:
        return None
    counts = {k: (preview.get(k) or {}).get("count", 0) for k in ("created", "modified", "deleted")}
    return {**counts, "previewed": preview.get("previewed"), "pictures": len(preview.get("pictures") or [])}


def _stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d}Z"
