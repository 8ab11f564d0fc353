"""What `cadmcp policy show` prints: the policy, then each matching capability's decision, rule
and why (from the running daemon, another machine's daemon through the gateway, or read locally)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from cadmcp.daemon.catalog import HostEntry
from cadmcp.daemon.policy.engine import Policy, subject_for
from cadmcp.daemon.policy.rules import Subject, declared

MAX_PATTERN = 200
"""Characters of a `show` pattern."""


def _line(policy: Policy, subject: Subject, where: str) -> str:
    decision = policy.decide(subject)
    what = "read" if subject.read_only else "change, destructive" if subject.destructive else "change"
    return (
        f"{decision.verdict:<8} {where}{subject.capability} ({subject.kind}, {what})\n"
        f"         rule {decision.rule.name!r} ({decision.rule.origin}): {decision.why}"
    )


def show(policy: Policy, pattern: str, entries: Iterable[HostEntry], caller: str = "local") -> list[str]:
    """The lines `policy show` prints: the policy, then one decision per matching capability."""
    lines = [
        f"policy: profile {policy.profile} from {policy.source}; {len(policy.rules)} rule(s) of its own; "
        f"unanswered confirmations count as no after {policy.confirm_timeout:g} s"
    ]
    shown = 0
    for entry in entries:
        for cap in entry.capabilities:
            if cap.id != pattern and not fnmatch.fnmatchcase(cap.target.casefold(), pattern.casefold()):
                continue
            subject = subject_for(entry, cap, caller=caller)
            machine = f"machine {entry.machine}, " if entry.machine else ""
            where = f"{machine}{entry.host_app} {entry.version} pid {entry.key.pid}: "
            lines.append(_line(policy, subject, where))
            shown += 1
    if not shown:
        read_only, destructive = declared("tool", {})
        subject = Subject(capability=pattern, read_only=read_only, destructive=destructive, caller=caller)
        lines.append(f"no running host offers {pattern!r}; as a tool that declares nothing (a change):")
        lines.append(_line(policy, subject, ""))
    return lines
