"""Where hosts listen: the per-user runtime directory and endpoint file names.

A host listens on `<runtime dir>/cadmcp_{Host}_{Version}_{PID}.sock`, its name and version
written so that they read back exactly (`_` and other characters as `%XX`). The directory is
private to the user (mode 0700) so no other account can connect to a host and run code.
It is created and checked without following symbolic links: another account cannot point
it somewhere else, and one that pre-created the shared default only moves us to a per-user
folder it cannot reach.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

RUNTIME_DIR_ENV = "CADMCP_RUNTIME_DIR"
_PREFIX = "cadmcp_"
_SUFFIX = ".sock"
_NAME_RE = re.compile(r"^cadmcp_(?P<host>[^_]+)_(?P<version>[^_]+)_(?P<pid>\d+)\.sock$")
_UNSAFE = re.compile(r"[^A-Za-z0-9.+-]")
MAX_PART_CHARS = 40
"""Characters of a host name or version as written in an endpoint file name (escapes included):
a Unix socket's whole path must stay under about 104 bytes."""
SOCKET_PATH_BYTES = 103 if sys.platform == "darwin" else 107
"""The longest path a Unix socket binds to here (its `sun_path`, less the closing NUL)."""
MAX_PID = 2**31 - 1
"""No platform hands out larger process ids; a file name claiming one is not an endpoint."""

log = logging.getLogger("cadmcp.wire")
_SHORT = {RUNTIME_DIR_ENV: "run", "CADMCP_LOG_DIR": "log"}


class RuntimeDirError(RuntimeError):
    """The runtime directory is not safe to use: a symbolic link, another user's, or not a directory."""


def runtime_dir(create: bool = True) -> Path:
    """The per-user directory holding host endpoints, created (or checked) with mode 0700.

    `CADMCP_RUNTIME_DIR` overrides it (used as given, never replaced by another folder);
    otherwise `$XDG_RUNTIME_DIR/cadmcp` when that directory is the user's own, else
    `cadmcp-<uid>` in the system temp directory. When another account got there first
    (a link, or a folder it owns), a per-user folder under the user's state directory
    takes its place, which other accounts cannot create.
    """
    override = os.environ.get(RUNTIME_DIR_ENV)
    if override:
        path = Path(override).expanduser()
        if create:
            ensure_private_dir(path)
        return path
    candidates = _default_candidates()
    if not create:
        return next((p for p in candidates if _usable(p)), candidates[0])
    refusals: list[RuntimeDirError] = []
    for path in candidates:
        try:
            ensure_private_dir(path)
        except RuntimeDirError as err:
            refusals.append(err)
            continue
        if refusals:
            log.warning("%s; using %s instead", refusals[0], path)
        return path
    raise RuntimeDirError(
        f"{refusals[-1]} (also refused: {'; '.join(str(r) for r in refusals[:-1])})"
        if len(refusals) > 1
        else str(refusals[0])
    )


def _default_candidates() -> list[Path]:
    found: list[Path] = []
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _owned_private(Path(xdg)):
        found.append(Path(xdg) / "cadmcp")
    found.append(Path(tempfile.gettempdir()) / f"cadmcp-{_user_tag()}")
    if os.name == "posix":
        from platformdirs import user_state_dir

        found.append(Path(user_state_dir("cadmcp", appauthor=False)) / "run")
    return found


def _usable(path: Path) -> bool:
    """Whether `path` is absent (it would be created) or already a real directory of ours."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and (os.name != "posix" or info.st_uid == os.getuid())


def _owned_private(path: Path) -> bool:
    """Whether `path` is a real directory of this user that nobody else may write to."""
    if os.name != "posix":
        return path.is_dir()
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _user_tag() -> str:
    getuid = getattr(os, "getuid", None)
    if getuid is not None:
        return str(getuid())
    return _UNSAFE.sub("-", os.environ.get("USERNAME", "user"))


def ensure_private_dir(
    path: Path,
    what: str = "runtime directory",
    variable: str = RUNTIME_DIR_ENV,
    *,
    own_links: bool = False,
) -> None:
    """Create `path` (mode 0700) or check the one there, never following a stranger's link.

    The final component is opened with `O_NOFOLLOW | O_DIRECTORY` and its owner and mode
    are read from that handle, so a link swapped in between cannot redirect the check; a
    folder of ours with a looser mode is tightened through the same handle. With
    `own_links`, a link that the user owns (only they or root can have made it) is
    followed, and its target must pass the same checks (for folders users relocate with
    links, like logs or settings; the runtime directory never does). Raises
    `RuntimeDirError` naming the path and the fix (`what` names the folder in messages,
    `variable` the setting that moves it).
    """
    if os.name != "posix":
        path.mkdir(parents=True, exist_ok=True)
        return
    if not path.parent.exists():
        with contextlib.suppress(FileExistsError):
            path.parent.mkdir(mode=0o700, parents=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)  # never follows a link in the last component
    follow = own_links and path.is_symlink() and os.lstat(path).st_uid == os.getuid()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | (0 if follow else os.O_NOFOLLOW))
    except OSError as exc:
        raise _refusal(path, exc, what, variable) from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            raise RuntimeDirError(
                f"{what} {path} belongs to another user (uid {info.st_uid}), who could read or replace "
                f"what cadmcp puts there; have that folder removed, or {_elsewhere(variable)}"
            )
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _refusal(path: Path, exc: OSError, what: str, variable: str) -> RuntimeDirError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
        target = os.readlink(path)
        problem = f"{what} {path} is a symbolic link (to {target!r}), which cadmcp never follows"
        fix = "remove the link if it is yours"
    elif exc.errno == errno.ENOTDIR:
        problem = f"{what} {path} exists but is not a directory"
        fix = "remove it if it is yours"
    else:
        problem = f"{what} {path} cannot be used ({exc.strerror})"
        fix = "check its permissions"
    return RuntimeDirError(f"{problem}; {fix}, or {_elsewhere(variable)}")


def _elsewhere(variable: str) -> str:
    example = f"~/.cadmcp-{_SHORT.get(variable, 'files')}"
    return f"set {variable} to a folder of your own (for example {variable}={example})"


def _written(part: str, limit: int = MAX_PART_CHARS) -> str:
    """A host name or version as its endpoint file name holds it: letters, digits, `.`, `+` and `-`
    as they are, any other character (`_` separates the parts) as `%XX` of its UTF-8 bytes, so
    :func:`parse_endpoint` reads back exactly what the host is called. Cut whole characters at
    `limit` (at least one character is kept)."""
    out = ""
    for char in part or "unknown":
        piece = char if not _UNSAFE.match(char) else "".join(f"%{b:02X}" for b in char.encode())
        if len(out) + len(piece) > limit:
            break
        out += piece
    return out or "unknown"[: max(1, limit)]


def round_trips(host_app: str) -> bool:
    """Whether a host of this name reads back under the same name from its endpoint (not too long)."""
    return bool(host_app) and unquote(_written(host_app), errors="replace") == host_app


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
    return f"{_PREFIX}{_written(host_app)}_{_written(version)}_{pid}{_SUFFIX}"


class EndpointTooLong(RuntimeDirError):
    """A host's endpoint path would be longer than a Unix socket's may be (the message says why)."""


def endpoint_path(directory: Path, host_app: str, version: str, pid: int) -> Path:
    """Where a host of this name listens: `directory` / `endpoint_name`, its version cut short
    (to one character at the least) where the whole path would be longer than a socket's may
    be; `EndpointTooLong` when even that is too long."""
    head, tail = f"{_PREFIX}{_written(host_app)}_", f"_{pid}{_SUFFIX}"
    room = SOCKET_PATH_BYTES - len(os.fsencode(str(directory))) - 1 - len(head) - len(tail)
    if room < 1:
        raise EndpointTooLong(
            f"the host {host_app!r} cannot listen in {directory}: the socket path would be over "
            f"{SOCKET_PATH_BYTES} bytes, the most a Unix socket takes here. Give the host a shorter "
            f"name, or set {RUNTIME_DIR_ENV} to a shorter folder (for example ~/.cadmcp-run)"
        )
    return directory / f"{head}{_written(version, min(room, MAX_PART_CHARS))}{tail}"


def endpoint_problem(directory: Path, host_app: str) -> str | None:
    """Why a host of this name cannot listen in `directory` (see `endpoint_path`), or None."""
    try:
        endpoint_path(directory, host_app, "v", MAX_PID)
    except EndpointTooLong as exc:
        return str(exc)
    return None


def parse_endpoint(path: Path) -> Endpoint | None:
    """Parse an endpoint file name; None for anything that is not one."""
    match = _NAME_RE.match(path.name)
    if not match or len(match["pid"]) > 10 or int(match["pid"]) > MAX_PID:
        return None
    host, version = (unquote(match[part], errors="replace") for part in ("host", "version"))
    return Endpoint(host, version, int(match["pid"]), path)


def list_endpoints(directory: Path | None = None) -> list[Endpoint]:
    """Every endpoint file of this user in the runtime directory, in a stable order.

    Files another account left there (possible only if the folder was once open to others)
    are not endpoints: connecting to them would run a stranger's catalog.
    """
    directory = directory or runtime_dir()
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    found = [
        ep for entry in entries if (ep := parse_endpoint(directory / entry.name)) is not None and _ours(entry)
    ]
    return sorted(found, key=lambda ep: (ep.host_app, ep.version, ep.pid))


def _ours(entry: os.DirEntry[str]) -> bool:
    if os.name != "posix":
        return True
    try:
        return entry.stat(follow_symlinks=False).st_uid == os.getuid()
    except OSError:
        return False


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
