"""`Policy`: the configured rules, then the profile's, then the default; the first match decides."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadmcp.applications import UnreadableConfig
from cadmcp.daemon.catalog import Capability, HostEntry
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.policy import config
from cadmcp.daemon.policy.profiles import DEFAULT_PROFILE, PROFILES
from cadmcp.daemon.policy.rules import (
    DEFAULT_RULE,
    Decision,
    Rule,
    Subject,
    declared,
    navigates,
    read_only_hint,
)

log = logging.getLogger("cadmcp.policy")

TIMEOUT_ENV = "CADMCP_CONFIRM_TIMEOUT"
"""Seconds an unanswered confirmation waits before it counts as a no (over the config file)."""


@dataclass(frozen=True)
class Policy:
    """What may run: rules checked in order, first match wins."""

    profile: str = DEFAULT_PROFILE
    rules: tuple[Rule, ...] = ()
    confirm_timeout: float = config.DEFAULT_CONFIRM_TIMEOUT
    source: str = "defaults"
    """Where the policy came from (a configuration file, or `defaults`)."""
    preview: bool = True
    """Whether a confirmation of a change first shows the host's preview of it (dryRun)."""

    @property
    def chain(self) -> tuple[Rule, ...]:
        return (*self.rules, *PROFILES[self.profile], DEFAULT_RULE)

    def decide(self, subject: Subject) -> Decision:
        """The decision for one call and the rule that made it."""
        for rule in self.rules:
            if rule.matches(subject):
                return Decision(rule.decision, rule, rule.why(subject))
        for rule in PROFILES[self.profile]:
            if rule.matches(subject):
                return Decision(rule.decision, rule, rule.why(subject))
        return Decision("allow", DEFAULT_RULE, DEFAULT_RULE.reason)

    @property
    def is_trusting(self) -> bool:
        """True when nothing can be refused or held (today's behaviour): the check can be skipped."""
        return all(r.decision == "allow" for r in self.chain)

    def summary(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "source": self.source,
            "confirmTimeoutSeconds": self.confirm_timeout,
            "rules": [
                {"name": r.name, "decision": r.decision, "from": r.origin, **r.conditions()}
                for r in self.chain
            ],
        }


def load(path: Path | None = None, env: dict[str, str] | None = None, *, lenient: bool = False) -> Policy:
    """The policy of the configuration file in use (`CADMCP_HOSTS_CONFIG` or the user's config dir).
    A file that cannot be parsed gives the fallback policy (changes wait for a yes); so does a
    policy section that is wrong when ``lenient`` (a running daemon's reread), else that raises."""
    env = dict(os.environ) if env is None else env
    if path is None:
        from cadmcp.applications import config_path

        path = config_path()
    try:
        policy = _configured(config.section(path), path)
    except UnreadableConfig as exc:
        policy = _fallback(exc.path, exc.problem, str(exc))
    except DaemonError as exc:
        if not lenient or path is None:
            raise
        policy = _fallback(path, exc.message, exc.message)
    if env.get(TIMEOUT_ENV):
        try:
            timeout = float(env[TIMEOUT_ENV])
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= config.MAX_CONFIRM_TIMEOUT:
            raise DaemonError("config_error", f"{TIMEOUT_ENV} must be a number of seconds (0-86400].")
        policy = Policy(policy.profile, policy.rules, timeout, policy.source, policy.preview)
    return policy


def _configured(value: dict[str, Any], path: Path | None) -> Policy:
    """The policy a configuration file's section sets (the defaults without one)."""
    if not value:
        return Policy()
    profile, rules, timeout, preview = config.parse(value, str(path))
    return Policy(profile, rules, timeout, str(path), preview)


def _fallback(path: Path, problem: str, said: str) -> Policy:
    """The policy while the configuration file's policy cannot be known, logged with what is wrong."""
    profile, rules, source = config.unreadable(path, problem)
    log.warning(
        "%s Meanwhile the policy is the %s profile: reads run, changes wait for your yes.", said, profile
    )
    return Policy(profile, rules, source=source)


def active_document(entry: HostEntry) -> str:
    """The path of the host's active document (its title when it was never saved), or ''."""
    documents = entry.state.get("documents") if isinstance(entry.state, dict) else None
    for doc in documents if isinstance(documents, list) else ():
        if isinstance(doc, dict) and doc.get("active"):
            return str(doc.get("path") or doc.get("title") or "")
    title = entry.state.get("activeDocument") if isinstance(entry.state, dict) else None
    return title if isinstance(title, str) else ""


_HOSTNAME = socket.gethostname()


def called_document(entry: HostEntry, target: str, arguments: Mapping[str, Any]) -> str | None:
    """The document a call of `open_document` or `activate_document` goes to (None: another call,
    or one that does not say): the file it opens, or the open document it makes active, as the
    host shows it (its path, or its title when it was never saved)."""
    if target == "open_document" and isinstance(path := arguments.get("filePath"), str) and path.strip():
        # as written, made absolute: no look at the disk on the event loop (a hung mount would hold it)
        with contextlib.suppress(ValueError, RuntimeError):
            return os.path.normpath(os.path.abspath(os.path.expanduser(path.strip())))
    if target == "activate_document" and isinstance(key := arguments.get("document"), str) and key.strip():
        key = key.strip()
        documents = entry.state.get("documents") if isinstance(entry.state, dict) else None
        for doc in documents if isinstance(documents, list) else ():
            if isinstance(doc, dict) and key in (doc.get("title"), doc.get("path")):
                return str(doc.get("path") or doc.get("title") or key)
        return key
    return None


def subject_for(
    entry: HostEntry,
    cap: Capability,
    *,
    machine_name: str | None = None,
    caller: str = "local",
    caller_machine: str = "",
    arguments: Mapping[str, Any] | None = None,
) -> Subject:
    """What the policy looks at for a call of `cap` on `entry` (with `arguments`: a call that
    opens or switches documents is about the document it goes to, not the one it leaves)."""
    read_only, destructive = declared(cap.kind, cap.raw)
    moves = navigates(cap.kind, cap.raw)
    goes_to = called_document(entry, cap.target, arguments) if moves and arguments else None
    return Subject(
        capability=cap.target,
        kind=cap.kind,
        cap_id=cap.id,
        host_app=entry.host_app,
        version=entry.version,
        machine_id=entry.key.machine_id,
        machine_name=entry.machine or machine_name or _HOSTNAME,
        document=goes_to if goes_to is not None else active_document(entry),
        read_only=read_only,
        destructive=destructive,
        caller=caller,
        caller_machine=caller_machine,
        navigates=moves,
        read_only_hint=read_only_hint(cap.kind, cap.raw),
    )
