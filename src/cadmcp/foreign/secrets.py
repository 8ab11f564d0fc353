"""Secret references in a foreign server's environment and headers, resolved when it connects.

A value is used as written unless it is (or ends in, after one prefix word) a reference:
``env:VAR`` names an environment variable of the proxy process, ``file:PATH`` a private file
(a regular file of this user, mode 0600 or stricter) whose content, trailing newline removed,
is the value. The configuration file therefore never holds the secret itself.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

MAX_SECRET_BYTES = 64 * 1024
_REF = re.compile(r"^(?P<prefix>(?:\S+ )?)(?P<kind>env|file):(?P<ref>\S+)$")


class SecretError(ValueError):
    """A reference that cannot be resolved; the message says what to fix (never the value)."""


def resolve(name: str, value: str) -> str:
    """The value of ``name`` with its reference, if any, filled in."""
    match = _REF.match(value)
    if match is None:
        return value
    prefix, kind, ref = match["prefix"], match["kind"], match["ref"]
    if kind == "env":
        found = os.environ.get(ref)
        if found is None:
            raise SecretError(f"{name} refers to the environment variable {ref}, which is not set")
        return prefix + found
    return prefix + _read_private(name, Path(ref).expanduser())


def _read_private(name: str, path: Path) -> str:
    try:
        info = path.stat()
    except OSError as exc:
        raise SecretError(f"{name} refers to {path}, which cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SecretError(f"{name} refers to {path}, which is not a regular file")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise SecretError(f"{name} refers to {path}, which belongs to another user")
    if info.st_mode & 0o077:
        raise SecretError(f"{name} refers to {path}, which others can read: chmod 600 {path}")
    if info.st_size > MAX_SECRET_BYTES:
        raise SecretError(f"{name} refers to {path}, over {MAX_SECRET_BYTES // 1024} KiB")
    return path.read_text(encoding="utf-8").rstrip("\r\n")


def resolve_all(where: str, values: dict[str, str]) -> dict[str, str]:
    """Every value of a mapping (env or headers) resolved."""
    return {key: resolve(f"{where}.{key}", value) for key, value in values.items()}
