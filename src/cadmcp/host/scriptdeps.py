"""PEP 723 inline dependencies (``# /// script`` ... ``dependencies = [...]``), installed with uv.

Used by ``execute_python_code`` (`cadmcp.host.pyexec`) and by toolset modules
(`cadmcp.host.toolsets.deps`): each dependency set is installed once per Python version into
a cached target directory, which the caller puts first on ``sys.path`` while the code runs.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from cadmcp.userdirs import cache_dir

UV_INSTALL_TIMEOUT = 600.0


class DependencyError(Exception):
    """PEP 723 metadata was invalid or uv could not install the dependencies."""


@contextmanager
def prepended_to_sys_path(paths: Sequence[str]) -> Iterator[None]:
    """Put `paths` first on sys.path for the duration (then remove exactly those entries)."""
    sys.path[0:0] = paths
    try:
        yield
    finally:
        for path in paths:
            with suppress(ValueError):
                sys.path.remove(path)


_PEP723_BLOCK = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_install_lock = threading.Lock()


def parse_script_dependencies(code: str) -> list[str]:
    """Return the ``dependencies`` of the code's PEP 723 ``script`` block (empty if none)."""
    blocks = [m for m in _PEP723_BLOCK.finditer(code if code.endswith("\n") else code + "\n")]
    scripts = [m for m in blocks if m.group("type") == "script"]
    if not scripts:
        return []
    if len(scripts) > 1:
        raise DependencyError("The code has more than one '# /// script' block; keep exactly one.")
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in scripts[0].group("content").splitlines(keepends=True)
    )
    try:
        meta = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise DependencyError(f"The '# /// script' block is not valid TOML: {exc}") from None
    deps = meta.get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise DependencyError("In the '# /// script' block write dependencies = [\"package>=1.0\", ...].")
    return sorted({d.strip() for d in deps if d.strip()})


SCRIPT_PYTHON_ENV = "CADMCP_SCRIPT_PYTHON"
"""The Python interpreter dependencies are installed for, when `sys.executable` is not one
(an application embedding Python, such as FreeCAD, whose executable is the application)."""


def script_python() -> str:
    """The interpreter uv installs PEP 723 dependencies for: `CADMCP_SCRIPT_PYTHON`, else this one."""
    return os.environ.get(SCRIPT_PYTHON_ENV) or sys.executable


def cache_root() -> Path:
    """Directory holding one installed target directory per dependency set."""
    return cache_dir() / "script-deps"


def ensure_dependencies(deps: Sequence[str], *, root: Path | None = None) -> Path:
    """Install ``deps`` with uv (once per sorted set and Python version) and return the directory
    to put on ``sys.path``. Raises :class:`DependencyError` with uv's message on failure."""
    spec = sorted(set(deps))
    key_source = "\n".join([f"py{sys.version_info.major}.{sys.version_info.minor}", *spec])
    key = hashlib.sha256(key_source.encode()).hexdigest()[:24]
    base = root or cache_root()
    target = base / key
    if (target / ".complete").exists():
        return target
    uv = _find_uv()
    with _install_lock:
        if (target / ".complete").exists():
            return target
        base.mkdir(parents=True, exist_ok=True)
        staging = base / f".{key}.{os.getpid()}.{threading.get_ident()}"
        shutil.rmtree(staging, ignore_errors=True)
        command = [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            script_python(),
            "--target",
            str(staging),
            *spec,
        ]
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=UV_INSTALL_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise DependencyError(
                f"Installing {', '.join(spec)} took longer than {UV_INSTALL_TIMEOUT:g} s."
            ) from None
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            message = (proc.stderr or proc.stdout).strip()
            raise DependencyError(
                f"uv could not install {', '.join(spec)}. Check the package names and versions in the "
                f"'# /// script' block.\n{message}"
            )
        (staging / ".complete").write_text("\n".join(spec) + "\n")
        try:
            staging.rename(target)
        except OSError:  # another process finished first
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _find_uv() -> str:
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found is None:
        raise DependencyError(
            "uv is not installed; install it (pip install uv) to use '# /// script' dependencies."
        )
    return found
