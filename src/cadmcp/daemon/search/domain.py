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

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cadmcp.daemon.search.analyzer import split_words
from cadmcp.wire.meta import DOMAIN, FALLBACK

DOMAIN_META_KEY = DOMAIN
FALLBACK_META_KEY = FALLBACK
#: Kinds of request a fallback tool can stand in for.
INTENTS = ("change", "query")
#: Bounds on what a host may declare (the rest is ignored).
MAX_DOMAIN_ENTRIES = 200  # bound
MAX_ENTRY_CHARS = 64  # bound


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


_Phrases = dict[str, list[tuple[tuple[str, ...], str]]]  # first stem → (stems, text)


class DomainTable:
    """Every app's declared domain terms (merged over its hosts), stemmed in a request's language
    when a request in that language first needs them."""

    def __init__(self, declared: Mapping[str, list[HostDomain]], stop_words: Collection[str]) -> None:
        merged: dict[str, dict[tuple[str, ...], str]] = {}
        for app, domains in declared.items():
            for domain in domains:
                phrases = merged.setdefault(app, {})
                for text in domain.terms:
                    words = tuple(w for w in split_words(text) if w not in stop_words)
                    if words:
                        phrases.setdefault(words, text)
        self._merged = dict(sorted(merged.items()))
        self.apps = frozenset(self._merged)
        """The apps that declare domain words."""
        self._by_language: dict[str, list[tuple[str, _Phrases]]] = {}
        self.contested = len(self._merged) >= 2
        """Whether two apps or more declare a domain (else no request is told apart by one)."""

    def _apps(self, stem: Callable[[str], str], code: str) -> list[tuple[str, _Phrases]]:
        found = self._by_language.get(code)
        if found is None:
            found = []
            for app, phrases in self._merged.items():
                by_first: _Phrases = {}
                for words, text in phrases.items():
                    stems = tuple(stem(w) for w in words)
                    by_first.setdefault(stems[0], []).append((stems, text))
                found.append((app, by_first))
            self._by_language[code] = found
        return found

    def apps_used(
        self, typed: Sequence[str], stem: Callable[[str], str], code: str
    ) -> tuple[frozenset[str], dict[str, list[str]]]:
        """The apps whose declared domain words `typed` (a request's words, stop words and names
        removed) uses most, both stemmed by `stem` (the request's language `code`): distinct
        words, a phrase counting by its length; none when every app with a domain ties or fewer
        than two apps declare one. Also the words matched, by app."""
        if len(self._merged) < 2:
            return frozenset(), {}
        seq = [stem(w) for w in typed]
        found: dict[str, dict[tuple[str, ...], str]] = {}
        for app, phrases in self._apps(stem, code):
            for i, t in enumerate(seq):
                for stems, text in phrases.get(t, ()):
                    if tuple(seq[i : i + len(stems)]) == stems:
                        found.setdefault(app, {})[stems] = text
        if not found:
            return frozenset(), {}
        # rule: the app whose declared words the request uses most (a phrase by its length); none on a tie
        covered = {app: sum(len(t) for t in phrases) for app, phrases in found.items()}
        best = max(covered.values())
        winners = frozenset(a for a, n in covered.items() if n == best)
        matched = {app: list(phrases.values()) for app, phrases in found.items()}
        return (frozenset() if len(winners) == len(self._merged) else winners), matched
