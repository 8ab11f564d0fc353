"""Ready policy profiles: rules that apply after the configuration file's own rules.

- `trusted` (the default): every call runs, as cadmcp always did.
- `confirm-changes`: reads run; anything that changes a model waits for the person's yes.
- `read-only`: reads run; changes are refused.
"""

from __future__ import annotations

from cadmcp.daemon.policy.rules import Rule

DEFAULT_PROFILE = "trusted"


def _profile(name: str) -> tuple[Rule, ...]:
    origin = f"profile {name}"
    if name == "trusted":
        return (Rule("trusted", "allow", origin, reason="the trusted profile runs every call"),)
    if name == "confirm-changes":
        return (
            Rule("reads", "allow", origin, read_only=True, reason="reads run without asking"),
            Rule("changes", "confirm", origin, read_only=False, reason="changes wait for your yes"),
        )
    if name == "read-only":
        return (
            Rule("reads", "allow", origin, read_only=True, reason="reads run without asking"),
            Rule("changes", "deny", origin, read_only=False, reason="the read-only profile refuses changes"),
        )
    raise KeyError(name)


PROFILES: dict[str, tuple[Rule, ...]] = {n: _profile(n) for n in ("trusted", "confirm-changes", "read-only")}
