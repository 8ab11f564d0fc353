"""The one error type of the file-info readers: a code the caller can branch on and a
message that says what to do next."""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "missing_path",
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


def corrupt(path_name: str, what: str, reason: object) -> FileInfoError:
    """A ``corrupt_file`` error with a one-line reason taken from a library exception."""
    text = " ".join(str(reason).split()) or type(reason).__name__
    if len(text) > 200:
        text = text[:197] + "..."
    return FileInfoError(
        "corrupt_file",
        f"{path_name} could not be read as {what}: {text}. The file may be truncated or damaged; "
        "open it in its application to repair it, or check that the extension matches the content.",
    )
