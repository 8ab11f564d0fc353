"""Who may run what: the person's policy, decided in the daemon before a call reaches a host.

Public API: `Policy` and `load_policy` (the configuration file's `policy` section and the
ready profiles), `Subject` (what a rule looks at), `Decision`, `subject_for`, and the
envelopes `denied` / `not_confirmed`. Nothing here talks to a host.
"""

from cadmcp.daemon.policy.engine import Policy, subject_for
from cadmcp.daemon.policy.engine import load as load_policy
from cadmcp.daemon.policy.envelopes import denied, not_confirmed
from cadmcp.daemon.policy.profiles import PROFILES
from cadmcp.daemon.policy.rules import Decision, Rule, Subject

__all__ = [
    "PROFILES",
    "Decision",
    "Policy",
    "Rule",
    "Subject",
    "denied",
    "load_policy",
    "not_confirmed",
    "subject_for",
]
