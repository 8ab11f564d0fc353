"""Properties that hold for any text and any catalog."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cadmcp.daemon.search import SearchIndex
from cadmcp.daemon.search.analyzer import split_words

from .conftest import tool

WORDS = ["layer", "door", "wall", "undo", "screenshot", "python", "export", "schedule", "area", "slab"]


@given(st.text(max_size=60))
def test_split_words_yields_lowercase_alphanumeric_runs(text: str) -> None:
    for word in split_words(text):
        assert word and word == word.casefold()
        assert word.isdigit() or not any(ch.isdigit() for ch in word)
        assert all(ch.isalnum() for ch in word)


catalogs = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        st.lists(st.sampled_from(WORDS), max_size=6),
        st.sampled_from(["tool", "resource", "resource_template"]),
    ),
    max_size=25,
)


def _index(rows: list[tuple[str, list[str], list[str], str]]) -> SearchIndex:
    idx = SearchIndex()
    by_host: dict[str, dict[str, object]] = {}
    for n, (host, name, desc, kind) in enumerate(rows):
        doc = tool(f"{'_'.join(name)}_{n}", " ".join(desc), host=host, app=host.upper(), kind=kind)
        by_host.setdefault(host, {})[doc.key] = doc
    for host, docs in by_host.items():
        idx.replace_host(host, list(docs.values()))  # type: ignore[arg-type]
    return idx


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs, st.lists(st.sampled_from([*WORDS, "zzz"]), min_size=1, max_size=3), st.integers(0, 8))
def test_search_respects_filters_limit_and_total(rows, words, limit) -> None:  # type: ignore[no-untyped-def]
    idx = _index(rows)
    query = " ".join(words)
    everything = idx.search(query, limit=1000)
    assert everything.total == len(everything.hits)
    result = idx.search(query, limit=limit)
    assert result.hits == everything.hits[:limit]
    assert result.total == everything.total
    assert result.total == 0 or result.suggestions == []
    for host in ("a", "b"):
        for kinds in (["tool"], ["resource", "resource_template"]):
            scoped = idx.search(query, host_key=host, kinds=kinds, limit=1000)
            assert scoped.hits == [d for d in everything.hits if d.host_key == host and d.kind in kinds]
    assert idx.search(None, limit=1000).total == len(idx)
