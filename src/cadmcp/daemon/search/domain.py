"""What hosts declare about themselves for ranking: a domain vocabulary and fallback tools.

Two `_meta` keys (docs/search.md has the full description):

- `io.cadmcp/domain` on a host's `tools/list` result: `{"names": [...], "terms": [...]}`.
  `names` are what people call the app or its files ("AutoCAD", "DWG"): a request containing
  one names the app. `terms` are words of the app's domain ("layer", "block" for drawings;
  "storey", "slab" for building models): they tell apps apart when a request could go to either.
- `io.cadmcp/fallback` on a tool: `["change"]`, `["query"]` or both: the tool can make any
  change (answer any question) the host has no dedicated capability for, e.g. a code-execution
  tool. It ranks first when a request asks for such a change and nothing specific matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cadmcp.wire.meta import DOMAIN, FALLBACK

DOMAIN_META_KEY = DOMAIN
FALLBACK_META_KEY = FALLBACK
#: Kinds of request a fallback tool can stand in for.
INTENTS = ("change", "query")
#: Bounds on what a host may declare (the rest is ignored).
MAX_DOMAIN_ENTRIES = 200
MAX_ENTRY_CHARS = 64


@dataclass(frozen=True, slots=True)
class HostDomain:
    """A host's declared domain vocabulary (see the module docstring)."""

    names: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.names or self.terms)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple):
        return ()
    out = [v.strip() for v in value[:MAX_DOMAIN_ENTRIES] if isinstance(v, str)]
    return tuple(dict.fromkeys(v for v in out if v and len(v) <= MAX_ENTRY_CHARS))


def meta_domain(meta: Mapping[str, Any] | None) -> HostDomain | None:
    """The domain a `tools/list` result's `_meta` declares, or None."""
    value = meta.get(DOMAIN_META_KEY) if isinstance(meta, Mapping) else None
    if not isinstance(value, Mapping):
        return None
    domain = HostDomain(names=_strings(value.get("names")), terms=_strings(value.get("terms")))
    return domain or None


def meta_fallback(meta: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The intents (`change`, `query`) a tool's `_meta` declares it the fallback for."""
    value = meta.get(FALLBACK_META_KEY) if isinstance(meta, Mapping) else None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return ()
    return tuple(i for i in INTENTS if i in {str(v).strip().casefold() for v in value})
