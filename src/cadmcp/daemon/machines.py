"""`list_machines`: the workstations this daemon can reach (this machine only, for now)."""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

from cadmcp.daemon.hosts import HostDirectory

REMOTE_NOTE = (
    "Remote machines are not configured: this daemon only reaches hosts running on this machine. "
    "Hosts on other workstations need a daemon of their own there."
)


def list_machines(directory: HostDirectory) -> dict[str, Any]:
    """The `list_machines` answer: this machine with its connected host count."""
    connected = list(directory.entries.values())
    apps = sorted({f"{e.host_app} {e.version}" for e in connected})
    machine = {
        "machineId": directory.machine_id,
        "hostname": socket.gethostname(),
        "local": True,
        "os": {"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
        "python": platform.python_version(),
        "runtimeDir": str(directory.directory),
        "daemonPid": os.getpid(),
        "connectedHosts": len(connected),
        "hostApps": apps,
    }
    return {"count": 1, "machines": [machine], "remote": {"configured": False, "message": REMOTE_NOTE}}
