"""The lifetime contract between the daemon and a host it launched.

A host launched without `detach` gets `CADMCP_PARENT_PID` (the daemon's PID) in its
environment and stops, as if sent SIGTERM, when that process is gone; the daemon never runs
Python between fork and exec to arrange it (a forked copy of a multi-threaded process can
deadlock there).
"""

from __future__ import annotations

PARENT_PID_ENV = "CADMCP_PARENT_PID"
"""Set by the daemon for attached hosts: the PID whose exit stops the host."""
