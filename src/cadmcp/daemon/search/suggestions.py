"""Guidance for a search with no hits: names found with the kinds filter lifted, with the
request's words spelled as the index has them, or closest to the request as a whole."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection

from cadmcp.daemon.search.analyzer import fold, split_words


def suggest(
    query: str,
    kinds: set[str] | None,
    names_for: Callable[[str, set[str] | None], list[str]],
    terms: list[str],
    names: list[str],
    stop_words: Collection[str],
) -> list[str]:
    """Up to five capability names: `names_for(text, kinds)` ranks a request; `terms` are the
    index terms and `names` the capability names in scope."""
    out: list[str] = []
    if kinds is not None:
        out.extend(names_for(query, None))
    if len(out) < 5:
        fixed: list[str] = []
        for w in split_words(query):
            if w not in stop_words:
                fixed.extend(_close_words(w, terms, 2, 0.75))
        if fixed:
            out.extend(names_for(" ".join(fixed), kinds))
    if len(out) < 5:
        by_folded = {name.casefold(): name for name in names}
        close = _close_words(fold(query).strip().casefold(), list(by_folded), 5, 0.5, same_start=False)
        out.extend(by_folded[c] for c in close)
    return list(dict.fromkeys(out))[:5]


def _close_words(
    word: str, candidates: list[str], n: int, cutoff: float, same_start: bool = True
) -> list[str]:
    """difflib's closest matches, after a cheap length (and first letter) filter so it stays fast."""
    slack = max(2, len(word) // 3)
    pool = [
        c for c in candidates if abs(len(c) - len(word)) <= slack and (not same_start or c[:1] == word[:1])
    ]
    return difflib.get_close_matches(word, sorted(pool), n=n, cutoff=cutoff)
