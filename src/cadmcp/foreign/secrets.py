"""Secret references in a foreign server's environment, headers and arguments, resolved when it
connects.

A value of ``env`` or ``headers`` is used as written unless it is a reference: ``env:VAR`` names
an environment variable of the proxy process, ``file:PATH`` a private file (a regular file of this
user, mode 0600 or stricter, PATH absolute or under ``~``) whose content, trailing newline removed,
is the value. A header may put one word before its reference (``Bearer env:TOKEN``). The
configuration file therefore never holds the secret itself. An argument of a stdio server and the
URL of an HTTP one may be an ``env:VAR`` reference too (the whole value: a server taking a token or
a connection string as an argument, or a token in its URL).

What only looks like a reference stays as written: ``file:`` with a relative path or a URL
(``file:./dev.db``, ``file:///srv/db``), words around ``env:`` in an environment variable. Any
value written ``literal:TEXT`` is ``TEXT`` as it is.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

MAX_SECRET_BYTES = 64 * 1024
LITERAL = "literal:"
_REF = re.compile(r"^(?P<kind>env|file):(?P<ref>\S+)$")
_PREFIXED_REF = re.compile(r"^(?P<prefix>(?:\S+ )?)(?P<kind>env|file):(?P<ref>\S+)$")


class SecretError(ValueError):
    """A reference that cannot be resolved; the message says what to fix (never the value)."""


def resolve(name: str, value: str, *, prefix_word: bool = True, files: bool = True) -> str:
    """The value of ``name`` with its reference, if any, filled in (``prefix_word``: a word such
    as ``Bearer`` may come before the reference, as in a header; ``files``: ``file:`` references
    are read too)."""
    if value.startswith(LITERAL):
        return value[len(LITERAL) :]
    match = (_PREFIXED_REF if prefix_word else _REF).match(value)
    if match is None or (match["kind"] == "file" and not files):
        return value
    prefix, kind, ref = match.groupdict().get("prefix") or "", match["kind"], match["ref"]
    if kind == "env":
        found = os.environ.get(ref)
        if found is None:
            raise SecretError(
                f"{name} refers to the environment variable {ref}, which is not set here: the host "
                f"reads it from the environment it starts in (for launch_host, the daemon's), so set it "
                f"there and restart the host (a running one keeps the environment it started with), or "
                f"write {LITERAL}{value} for the text as it is"
            )
        return prefix + found
    if not ref.startswith(("/", "~")) or ref.startswith("//"):
        return value  # a relative path or a file: URL is somebody's value, not a secret file
    return prefix + _read_private(name, Path(ref).expanduser())


def _read_private(name: str, path: Path) -> str:
    try:
        info = path.stat()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise SecretError(f"{name} refers to {path}, which cannot be read ({why})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SecretError(f"{name} refers to {path}, which is not a regular file")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise SecretError(f"{name} refers to {path}, which belongs to another user")
    if info.st_mode & 0o077:
        raise SecretError(
            f"{name} refers to {path}, which others can read; a secret's file must be yours to read "
            f"alone (chmod 600 {path}, if it is yours and holds nothing else)"
        )
    if info.st_size > MAX_SECRET_BYTES:
        raise SecretError(f"{name} refers to {path}, over {MAX_SECRET_BYTES // 1024} KiB")
    try:
        text = path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise SecretError(f"{name} refers to {path}, which cannot be read as UTF-8 text ({exc})") from None
    if "\0" in text:
        raise SecretError(f"{name} refers to {path}, which holds a NUL character (not a usable value)")
    return text


def resolve_all(where: str, values: dict[str, str]) -> dict[str, str]:
    """Every value of a mapping (``env`` or ``headers``) resolved; only a header's reference may
    follow a word (``Bearer env:TOKEN``)."""
    prefix_word = where == "headers"
    return {key: resolve(f"{where}.{key}", value, prefix_word=prefix_word) for key, value in values.items()}


def resolve_args(args: list[str]) -> list[str]:
    """A stdio server's arguments, each ``env:VAR`` argument filled in (a server taking a secret or
    a connection string as an argument); ``file:`` arguments stay as written (they name files)."""
    return [resolve(f"args[{n}]", arg, prefix_word=False, files=False) for n, arg in enumerate(args)]


def is_reference(value: str) -> bool:
    """Whether `value` is a whole ``env:VAR`` reference (as an argument or a URL may be)."""
    return bool(_REF.match(value)) and value.startswith("env:")


def resolve_url(url: str) -> str:
    """An HTTP server's URL, an ``env:VAR`` reference filled in; SecretError when what it refers
    to is not an http:// or https:// URL."""
    found = resolve("url", url, prefix_word=False, files=False)
    if found is not url and not found.startswith(("http://", "https://")):
        raise SecretError(f"url refers to {url[4:]}, whose value is not an http:// or https:// URL")
    return found
