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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cadmcp.daemon.search.analyzer import Analyzer, split_words, token_key
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


@dataclass(frozen=True, slots=True)
class _AppDomain:
    """One app's declared domain terms, analysed: phrases by their first term."""

    app: str  # casefolded
    # first term → (terms, words, text as declared): a phrase matches where the request has its
    # terms as inflections of its words (see `_inflection`)
    phrases: dict[str, list[tuple[tuple[str, ...], tuple[str, ...], str]]]
    # one-word terms by their first four letters → (word, text as declared): plurals the
    # English stemmer does not fold ("Decken" of "Decke", "Stützen" of "Stütze")
    singles: dict[str, list[tuple[str, tuple[str, ...], str]]]


_PLURAL_ENDINGS = frozenset({"s", "es", "n", "en"})  # walls; Decken, Türen; deuren


def _inflection(word: str, declared: str) -> bool:
    """Whether `word` is `declared` or an inflection of it (walls, entities, storeys, hatched), not
    another word the stemmer folds onto the same stem (open / opening, build / building)."""
    if word == declared:
        return True
    if abs(len(word) - len(declared)) > 2:
        return False
    shorter = min(len(word), len(declared))
    same = 0
    while same < shorter and word[same] == declared[same]:
        same += 1
    return same >= shorter - 1


class DomainTable:
    """Every app's declared domain terms (merged over its hosts), analysed once per change of hosts."""

    def __init__(self, declared: Mapping[str, list[HostDomain]], analyzer: Analyzer) -> None:
        stop = analyzer.stop_words
        merged: dict[str, dict[tuple[str, ...], str]] = {}
        for app, domains in declared.items():
            for domain in domains:
                phrases = merged.setdefault(app, {})
                for text in domain.terms:
                    words = tuple(w for w in split_words(text) if w not in stop)
                    if words:
                        phrases.setdefault(words, text)
        self._analyzer = analyzer
        self._apps: list[_AppDomain] = []
        for app, phrases in sorted(merged.items()):
            by_first: dict[str, list[tuple[tuple[str, ...], tuple[str, ...], str]]] = {}
            singles: dict[str, list[tuple[str, tuple[str, ...], str]]] = {}
            for words, text in phrases.items():
                terms = tuple(analyzer.terms_of_words(words))
                by_first.setdefault(terms[0], []).append((terms, words, text))
                if len(words) == 1 and len(words[0]) >= 4:
                    singles.setdefault(words[0][:4], []).append((words[0], terms, text))
            self._apps.append(_AppDomain(app, by_first, singles))
        self.tokens = frozenset(
            token_key(token) for texts in merged.values() for text in texts.values() for token in text.split()
        )
        """Declared words as tokens: typed as names would be (STEP, IGES, 3D), they stay domain words."""

    def apps_used(self, typed: Sequence[str]) -> tuple[frozenset[str], dict[str, list[str]]]:
        """The apps whose declared domain words `typed` (a request's words, stop words and
        names removed) uses most: distinct words, a phrase counting by its length; none when every
        app with a domain ties or fewer than two apps declare one. Also the words matched, by app."""
        if len(self._apps) < 2:
            return frozenset(), {}
        seq = self._analyzer.terms_of_words(typed)
        found: dict[str, dict[tuple[str, ...], str]] = {}
        for d in self._apps:
            for i, t in enumerate(seq):
                for terms, words, text in d.phrases.get(t, ()):
                    n = len(terms)
                    if tuple(seq[i : i + n]) == terms and all(
                        _inflection(w, v) for w, v in zip(typed[i : i + n], words, strict=True)
                    ):
                        found.setdefault(d.app, {})[terms] = text
            for w in typed:
                for word, terms, text in d.singles.get(w[:4], ()):
                    if w.startswith(word) and w[len(word) :] in _PLURAL_ENDINGS:
                        found.setdefault(d.app, {})[terms] = text  # the declared word's own key
        if not found:
            return frozenset(), {}
        covered = {app: sum(len(t) for t in phrases) for app, phrases in found.items()}
        best = max(covered.values())
        winners = frozenset(a for a, n in covered.items() if n == best)
        matched = {app: list(phrases.values()) for app, phrases in found.items()}
        return (frozenset() if len(winners) == len(self._apps) else winners), matched
