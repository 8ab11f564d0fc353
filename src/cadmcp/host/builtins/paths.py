"""Checking a document path before an application reads it: cheap, bounded, worded the same everywhere.

Every host refuses the same things with the same words before any parser runs: an empty or
unexpandable path, a missing file, a folder, an unreadable file, a file too large for the
memory this host may use, and (with :func:`sniff`) bytes that are not the format at all.
Messages mention the caller's path clipped (:func:`cadmcp.wire.echo.echo`) and never quote
file content.
"""

from __future__ import annotations

import os
from pathlib import Path

from cadmcp.host.builtins.adapter import HostError
from cadmcp.wire.echo import echo

__all__ = [
    "MEMORY_ENV",
    "check_document_path",
    "format_size",
    "memory_budget",
    "reject_non_text",
    "sample_blocks",
]

MEMORY_ENV = "CADMCP_DOCUMENT_MEMORY_MB"
"""Memory (MiB) one document may take once loaded; default 4096."""
DEFAULT_MEMORY_MB = 4096
PATH_ECHO = 160
SAMPLE = 64 * 1024


def format_size(size: float) -> str:
    """``12.3 MB`` style (decimal units, as file managers show them)."""
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def memory_budget() -> int:
    """Bytes one loaded document may take: CADMCP_DOCUMENT_MEMORY_MB, else 4096 MiB."""
    raw = os.environ.get(MEMORY_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_MEMORY_MB
    except ValueError:
        value = DEFAULT_MEMORY_MB
    return int((value if value > 0 else DEFAULT_MEMORY_MB) * 1024 * 1024)


def check_document_path(
    raw: str,
    *,
    kind: str,
    memory_factor: float,
    error: type[HostError] = HostError,
) -> Path:
    """The absolute path of a readable file ``raw`` names, or ``error`` saying what is wrong.

    ``kind`` names the expected file in messages ("a .dxf file"); ``memory_factor`` is how
    many bytes of memory the application needs per byte of file, so a file whose estimate
    exceeds :func:`memory_budget` is refused before anything reads it.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise error(f"filePath is empty. Pass the path of {kind}.", "invalid")
    text = raw.strip()
    if "\x00" in text:
        raise error(
            f"filePath {echo(text, PATH_ECHO)} contains a NUL character; pass a real path.", "invalid"
        )
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # "~someone" with no such user
        user = text.split("/", 1)[0]
        raise error(
            f"Cannot expand {echo(user)}: there is no such user here. Pass an absolute path.", "invalid"
        ) from None
    try:
        path = path.resolve()
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, RuntimeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise error(f"Invalid path {echo(text, PATH_ECHO)}: {reason}.", "invalid") from None
    shown = echo(str(path), PATH_ECHO)
    if not exists:
        raise error(f"File not found: {shown}. Check the path (absolute paths are safest).", "invalid")
    if is_dir:
        raise error(f"{shown} is a folder (directory), not a file. Pass the path of {kind}.", "invalid")
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            stream.read(1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise error(f"Cannot read {shown}: {reason}. Check the file permissions.", "invalid") from None
    if size == 0:
        raise error(f"{path.name!r} is empty (0 bytes). Pass a complete file.", "invalid")
    budget = memory_budget()
    if size * memory_factor > budget:
        raise error(
            f"{echo(path.name)} is {format_size(size)}; opening it would take about "
            f"{format_size(size * memory_factor)} of memory, more than this host allows "
            f"({format_size(budget)}). Set {MEMORY_ENV} (MiB) higher for the host if the machine has the "
            "memory, or open a smaller part of the model.",
            "invalid",
        )
    return path


def sample_blocks(path: Path, size: int = SAMPLE) -> list[tuple[int, bytes]]:
    """Up to three ``(offset, bytes)`` samples: the start, the middle and the end of the file."""
    total = path.stat().st_size
    offsets = sorted({0, max(0, total // 2 - size // 2), max(0, total - size)})
    out = []
    with path.open("rb") as stream:
        for offset in offsets:
            stream.seek(offset)
            out.append((offset, stream.read(size)))
    return out


def reject_non_text(
    path: Path, what: str, error: type[HostError] = HostError, *, lines_break: bool = False
) -> None:
    """Refuse at once a text-format file whose samples hold NUL bytes (zero-filled or damaged).

    Text formats (ASCII DXF, IFC-SPF) never contain NUL bytes; a parser fed such a file crawls
    through megabytes of junk and may quote it back. With ``lines_break``, a 64 KB sample without
    a line break is refused too (DXF values are short lines).
    """
    for offset, block in sample_blocks(path):
        at = block.find(b"\x00")
        if at >= 0:
            raise error(
                f"{echo(path.name)} is not {what}: it holds binary data (a NUL byte at offset "
                f"{offset + at:,}). The file is damaged or another format under this name.",
                "invalid",
            )
        if lines_break and len(block) == SAMPLE and b"\n" not in block and b"\r" not in block:
            raise error(
                f"{echo(path.name)} is not {what}: {format_size(SAMPLE)} from offset {offset:,} hold no line "
                "break. The file is damaged or another format under this name.",
                "invalid",
            )
