"""The `policy` section of the cadmcp configuration file (the file `hosts` and `gateway` live in).

TOML::

    [policy]
    profile = "confirm-changes"        # trusted (default) | confirm-changes | read-only
    confirmTimeoutSeconds = 120        # an unanswered confirmation is a no after this long
    previewChanges = true              # show a preview of a script before asking (hosts that can)

    [[policy.rules]]                   # checked in order before the profile; the first match decides
    name = "no scripts on the render farm"
    decision = "deny"                  # allow | confirm | deny
    machine = "render-*"               # glob(s): machine id or name
    capability = "execute_python_code" # glob(s): tool name / resource URI, or a capability id

Other conditions: `hostApp`, `document` (the active document's path), `kind`
(tool/resource/resource_template), `readOnly`, `destructive` (true/false, as declared),
`caller` (local/remote), and `reason` (said with the decision).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.policy.profiles import DEFAULT_PROFILE, PROFILES
from cadmcp.daemon.policy.rules import CALLERS, KINDS, RULE_KEYS, VERDICTS, Rule

MAX_RULES = 500
MAX_PATTERNS = 64
MAX_PATTERN_CHARS = 1000
DEFAULT_CONFIRM_TIMEOUT = 120.0
MAX_CONFIRM_TIMEOUT = 86400.0
SECTION_KEYS = frozenset({"profile", "confirmTimeoutSeconds", "previewChanges", "rules"})
FALLBACK_PROFILE = "confirm-changes"
"""The profile while the configuration file cannot be parsed: reads run, changes ask the person
(the file may have held a stricter policy, which a trusting default would silently drop)."""


def config_error(where: str, problem: str) -> DaemonError:
    """The configuration's policy section is wrong: say where, what, and how it looks when right."""
    return DaemonError(
        "config_error",
        f'The policy in {where} is invalid: {problem}. Example: [policy] profile = "confirm-changes" '
        'with [[policy.rules]] name = "..." decision = "deny" capability = "execute_python_code" '
        "(docs/policy.md).",
        {"configPath": where},
    )


def section(path: Path | None) -> dict[str, Any]:
    """The `policy` section of the configuration file ({} when there is none). A file that cannot
    be read or parsed raises :class:`~cadmcp.applications.UnreadableConfig` (see :func:`unreadable`)."""
    if path is None or not path.is_file():
        return {}
    from cadmcp.applications import ConfigError, UnreadableConfig, read_config

    try:
        data = read_config(path)
    except UnreadableConfig:
        raise
    except ConfigError:  # gone since it was looked for: as if there were none
        return {}
    value = data.get("policy") if isinstance(data, dict) else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise config_error(str(path), "the policy section must be a table/object")
    return value


def unreadable(path: Path, problem: str) -> tuple[str, tuple[Rule, ...], str]:
    """(profile, rules, source) while the configuration file cannot be parsed: its policy is
    unknown, so changes wait for the person's yes (:data:`FALLBACK_PROFILE`), saying why."""
    reason = (
        f"{path} cannot be used ({problem}), so its policy is not known; until it is fixed, "
        f"the {FALLBACK_PROFILE} profile applies"
    )
    rule = Rule("configuration unreadable", "confirm", str(path), read_only=False, reason=reason)
    return FALLBACK_PROFILE, (rule,), f"the fallback while {path} cannot be used"


def _patterns(where: str, key: str, value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) and i for i in items):
        raise config_error(where, f"{key} must be a pattern or a list of patterns (strings)")
    if len(items) > MAX_PATTERNS or any(len(i) > MAX_PATTERN_CHARS for i in items):
        raise config_error(where, f"{key} takes at most {MAX_PATTERNS} patterns of {MAX_PATTERN_CHARS} chars")
    return tuple(items)


def _flag(where: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise config_error(where, f"{key} must be true or false")
    return value


def parse_rule(raw: Any, where: str, origin: str) -> Rule:
    """One rule of the configuration file, checked."""
    if not isinstance(raw, dict):
        raise config_error(where, "a rule must be a table/object with a decision")
    unknown = sorted(set(raw) - RULE_KEYS)
    if unknown:
        raise config_error(where, f"unknown key(s) {unknown}; a rule takes {sorted(RULE_KEYS)}")
    decision = raw.get("decision")
    if decision not in VERDICTS:
        raise config_error(where, f"decision must be one of {list(VERDICTS)} (got {decision!r})")
    name = raw.get("name", where.rsplit(" ", 1)[-1])
    if not isinstance(name, str) or not name or len(name) > 200:
        raise config_error(where, "name must be a short text")
    kind = None
    if "kind" in raw:
        kind = _patterns(where, "kind", raw["kind"])
        if set(kind) - set(KINDS):
            raise config_error(where, f"kind must be among {list(KINDS)}")
    caller = raw.get("caller")
    if caller is not None and caller not in CALLERS:
        raise config_error(where, f"caller must be one of {list(CALLERS)}")
    reason = raw.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 500:
        raise config_error(where, "reason must be a text of at most 500 characters")
    return Rule(
        name=name,
        decision=decision,
        origin=origin,
        machine=_patterns(where, "machine", raw["machine"]) if "machine" in raw else None,
        host_app=_patterns(where, "hostApp", raw["hostApp"]) if "hostApp" in raw else None,
        document=_patterns(where, "document", raw["document"]) if "document" in raw else None,
        capability=_patterns(where, "capability", raw["capability"]) if "capability" in raw else None,
        kind=kind,
        read_only=_flag(where, "readOnly", raw["readOnly"]) if "readOnly" in raw else None,
        destructive=_flag(where, "destructive", raw["destructive"]) if "destructive" in raw else None,
        caller=caller,
        reason=reason,
    )


def parse(value: dict[str, Any], where: str) -> tuple[str, tuple[Rule, ...], float, bool]:
    """(profile, own rules, confirmation timeout, preview changes) of a policy section."""
    unknown = sorted(set(value) - SECTION_KEYS)
    if unknown:
        raise config_error(where, f"unknown key(s) {unknown}; the section takes {sorted(SECTION_KEYS)}")
    profile = value.get("profile", DEFAULT_PROFILE)
    if profile not in PROFILES:
        raise config_error(where, f"profile must be one of {sorted(PROFILES)} (got {profile!r})")
    timeout = value.get("confirmTimeoutSeconds", DEFAULT_CONFIRM_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise config_error(where, "confirmTimeoutSeconds must be a number of seconds")
    if not 0 < timeout <= MAX_CONFIRM_TIMEOUT:
        raise config_error(where, f"confirmTimeoutSeconds must be between 0 and {MAX_CONFIRM_TIMEOUT:g}")
    preview = value.get("previewChanges", True)
    if not isinstance(preview, bool):
        raise config_error(where, "previewChanges must be true or false")
    raw_rules = value.get("rules", [])
    if not isinstance(raw_rules, list):
        raise config_error(where, "rules must be a list of tables ([[policy.rules]])")
    if len(raw_rules) > MAX_RULES:
        raise config_error(where, f"at most {MAX_RULES} rules")
    rules = tuple(parse_rule(r, f"{where} policy.rules[{n}]", where) for n, r in enumerate(raw_rules))
    return profile, rules, float(timeout), preview
