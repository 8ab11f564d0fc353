"""Text a STEP (ISO 10303-21) file holds as raw bytes, where the format allows only ASCII and
its escapes (``\\X2\\00DF\\X0\\`` for ß): exporters write raw UTF-8 or Windows-1252 bytes, and
IfcOpenShell drops them without a word. `RunEscaper` writes each run of such bytes as the escape
of the characters it is (UTF-8 where the run is valid UTF-8, else Windows-1252), so the text
reads as written; the IFC host reads whole files through it, `read_file_info` their headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

HIGH = re.compile(rb"[\x80-\xff]+")
"""A run of raw non-ASCII bytes."""
MAX_KNOWN = 100_000
"""Distinct runs whose escapes are kept (a text-heavy model repeats the same words millions of times)."""
_DIRECTIVE = b"\\S\\"
"""STEP's own "next byte + 128" directive: a raw byte after it is left as written."""


class RunEscaper:
    """Escapes the raw runs of byte strings, each distinct run worked out once."""

    def __init__(self) -> None:
        self._known: dict[bytes, bytes] = {}

    def escape(self, data: bytes) -> bytes:
        """`data` with each raw run as its STEP escape (ASCII data comes back as it is)."""
        return data if data.isascii() else HIGH.sub(self._one, data)

    def _one(self, match: re.Match[bytes]) -> bytes:
        run = match.group()
        if match.string[max(0, match.start() - len(_DIRECTIVE)) : match.start()] == _DIRECTIVE:
            return run
        if (done := self._known.get(run)) is None:
            done = escaped(decoded(run))
            if len(self._known) < MAX_KNOWN:
                self._known[run] = done
        return done


def decoded(raw: bytes) -> str:
    """A run of raw bytes as text: UTF-8 where it is valid UTF-8, else Windows-1252 (its five
    unassigned bytes read as Latin-1)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(_cp1252(b) for b in raw)


def _cp1252(byte: int) -> str:
    try:
        return bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:
        return chr(byte)


def escaped(text: str) -> bytes:
    """`text` as STEP escapes: ``\\X2\\`` for the basic plane, ``\\X4\\`` beyond it."""
    out: list[str] = []
    for wide, group in _planes(text):
        digits = 8 if wide else 4
        out.append(f"\\X{4 if wide else 2}\\" + "".join(f"{ord(c):0{digits}X}" for c in group) + "\\X0\\")
    return "".join(out).encode("ascii")


def _planes(text: str) -> Iterator[tuple[bool, str]]:
    start = 0
    for n in range(1, len(text) + 1):
        if n == len(text) or (ord(text[n]) > 0xFFFF) != (ord(text[start]) > 0xFFFF):
            yield ord(text[start]) > 0xFFFF, text[start:n]
            start = n
