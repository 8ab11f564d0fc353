"""The answers a call gets when the policy stops it: typed, naming the rule, saying what next."""

from __future__ import annotations

from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.policy.rules import Decision, Subject


def where(subject: Subject) -> str:
    """`execute_python_code on IFC 0.9 (machine ws-1, document /p/a.ifc)` for messages."""
    place = [f"machine {subject.machine_name or subject.machine_id}"]
    if subject.document:
        place.append(f"document {subject.document}")
    version = f" {subject.version}" if subject.version else ""
    return f"{subject.capability} on {subject.host_app}{version} ({', '.join(place)})"


def _details(decision: Decision, subject: Subject) -> dict[str, object]:
    return {
        **decision.describe(),
        "capability": subject.capability,
        "hostApp": subject.host_app,
        "machineId": subject.machine_id,
        **({"document": subject.document} if subject.document else {}),
        "executionStarted": False,
    }


def denied(decision: Decision, subject: Subject) -> DaemonError:
    """`policy_denied`: a rule refuses the call; nothing ran."""
    rule = decision.rule
    show = f"`cadmcp policy show {subject.capability}` shows the rule"
    if subject.caller == "remote":  # decided by the machine that owns the host, for callers from afar
        show = f"`cadmcp policy show {subject.capability} --caller remote` on that machine shows the rule"
    return DaemonError(
        "policy_denied",
        f"The policy refuses {where(subject)}: rule {rule.name!r} ({rule.origin}) denies it because "
        f"{decision.why}. Nothing ran. Use a capability the policy allows (reads usually are), or ask the "
        f"person to change the policy ({show}).",
        _details(decision, subject),
    )


NO_ANSWER = {
    "decline": "the person declined it",
    "cancel": "the person dismissed the question",
    "timeout": "nobody answered in time (no answer counts as no)",
}


QUEUE_HINT = (
    " A question nobody was shown waits in the approval queue: the person answers it with "
    "`cadmcp policy approvals` and `cadmcp policy answer ID accept` on the machine that owns the "
    "host, or in `cadmcp dashboard`, while the call waits."
)


def not_confirmed(
    decision: Decision, subject: Subject, answer: str, by: str, *, previewed: bool = False
) -> DaemonError:
    """`not_confirmed`: the call needed a yes and did not get one; it did not run (``previewed``:
    its preview did, in a transaction that was rolled back)."""
    hint = QUEUE_HINT if answer == "timeout" else ""
    ran = (
        "The call did not run and the document is as it was; its preview did run the script, in a "
        "transaction that was rolled back, so what the script did outside the document (files it "
        "wrote, say) stays done."
        if previewed
        else "Nothing ran."
    )
    return DaemonError(
        "not_confirmed",
        f"{where(subject)} needed a confirmation (rule {decision.rule.name!r}) and {NO_ANSWER[answer]}. "
        f"{ran} Do not retry the same call unasked; tell the person what you wanted to do, or "
        f"change the plan.{hint}",
        {**_details(decision, subject), "answer": answer, "answeredBy": by, "previewRan": previewed},
    )
