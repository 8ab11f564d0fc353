"""Text an IFC file holds that is not STEP-encoded, read as its writer meant it.

A STEP file (ISO 10303-21) is ASCII: other characters are written as escapes (``\\X2\\00DF\\X0\\``
for ß). Some exporters write raw UTF-8 or Windows-1252 bytes instead, and some put a UTF-8
byte-order mark before the header. IfcOpenShell drops such bytes without a word ("Erdgeschoß
Über" reads "Erdgescho ber", and a save writes that back), and refuses a file that starts with a
byte-order mark. `scan` finds them in one pass; `readable` then gives a temporary copy in which
each run of such bytes is the STEP escape of the characters they are (UTF-8 where the run is
valid UTF-8, else Windows-1252: a file may hold both, an author's name from one tool and the
model's text from another) and the mark is left out, so the text reads as written and a save
writes it encoded as STEP requires.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cadmcp.fileinfo.steptext import HIGH as _HIGH
from cadmcp.fileinfo.steptext import MAX_KNOWN, RunEscaper, decoded
from cadmcp.wire.echo import echo

CHUNK = 1 << 20
BOM = b"\xef\xbb\xbf"
EXAMPLE_BYTES = 200
"""How far around the first such run its string is looked for, to show it."""


@dataclass(frozen=True)
class RawText:
    """What a file holds that is not STEP-encoded."""

    codec: str
    """`utf-8`, `cp1252` or `mixed` (each run read as UTF-8 where it is, else as Windows-1252)."""
    runs: int
    """Runs of raw non-ASCII bytes (about one per word that has such characters)."""
    bom: bool
    example: str
    """The first string that holds such bytes, as read (empty when none does)."""

    def warning(self, name: str) -> str:
        """What the agent must know, in a sentence or two."""
        said = []
        if self.runs:
            named = {"utf-8": "UTF-8", "cp1252": "Windows-1252"}.get(self.codec, "UTF-8 and Windows-1252")
            shown = f", e.g. {echo(self.example, 80)}" if self.example else ""
            said.append(
                f"{echo(name)} holds text that is not STEP-encoded ({self.runs} run(s) of raw {named} "
                f"bytes, which IfcOpenShell would drop); it was read as {named}{shown}. Saving writes "
                "that text encoded as STEP requires, which every IFC reader reads."
            )
        if self.bom:
            said.append(f"{echo(name)} starts with a UTF-8 byte-order mark, which was left out to read it.")
        return " ".join(said)


def _whole_runs(stream: BinaryIO) -> Iterator[bytes]:
    """The stream in chunks that never cut a run of non-ASCII bytes in two."""
    carry = b""
    while chunk := stream.read(CHUNK):
        data = carry + chunk
        cut = len(data)
        while cut and data[cut - 1] >= 0x80:
            cut -= 1
        carry = data[cut:]
        if cut:
            yield data[:cut]
    if carry:
        yield carry


def scan(path: Path) -> RawText | None:
    """What `path` holds that is not STEP-encoded, or None when it is all ASCII (most files)."""
    runs, example, bom = 0, "", False
    codecs: set[str] = set()
    seen: set[bytes] = set()  # runs already read (the same words come back)
    with path.open("rb") as stream:
        bom = stream.read(len(BOM)) == BOM
        if not bom:
            stream.seek(0)
        for data in _whole_runs(stream):
            if data.isascii():  # most chunks of most files: a fast pass in C
                continue
            for run in _HIGH.finditer(data):
                runs += 1
                if len(codecs) < 2 and (word := run.group()) not in seen:
                    codecs.add(_codec(word))
                    if len(seen) < MAX_KNOWN:
                        seen.add(word)
                if not example:
                    example = _quoted(data, run.start(), run.end())
    if not runs and not bom:
        return None
    codec = codecs.pop() if len(codecs) == 1 else "mixed" if codecs else "utf-8"
    return RawText(codec, runs, bom, _read(example.encode("latin-1")) if example else "")


def _read(raw: bytes) -> str:
    """Bytes holding raw runs as text: each run decoded (`_decoded`), the rest ASCII."""
    parts, at = [], 0
    for run in _HIGH.finditer(raw):
        parts += [raw[at : run.start()].decode("ascii", "replace"), decoded(run.group())]
        at = run.end()
    return "".join([*parts, raw[at:].decode("ascii", "replace")])


def _codec(raw: bytes) -> str:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def _quoted(data: bytes, start: int, end: int) -> str:
    """The STEP string around a run, without its quotes (raw bytes kept as latin-1 characters), or ''."""
    opening = data.rfind(b"'", max(0, start - EXAMPLE_BYTES), start)
    closing = data.find(b"'", end, end + EXAMPLE_BYTES)
    if opening < 0 or closing < 0:
        return ""
    return data[opening + 1 : closing].decode("latin-1")


@contextlib.contextmanager
def readable(path: Path, raw: RawText | None) -> Iterator[Path]:
    """`path` itself when `raw` is None; else a temporary STEP-encoded copy, removed afterwards."""
    if raw is None:
        yield path
        return
    step = RunEscaper()

    with path.open("rb") as source, tempfile.NamedTemporaryFile(suffix=".ifc", delete=False) as copy:
        if source.read(len(BOM)) != BOM:
            source.seek(0)
        for data in _whole_runs(source):
            copy.write(step.escape(data))
    try:
        yield Path(copy.name)
    finally:
        Path(copy.name).unlink(missing_ok=True)
