"""Instances of an IFC file that IfcOpenShell did not read: those of a class the file's schema
does not have (IFCBEAMSTANDARDCASE in an IFC4X3 file). IfcOpenShell drops them without a word,
and every reference to them reads as nothing, so a model read so, saved, loses them."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

_INSTANCE = re.compile(rb"(?m)^[ \t]*#([0-9]+)[ \t]*=[ \t]*([A-Za-z0-9_]+)[ \t]*\(")
MAX_LEFT_OUT_KINDS = 8
"""Kinds of left-out entities named in the warning (the rest are counted)."""


def left_out_entities(path: Path, model: Any) -> Counter[str]:
    """Entities of the file that IfcOpenShell did not read, by the name the file gives them (a
    class its schema does not have: IFCBEAMSTANDARDCASE in an IFC4X3 file). IfcOpenShell drops
    such an instance without a word, and every reference to it reads as nothing."""
    import mmap

    left_out: Counter[str] = Counter()
    read = model.entity_names()  # the ids of the instances IfcOpenShell holds
    if _lines_starting_an_instance(path) <= len(read):  # one to a line, as exporters write them
        return left_out
    held = set(read)
    try:
        with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for match in _INSTANCE.finditer(data):  # type: ignore[call-overload]
                if int(match.group(1)) not in held:
                    left_out[match.group(2).decode("ascii").upper()] += 1
    except (OSError, ValueError):  # an empty file, or one that cannot be mapped: nothing to say
        return Counter()
    return left_out


def _lines_starting_an_instance(path: Path, chunk: int = 1 << 24) -> int:
    """Lines of the file that start with `#` (at most: a string value may hold such a line)."""
    count, last = 0, b"\n"
    try:
        with path.open("rb") as stream:
            while block := stream.read(chunk):
                joined = last + block  # a line break at the end of one block, `#` starting the next
                count += joined.count(b"\n#") + joined.count(b"\r#")
                last = block[-1:]
    except OSError:
        return 0
    return count


def left_out_text(left_out: Counter[str], schema: str) -> str:
    """``18 IFCBEAMSTANDARDCASE (not entities of IFC4X3_ADD2)``."""
    named = [f"{count:,} {kind}" for kind, count in left_out.most_common(MAX_LEFT_OUT_KINDS)]
    more = sum(left_out.values()) - sum(c for _, c in left_out.most_common(MAX_LEFT_OUT_KINDS))
    tail = f" and {more:,} more" if more else ""
    return f"{', '.join(named)}{tail} (not entities of {schema})"
