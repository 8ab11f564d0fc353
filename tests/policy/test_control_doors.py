"""The approval sockets the policy and dashboard commands knock on: only running daemons'."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cadmcp.daemon.policy import control


def test_a_killed_daemons_socket_is_not_a_door_and_is_removed(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = control.socket_path(tmp_path, gone.pid)
    alive = control.socket_path(tmp_path)  # this process's: running
    for path in (dead, alive, tmp_path / "cadmcp_DXF_1.0_1.sock"):
        path.touch()
    assert control.doors(tmp_path) == [alive]
    assert not dead.exists() and (tmp_path / "cadmcp_DXF_1.0_1.sock").exists()
