"""The one error type of the file-info readers: a code the caller can branch on and a
message that says what to do next.

Messages describe; they never quote the file. A library's exception text can carry the
bytes it choked on (a DXF "group code" that is really a line of `/etc/shadow`), so only
the exception's type is named, and the caller's own path is shown clipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from cadmcp.wire.echo import DEFAULT_LIMIT, echo

ErrorCode = Literal[
    "missing_path",
    "invalid_path",
    "not_found",
    "unsupported_extension",
    "corrupt_file",
    "not_a_file",
    "invalid_detail",
    "unreadable",
]


class FileInfoError(Exception):
    """A file's metadata could not be read; ``code`` says why, ``message`` what to do."""

    code: ErrorCode
    message: str

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"FileInfoError(code={self.code!r}, message={self.message!r})"

    def to_dict(self) -> dict[str, str]:
        """The error as a JSON-ready dict (``code`` and ``message``)."""
        return {"code": self.code, "message": self.message}


def shown(path: str | os.PathLike[str]) -> str:
    """How a message names the caller's file: quoted, and for a long path only its end (the name)."""
    text = os.fspath(path)
    if len(text) <= DEFAULT_LIMIT:
        return echo(text)
    return f"{echo('…' + text[-(DEFAULT_LIMIT - 1) :])} ({len(text)} chars)"


def shown_name(path: Path) -> str:
    """How a reader's message names the file: its name, clipped and quoted."""
    return echo(path.name)


def corrupt(path: Path, what: str, reason: BaseException) -> FileInfoError:
    """A ``corrupt_file`` error naming the kind of failure, never the library's text about the bytes."""
    return FileInfoError(
        "corrupt_file",
        f"{shown_name(path)} could not be read as {what} (the reader stopped with {type(reason).__name__}). "
        "The file may be truncated or damaged; open it in its application to repair it, or check that "
        "the extension matches the content.",
    )


def os_reason(exc: OSError) -> str:
    """An OS error as the system's own words (never a library's message), e.g. 'Permission denied'."""
    return exc.strerror or type(exc).__name__
