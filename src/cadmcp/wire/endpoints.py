"""Where hosts listen: the per-user runtime directory and endpoint file names.

A host listens on `<runtime dir>/cadmcp_{Host}_{Version}_{PID}.sock`. The directory is
private to the user (mode 0700) so no other account can connect to a host and run code.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

RUNTIME_DIR_ENV = "CADMCP_RUNTIME_DIR"
_PREFIX = "cadmcp_"
_SUFFIX = ".sock"
_NAME_RE = re.compile(r"^cadmcp_(?P<host>[^_]+)_(?P<version>[^_]+)_(?P<pid>\d+)\.sock$")
_UNSAFE = re.compile(r"[^A-Za-z0-9.+-]")
MAX_PID = 2**31 - 1
"""No platform hands out larger process ids; a file name claiming one is not an endpoint."""


class RuntimeDirError(RuntimeError):
    """The runtime directory exists but is not safe to use (wrong owner or mode)."""


def runtime_dir(create: bool = True) -> Path:
    """The per-user directory holding host endpoints, created with mode 0700.

    `CADMCP_RUNTIME_DIR` overrides it (tests isolate themselves this way); otherwise
    `$XDG_RUNTIME_DIR/cadmcp`, or a per-user folder in the system temp directory.
    """
    override = os.environ.get(RUNTIME_DIR_ENV)
    if override:
        path = Path(override)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "cadmcp"
    else:
        path = Path(tempfile.gettempdir()) / f"cadmcp-{_user_tag()}"
    if create:
        _ensure_private_dir(path)
    return path


def _user_tag() -> str:
    getuid = getattr(os, "getuid", None)
    if getuid is not None:
        return str(getuid())
    return _UNSAFE.sub("-", os.environ.get("USERNAME", "user"))


def _ensure_private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name != "posix":
        return
    info = path.stat()
    if info.st_uid != os.getuid():
        raise RuntimeDirError(
            f"runtime directory {path} belongs to another user; set {RUNTIME_DIR_ENV} to a private folder"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def _clean(part: str) -> str:
    cleaned = _UNSAFE.sub("-", part.strip()) or "unknown"
    return cleaned[:40]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One host endpoint found in the runtime directory."""

    host_app: str
    version: str
    pid: int
    path: Path

    @property
    def name(self) -> str:
        return self.path.name


def endpoint_name(host_app: str, version: str, pid: int) -> str:
    """The socket file name for a host: `cadmcp_{Host}_{Version}_{PID}.sock`."""
    return f"{_PREFIX}{_clean(host_app)}_{_clean(version)}_{pid}{_SUFFIX}"


def parse_endpoint(path: Path) -> Endpoint | None:
    """Parse an endpoint file name; None for anything that is not one."""
    match = _NAME_RE.match(path.name)
    if not match or len(match["pid"]) > 10 or int(match["pid"]) > MAX_PID:
        return None
    return Endpoint(match["host"], match["version"], int(match["pid"]), path)


def list_endpoints(directory: Path | None = None) -> list[Endpoint]:
    """Every endpoint file in the runtime directory, in a stable order."""
    directory = directory or runtime_dir()
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = [ep for name in names if (ep := parse_endpoint(directory / name)) is not None]
    return sorted(found, key=lambda ep: (ep.host_app, ep.version, ep.pid))


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (zombies count as gone)."""
    if not 0 < pid <= MAX_PID:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{pid}/stat")
    if status.exists():
        try:
            return status.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return True
    return True
