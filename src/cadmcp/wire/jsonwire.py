"""The one JSON serialization path for the wire, logs and text mirrors (invariant 6)."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    """Compact JSON, UTF-8 kept readable, key order preserved."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_fallback)


def _fallback(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
