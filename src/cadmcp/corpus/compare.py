"""Exact comparison of two canonical state dumps, with a short account of what differs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHOWN = 5
SHOWN_VALUE = 160


@dataclass
class Difference:
    """How two dumps differ: records only in one of them, records that changed, and examples."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def describe(self) -> str:
        """One line: counts, then up to a few examples (e.g. 'Sketch.props.Placement: a != b')."""
        if self.equal:
            return "identical"
        parts = []
        for label, keys in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            if keys:
                shown = ", ".join(keys[:SHOWN]) + (" ..." if len(keys) > SHOWN else "")
                parts.append(f"{len(keys)} {label} ({shown})")
        text = "; ".join(parts)
        if self.examples:
            text += " | " + " | ".join(self.examples[:SHOWN])
        return text


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 3] + "..."


def _first_difference(path: str, a: Any, b: Any) -> str | None:
    """The path of the first place where ``a`` and ``b`` differ, with both values there."""
    if type(a) is not type(b):
        return f"{path}: {_short(a)} != {_short(b)}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: {'missing' if key not in a else _short(a[key])} != " + (
                    "missing" if key not in b else _short(b[key])
                )
            if a[key] != b[key]:
                return _first_difference(f"{path}.{key}", a[key], b[key])
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(f"{path}[{index}]", x, y)
        return None
    return None if a == b else f"{path}: {_short(a)} != {_short(b)}"


def compare(before: dict[str, Any], after: dict[str, Any]) -> Difference:
    """Compare the record collections of two dumps (every top-level key but 'summary')."""
    diff = Difference()
    for section in sorted((set(before) | set(after)) - {"summary"}):
        a, b = before.get(section, {}), after.get(section, {})
        if not isinstance(a, dict) or not isinstance(b, dict):
            if a != b:
                diff.changed.append(section)
                diff.examples.append(_first_difference(section, a, b) or section)
            continue
        diff.added += [f"{section}:{k}" for k in sorted(set(b) - set(a))]
        diff.removed += [f"{section}:{k}" for k in sorted(set(a) - set(b))]
        for key in sorted(set(a) & set(b)):
            if a[key] != b[key]:
                diff.changed.append(f"{section}:{key}")
                if len(diff.examples) < SHOWN:
                    diff.examples.append(_first_difference(f"{section}:{key}", a[key], b[key]) or key)
    return diff
