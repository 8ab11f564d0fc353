"""The configuration file a running daemon's policy came from, read again when it changes: a
person who tightens the policy (trusted to read-only, a new deny rule) must not have to restart
every AI client for it to hold, nor be told by `cadmcp policy show` that it holds when it does not.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from cadmcp.daemon.policy.engine import Policy, load

log = logging.getLogger("cadmcp.daemon.policy")

CHECK_INTERVAL = 1.0
"""Seconds between two looks at the file (a stat); an edit holds from the next call after it."""


class PolicyFile:
    """Watches one configuration file (present or not) for the policy it sets."""

    def __init__(self, path: Path, interval: float = CHECK_INTERVAL) -> None:
        self.path = path
        self.interval = interval
        self._signature = _signature(path)
        self._next = time.monotonic() + interval

    def changed(self) -> Policy | None:
        """The file's policy when the file changed since the last look, else None. A policy section
        that is not valid gives the fallback (changes wait for a yes), as an unreadable file does."""
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + self.interval
        signature = _signature(self.path)
        if signature == self._signature:
            return None
        self._signature = signature
        policy = load(self.path, lenient=True)
        log.info(  # what it now decides is news, not trouble (a section it cannot read warns in `load`)
            "the policy changed with %s: profile %s, %d rules", self.path, policy.profile, len(policy.rules)
        )
        return policy


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)
