"""A second local account for the security tests, created and removed by the tests.

The tests run a stranger's processes under that account (`subprocess` with `user=`/`group=`,
nothing Python runs between fork and exec) with the system Python and the standard library
only, since the project's environment may live where the stranger cannot read.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Stranger:
    """Another local user on this machine: same host, no rights over our files."""

    name: str
    uid: int
    gid: int
    home: Path

    def run(self, argv: list[str], timeout: float = 30, **kw: object) -> subprocess.CompletedProcess[str]:
        """Run a command as the stranger (a minimal environment, their own home)."""
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8"}
        return subprocess.run(
            argv,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            env=env,
            cwd=str(self.home),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kw,  # type: ignore[arg-type]
        )

    def python(self, code: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run Python code (standard library only) as the stranger."""
        return self.run([_system_python(), "-I", "-c", code, *args], timeout=timeout)


def _system_python() -> str:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def _why_no_second_user() -> str | None:
    if sys.platform != "linux":
        return "creating a second local user is done here only on Linux"
    if os.geteuid() != 0:
        return "creating a second local user needs root (these tests run as another user otherwise)"
    if not (shutil.which("useradd") and shutil.which("userdel")):
        return "useradd/userdel are not installed"
    probe = subprocess.run(["/bin/true"], user=65534, group=65534, check=False, capture_output=True)
    if probe.returncode != 0:
        return "this sandbox cannot switch to another uid"
    return None


@pytest.fixture(scope="session")
def stranger() -> Iterator[Stranger]:
    """A fresh local account for the session (removed afterwards); skipped where it cannot be made."""
    reason = _why_no_second_user()
    if reason is not None:
        pytest.skip(f"no second local user: {reason}")
    name = f"cmt{secrets.token_hex(4)}"
    home = Path(tempfile.mkdtemp(prefix="cmt-home-"))
    made = subprocess.run(
        ["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/usr/sbin/nologin",
         "--user-group", name],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if made.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        pytest.skip(f"no second local user: useradd failed: {made.stderr.strip()}")
    import pwd

    entry = pwd.getpwnam(name)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o700)
    try:
        yield Stranger(name, entry.pw_uid, entry.pw_gid, home)
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A world-writable sticky folder like /tmp, private to this test."""
    path = Path(tempfile.mkdtemp(prefix="cmt-shared-"))
    os.chmod(path, 0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
