"""The live dashboard: hosts, calls, approvals, history and documents in the user's browser.

`DashboardDoor` (cheap, in every daemon) starts the page when `cadmcp dashboard` asks for a
login link; the rest (`service`, `access`, `events`, `timeline`, `views`, `steering`) is
imported only then.
"""

from cadmcp.daemon.dashboard.door import DashboardDoor

__all__ = ["DashboardDoor"]
