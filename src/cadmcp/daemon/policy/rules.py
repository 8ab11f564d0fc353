"""Policy rules: what a call is (`Subject`), what a rule matches, and the `Decision` it gives.

A rule names a decision (`allow`, `confirm` or `deny`) and any number of conditions, all of
which must hold: the machine, host application, document path, capability name or id
(glob patterns, case-insensitive), the kind of capability, what it declares (read-only,
destructive) and where the call comes from (`local` or `remote`). Patterns are compiled
once, so deciding a call costs a few regex matches.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from cadmcp.wire.meta import NAVIGATES

Verdict = Literal["allow", "confirm", "deny"]
VERDICTS: tuple[Verdict, ...] = ("allow", "confirm", "deny")
CALLERS = ("local", "remote")
KINDS = ("tool", "resource", "resource_template")


class Subject(NamedTuple):
    """Everything a rule can look at about one call, known before anything reaches a host
    (a tuple: cheap to build, and the key of the gate's decision cache)."""

    capability: str
    """The tool name, resource URI or template of the capability."""
    kind: str = "tool"
    cap_id: str = ""
    host_app: str = ""
    version: str = ""
    machine_id: str = ""
    machine_name: str = ""
    document: str = ""
    """The path (or, for a document never saved, the title) of the host's active document."""
    read_only: bool = False
    destructive: bool = True
    caller: str = "local"
    """`local` (a client of this daemon) or `remote` (another machine, through the gateway)."""
    caller_machine: str = ""
    navigates: bool = False
    """A tool that only opens or switches documents (`NAVIGATES`): a read, said so in words."""
    read_only_hint: bool | None = None
    """A tool's `readOnlyHint` as it declares it (None: it declares none), for the words of why."""

    @property
    def changes(self) -> bool:
        return not self.read_only


def declared(kind: str, raw: dict[str, Any]) -> tuple[bool, bool]:
    """(read-only, destructive) as a capability declares them. Resources and templates are reads,
    and so is a tool that only opens or switches documents (`NAVIGATES` in its `_meta`); a tool
    that declares nothing counts as a change, and a change is destructive unless it says
    otherwise (the MCP defaults of `readOnlyHint` and `destructiveHint`)."""
    if kind != "tool":
        return True, False
    hints = raw.get("annotations") if isinstance(raw.get("annotations"), dict) else {}
    read_only = hints.get("readOnlyHint") is True or navigates(kind, raw)
    destructive = not read_only and hints.get("destructiveHint") is not False
    return read_only, destructive


def read_only_hint(kind: str, raw: dict[str, Any]) -> bool | None:
    """A tool's `readOnlyHint` as it declares it; None when it declares none (or is no tool)."""
    hints = raw.get("annotations") if kind == "tool" and isinstance(raw.get("annotations"), dict) else {}
    hint = hints.get("readOnlyHint")
    return hint if isinstance(hint, bool) else None


def navigates(kind: str, raw: dict[str, Any]) -> bool:
    """Whether a tool declares it only opens or switches documents (`NAVIGATES` in its `_meta`)."""
    meta = raw.get("_meta")
    return kind == "tool" and isinstance(meta, dict) and meta.get(NAVIGATES) is True


def _compile(patterns: Sequence[str]) -> re.Pattern[str]:
    joined = "|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)
    return re.compile(joined, re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """One rule: a decision, its conditions (None: any), and where it came from."""

    name: str
    decision: Verdict
    origin: str
    """`profile confirm-changes`, `<config path>`, `default`..."""
    machine: tuple[str, ...] | None = None
    host_app: tuple[str, ...] | None = None
    document: tuple[str, ...] | None = None
    capability: tuple[str, ...] | None = None
    kind: tuple[str, ...] | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    caller: str | None = None
    reason: str = ""
    """Said to the person and the agent with the decision (optional)."""
    _patterns: dict[str, re.Pattern[str]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for attr in ("machine", "host_app", "document", "capability"):
            patterns = getattr(self, attr)
            if patterns is not None:
                self._patterns[attr] = _compile(patterns)

    def conditions(self) -> dict[str, Any]:
        """The rule's conditions as written (for `policy show` and the audit)."""
        out: dict[str, Any] = {}
        for attr, key in _KEYS:
            value = getattr(self, attr)
            if value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out

    def matches(self, s: Subject) -> bool:
        p = self._patterns
        if self.caller is not None and s.caller != self.caller:
            return False
        if self.kind is not None and s.kind not in self.kind:
            return False
        if self.read_only is not None and s.read_only != self.read_only:
            return False
        if self.destructive is not None and s.destructive != self.destructive:
            return False
        if "capability" in p and not (p["capability"].match(s.capability) or s.cap_id in self.capability):  # type: ignore[operator]
            return False
        if "host_app" in p and not p["host_app"].match(s.host_app):
            return False
        if "machine" in p and not (p["machine"].match(s.machine_id) or p["machine"].match(s.machine_name)):
            return False
        return not ("document" in p and not p["document"].match(s.document))

    def why(self, s: Subject) -> str:
        """Why this rule applies to `s`, in words."""
        parts = []
        if self.capability is not None:
            parts.append(f"the capability {s.capability!r} matches {list(self.capability)}")
        if self.host_app is not None:
            parts.append(f"the host {s.host_app!r} matches {list(self.host_app)}")
        if self.machine is not None:
            parts.append(f"the machine {s.machine_name or s.machine_id!r} matches {list(self.machine)}")
        if self.document is not None:
            parts.append(f"the document {s.document!r} matches {list(self.document)}")
        if self.kind is not None:
            parts.append(f"it is a {s.kind}")
        if self.read_only is not None:
            if not s.read_only:
                said = "does not declare readOnlyHint"
                if s.read_only_hint is False:
                    said = "declares readOnlyHint false"
                parts.append(f"it may change something (it {said})")
            else:
                parts.append("it only reads" + _declares(s))
        if self.destructive is not None:
            parts.append("it may destroy work (destructive)" if s.destructive else "it is not destructive")
        if self.caller is not None:
            parts.append(f"the call comes from a {s.caller} caller")
        said = "; ".join(parts) if parts else "it applies to every call"
        return f"{said}{f' ({self.reason})' if self.reason else ''}"


_KEYS = (
    ("machine", "machine"),
    ("host_app", "hostApp"),
    ("document", "document"),
    ("capability", "capability"),
    ("kind", "kind"),
    ("read_only", "readOnly"),
    ("destructive", "destructive"),
    ("caller", "caller"),
)
RULE_KEYS = frozenset({"name", "decision", "reason", *(k for _, k in _KEYS)})
"""The keys a rule in the configuration file may have."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy says about one call, and the rule that said it."""

    verdict: Verdict
    rule: Rule
    why: str

    def describe(self) -> dict[str, Any]:
        """The decision for `policy show`, the denial envelope and the audit line."""
        return {
            "decision": self.verdict,
            "rule": self.rule.name,
            "ruleFrom": self.rule.origin,
            "why": self.why,
        }


DEFAULT_RULE = Rule("default", "allow", "default", reason="no rule matched; the default allows")
"""Today's behaviour when nothing is configured: every call runs."""


def _declares(s: Subject) -> str:
    if s.kind != "tool":
        return ""
    if s.navigates:
        return " (it only opens or switches documents)"
    return " (it declares readOnlyHint)"
