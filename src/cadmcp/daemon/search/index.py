"""The daemon's search store over every connected host's capabilities: per-host segments,
shared postings (`postings.py`) with field-aware BM25 (BM25F) weights, name keys and, with a
semantic layer, vectors. `search` reads the request once (`request.py`) and ranks the store's
candidates with the declared features (`ranking.py`, `features.py`).

Each capability's name/target, title, description, parameters, `_meta` keywords and host app
are separate fields with their own weight and length normalisation. Each host is analysed on
its own and appended to the shared postings, so replacing or removing a host costs time in
proportion to that host; document frequencies are kept up to date incrementally.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sortedcontainers import SortedList

from cadmcp.daemon.search.analyzer import Analyzer, fold, split_words
from cadmcp.daemon.search.capability import KIND_RANK, KINDS, CapabilityDoc, Entry, Kind, SearchResult
from cadmcp.daemon.search.domain import DomainTable, HostDomain
from cadmcp.daemon.search.features import FeatureSet, constant
from cadmcp.daemon.search.postings import Postings, numpy_module
from cadmcp.daemon.search.ranking import TIER_EXACT, TIER_PREFIX, Ranked, rank
from cadmcp.daemon.search.request import Lexicon, read_request
from cadmcp.daemon.search.semantic import semantic_text
from cadmcp.daemon.search.suggestions import suggest
from cadmcp.daemon.search.vocabulary import (
    Aliases,
    Vocabulary,
    add_alias,
    default_vocabulary,
    shipped_analyzer,
)

if TYPE_CHECKING:
    from cadmcp.daemon.search.semantic import SemanticLayer

__all__ = ["KINDS", "CapabilityDoc", "Entry", "Kind", "SearchIndex", "SearchResult"]
_KIND_RANK = KIND_RANK


@dataclass(frozen=True, slots=True)
class _Field:
    weight: float
    b: float
    ref_len: float  # reference length for length normalisation (a typical field's length)


# name/target, title, description, parameters (names, descriptions, enum values), keywords,
# host app, parameter names again: a request usually names the inputs it supplies ("the drink
# id", "in size 8"), so a parameter's name counts as its own short field on top of the long
# parameter text (chosen on half of the BFCL queries; see docs/search.md)
_FIELDS: tuple[_Field, ...] = (
    _Field(weight=3.0, b=0.5, ref_len=4.0),  # field table
    _Field(weight=2.0, b=0.5, ref_len=4.0),  # field table
    _Field(weight=1.0, b=0.75, ref_len=20.0),  # field table
    _Field(weight=0.5, b=0.75, ref_len=20.0),  # field table
    _Field(weight=1.5, b=0.3, ref_len=6.0),  # field table
    _Field(weight=0.3, b=0.0, ref_len=1.0),  # field table
    _Field(weight=1.0, b=0.5, ref_len=4.0),  # field table
)
_MAX_PREFIX_HITS = 200  # bound


_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _own_target(doc: CapabilityDoc) -> str:
    """The target's own words: a URI template's `{placeholders}` name what the caller supplies
    (they are its parameters), not what the capability is or does."""
    # rule: a URI template's placeholders are not words of its name
    return _PLACEHOLDER.sub(" ", doc.target) if doc.kind == "resource_template" else doc.target


def _doc_fields(doc: CapabilityDoc) -> tuple[str, ...]:
    name = doc.name if doc.target == doc.name else f"{doc.name} {_own_target(doc)}"
    params = " ".join(f"{n} {d}" for n, d in doc.params)
    param_names = " ".join(n for n, _ in doc.params)
    return (name, doc.title or "", doc.description, params, " ".join(doc.keywords), doc.host_app, param_names)


def _order_key(doc: CapabilityDoc) -> tuple[str, str, str, int, str, str]:
    return (
        doc.host_app.casefold(),
        doc.host_version,
        doc.host_key,
        _KIND_RANK[doc.kind],
        doc.target,
        doc.key,
    )


class _Segment:
    """One host's capabilities, analysed: per-doc BM25F saturations and name keys."""

    __slots__ = (
        "app",
        "base",
        "docs",
        "domain",
        "host_key",
        "kind_counts",
        "name_keys",
        "names",
        "order",
        "postings",
        "term_counts",
        "terms",
    )

    def __init__(
        self,
        host_key: str,
        docs: Sequence[CapabilityDoc],
        analysis: _Analysis,
        base: int,
        domain: HostDomain | None = None,
    ) -> None:
        self.host_key = host_key
        self.domain = domain
        self.base = base  # global number of the first doc
        self.docs = sorted(docs, key=_order_key)
        self.app = self.docs[0].host_app.casefold() if self.docs else ""
        self.order = _order_key(self.docs[0])[:3] if self.docs else ("", "", host_key)
        self.kind_counts: dict[str, int] = {}
        self.terms: list[_Terms] = []  # per doc: its name, head and verb terms (`Entry`)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        keys: list[tuple[str, str, int]] = []
        for i, doc in enumerate(self.docs):
            self.kind_counts[doc.kind] = self.kind_counts.get(doc.kind, 0) + 1
            weights, name_keys, terms = analysis.of(doc)
            self.terms.append(terms)
            gid = base + i
            for t, x in weights:
                pair = postings.get(t)
                if pair is None:
                    postings[t] = ([gid], [x])
                else:
                    pair[0].append(gid)
                    pair[1].append(x)
            keys.extend((k, host_key, i) for k in name_keys)
        self.postings: dict[str, tuple[list[int], list[float]]] | None = postings  # dropped once added
        self.term_counts = {t: len(p[0]) for t, p in postings.items()}
        self.name_keys = sorted(keys)
        self.names = sorted({d.name for d in self.docs})


_Terms = tuple[frozenset[str], frozenset[str], frozenset[str]]
_Analysed = tuple[tuple[tuple[str, float], ...], tuple[str, ...], _Terms]


class _Analysis:
    """A capability's BM25F term weights and name keys, cached by content: a host re-lists
    mostly unchanged capabilities, and several instances of one app list the same ones."""

    def __init__(self, analyzer: Analyzer, size: int = 50_000) -> None:  # bound
        self.analyzer = analyzer
        self._size = size
        self._cache: dict[tuple[object, ...], _Analysed] = {}

    def of(self, doc: CapabilityDoc) -> _Analysed:
        """(term, BM25F saturation) pairs, name keys for exact/prefix matching, name terms, and
        head terms (name, title, keywords: what the capability is, not what it mentions)."""
        content = (doc.name, doc.target, doc.title, doc.description, doc.params, doc.keywords, doc.host_app)
        hit = self._cache.get(content)
        if hit is not None:
            return hit
        tf: dict[str, float] = {}
        fields = _doc_fields(doc)
        for spec, text in zip(_FIELDS, fields, strict=True):
            if not text:
                continue
            terms = self.analyzer.terms(text)
            if not terms:
                continue
            norm = spec.weight / (1.0 - spec.b + spec.b * len(terms) / spec.ref_len)
            for t in terms:
                tf[t] = tf.get(t, 0.0) + norm
        k1 = constant("k1")
        weights = tuple((t, x * (k1 + 1.0) / (x + k1)) for t, x in tf.items())
        keys: set[str] = set()
        for text in (doc.name, doc.target):
            keys.add(fold(text).casefold())
            keys.add(" ".join(split_words(text)))
        name_terms = frozenset(t for t in self.analyzer.terms(fields[0]) if not t.isdigit())
        head_terms = name_terms | frozenset(self.analyzer.terms(f"{fields[1]} {fields[4]}"))
        openings = (self.analyzer.terms(text)[:1] for text in (doc.title or "", *doc.keywords))
        verb_terms = name_terms | frozenset(t for opening in openings for t in opening)
        result = (weights, tuple(sorted(keys)), (name_terms, head_terms, verb_terms))
        if len(self._cache) >= self._size:
            self._cache.clear()
        self._cache[content] = result
        return result


class SearchIndex:
    """Merged search index over every host's capabilities (tools, resources, resource templates).

    Each host is analysed on its own (`replace_host`) and appended to shared postings, so
    re-indexing one host costs time in proportion to that host only.
    """

    def __init__(
        self,
        vocabulary: Vocabulary | None = None,
        semantic: SemanticLayer | None = None,
        features: FeatureSet | None = None,
    ) -> None:
        self._vocabulary = vocabulary
        self.features = features or FeatureSet()
        """The ranking features on (switch some off to measure them: `FeatureSet(off=...)`)."""
        self.semantic = semantic
        self._vectors = _VectorTable() if semantic is not None else None
        # the word lists are stemmed on the first search, not when the daemon starts
        self.analyzer = vocabulary.analyzer if vocabulary is not None else shipped_analyzer()
        self._analysis = _Analysis(self.analyzer)
        self._segments: dict[str, _Segment] = {}
        self.postings = Postings()
        self.entries: dict[int, Entry] = {}
        self._name_keys: SortedList = SortedList()
        self._app_ids: dict[str, int] = {}
        self._kind_counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._lexicon: Lexicon | None = None  # what the request readers know, rebuilt on a host change
        self._order: list[_Segment] | None = None  # segments in listing order, when known
        self.fallbacks: dict[int, tuple[str, ...]] = {}  # doc number → intents it stands in for
        self.read_only: set[int] = set()  # doc numbers of capabilities that only read
        self.heads: dict[str, set[int]] = {}  # head term → doc numbers

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def vocabulary(self) -> Vocabulary:
        """The vocabulary the request readers use (the shipped one unless given), made on first use."""
        if self._vocabulary is None:
            self._vocabulary = default_vocabulary(self.analyzer)
        return self._vocabulary

    @property
    def host_keys(self) -> list[str]:
        """Keys of the hosts indexed, sorted."""
        return sorted(self._segments)

    def docs(self) -> Iterable[CapabilityDoc]:
        """Every capability in the index, in listing order."""
        for seg in self._ordered_segments():
            yield from seg.docs

    def _ordered_segments(self) -> list[_Segment]:
        if self._order is None:
            self._order = sorted(self._segments.values(), key=lambda s: s.order)
        return self._order

    def replace_host(
        self, host_key: str, docs: Sequence[CapabilityDoc], domain: HostDomain | None = None
    ) -> None:
        """Index (or re-index) one host's whole catalog; other hosts are untouched.

        `domain` is what the host declares about its app's vocabulary (`io.cadmcp/domain`)."""
        for doc in docs:
            if doc.host_key != host_key:
                raise ValueError(f"capability {doc.key!r} belongs to host {doc.host_key!r}, not {host_key!r}")
            if doc.kind not in _KIND_RANK:
                raise ValueError(f"capability {doc.key!r} has unknown kind {doc.kind!r}; use one of {KINDS}")
        current = self._segments.get(host_key)
        if current is not None and current.domain == domain and current.docs == sorted(docs, key=_order_key):
            return  # nothing changed (a re-list after an unrelated change, a reconnect)
        # analysed before the swap, so a search never sees a half-indexed host
        segment = _Segment(host_key, docs, self._analysis, self.postings.size, domain)
        self._remove(host_key)
        if segment.docs:
            self._add(segment)
        if self.postings.needs_compaction:
            self._compact()

    def _add(self, segment: _Segment) -> None:
        app_id = self._app_ids.setdefault(segment.app, len(self._app_ids))
        assert segment.postings is not None
        self.postings.add(
            segment.base,
            segment.postings,
            [_KIND_RANK[d.kind] for d in segment.docs],
            [app_id] * len(segment.docs),
        )
        segment.postings = None
        self._segments[segment.host_key] = segment
        for k, c in segment.kind_counts.items():
            self._kind_counts[k] += c
        for i, doc in enumerate(segment.docs):
            gid = segment.base + i
            self.entries[gid] = Entry(doc, _order_key(doc), *segment.terms[i])
            if doc.fallback:
                self.fallbacks[gid] = doc.fallback
            if doc.read_only or doc.kind != "tool":  # resources and templates only read
                self.read_only.add(gid)
            for t in segment.terms[i][1]:
                self.heads.setdefault(t, set()).add(gid)
        self._name_keys.update(segment.name_keys)
        self._lexicon = None
        self._order = None
        if self._vectors is not None and self.semantic is not None:
            self._vectors.add(segment.base, segment.docs, self.semantic)

    def remove_host(self, host_key: str) -> None:
        """Drop one host's capabilities (no-op for an unknown host)."""
        self._remove(host_key)
        if self.postings.needs_compaction:
            self._compact()

    def _remove(self, host_key: str) -> None:
        segment = self._segments.pop(host_key, None)
        if segment is None:
            return
        self.postings.remove(segment.base, len(segment.docs), segment.term_counts)
        for k, c in segment.kind_counts.items():
            self._kind_counts[k] -= c
        for i in range(len(segment.docs)):
            gid = segment.base + i
            del self.entries[gid]
            self.fallbacks.pop(gid, None)
            self.read_only.discard(gid)
            for t in segment.terms[i][1]:
                heads = self.heads[t]
                heads.discard(gid)
                if not heads:
                    del self.heads[t]
        for key in segment.name_keys:
            self._name_keys.remove(key)
        if self._vectors is not None:
            self._vectors.remove(segment.base, len(segment.docs))
        self._lexicon = None
        self._order = None

    def _compact(self) -> None:
        remap = self.postings.compact()
        for seg in self._segments.values():
            seg.base = int(remap[seg.base])
        self.entries = {int(remap[g]): e for g, e in self.entries.items()}
        self.fallbacks = {int(remap[g]): f for g, f in self.fallbacks.items()}
        self.read_only = {int(remap[g]) for g in self.read_only}
        self.heads = {t: {int(remap[g]) for g in gs} for t, gs in self.heads.items()}
        if self._vectors is not None:
            self._vectors.compact(remap)

    def lexicon(self) -> Lexicon:
        """What the request readers know: the vocabulary, app aliases and the hosts' domains."""
        if self._lexicon is None:
            declared: dict[str, list[HostDomain]] = {}
            for seg in self._segments.values():
                if seg.domain is not None and seg.domain.terms:
                    declared.setdefault(seg.app, []).append(seg.domain)
            domains = DomainTable(declared, self.analyzer.stop_words)
            undeclared = frozenset(seg.app for seg in self._segments.values()) - domains.apps
            self._lexicon = Lexicon(
                self.vocabulary, self._aliases(), domains, bool(self.fallbacks), undeclared
            )
        return self._lexicon

    def app_codes(self, apps: Collection[str]) -> list[int]:
        """The postings' app codes of casefolded app names (unknown ones left out)."""
        return [self._app_ids[a] for a in apps if a in self._app_ids]

    def undeclared_apps(self) -> frozenset[str]:
        """Casefolded apps whose hosts declare no domain words (most foreign MCP servers)."""
        return self.lexicon().undeclared

    def _aliases(self) -> Aliases:
        """App aliases: the vocabulary's, the names each host declares for its app, and each
        host's own app name where its capabilities hold that name more often than all others
        do: an app called "weather" among other weather tools is not mentioned by "weather"."""
        aliases = self.vocabulary.app_aliases
        by_app: dict[str, list[_Segment]] = {}
        for seg in self._segments.values():
            by_app.setdefault(seg.app, []).append(seg)
            for name in seg.domain.names if seg.domain else ():
                add_alias(aliases, name, seg.app, replace=False)
        for app, segs in by_app.items():
            name = segs[0].docs[0].host_app
            terms = self.analyzer.terms(name)
            if not terms:
                continue
            inside = min(sum(s.term_counts.get(t, 0) for s in segs) for t in terms)
            # rule: a host's app name names the app where its own capabilities hold it most
            if min(self.postings.df(t) for t in terms) - inside <= inside:
                add_alias(aliases, name, app, replace=False)
        return aliases

    def name_matches(self, probe: str) -> dict[int, int]:
        """Doc number → tier for capabilities whose name or target equals `probe` or starts with it."""
        tiers: dict[int, int] = {}
        keys = self._name_keys
        pos = keys.bisect_left((probe,))
        while pos < len(keys) and len(tiers) < _MAX_PREFIX_HITS:
            key, host_key, i = keys[pos]
            if not key.startswith(probe):
                break
            gid = self._segments[host_key].base + i
            tier = TIER_EXACT if key == probe else TIER_PREFIX
            if tiers.get(gid, 0) < tier:
                tiers[gid] = tier
            pos += 1
        return tiers

    def search(
        self,
        query: str | None,
        *,
        host_key: str | None = None,
        kinds: Collection[str] | None = None,
        limit: int = 12,  # bound
        host_keys: Collection[str] | None = None,
        recent: Sequence[str] = (),
    ) -> SearchResult:
        """Best capabilities for `query` (or the whole filtered catalog, in stable order, without one).

        `host_key` searches one host, `host_keys` several (a machine's hosts); both: their overlap.
        `recent` lists host keys, the most recently used first: when a capability exists on
        several hosts and the request does not tell them apart, the most recent host's goes first."""
        if limit < 0:
            raise ValueError(f"limit must be 0 or more, got {limit}")
        kind_set = _check_kinds(kinds)
        host_scope: list[_Segment] | None = None
        counts = self._kind_counts
        if host_key is not None or host_keys is not None:
            wanted = set(host_keys) if host_keys is not None else {host_key}
            if host_key is not None:
                wanted &= {host_key}
            host_scope = sorted(
                (self._segments[k] for k in wanted if k in self._segments), key=lambda s: s.order
            )
            counts = {}
            for seg in host_scope:
                for k, c in seg.kind_counts.items():
                    counts[k] = counts.get(k, 0) + c
        kinds_available = {k: counts[k] for k in KINDS if counts.get(k)}
        if query is None or not query.strip():
            scope = host_scope if host_scope is not None else self._ordered_segments()
            return self._listing(scope, kind_set, limit, kinds_available)
        ranked = self._rank(query, host_scope, kind_set, limit, recent)
        top = ranked.hits
        suggestions = [] if ranked.total else self._suggest(query, host_scope, kind_set)
        return SearchResult(
            hits=[e.doc for e, _, _ in top],
            total=ranked.total,
            suggestions=suggestions,
            kinds_available=kinds_available,
            scores=[round(s, 6) for _, _, s in top],  # bound
            reasons=[ranked.reasons.get(e.doc.key) for e, _, _ in top],
            fired=[tuple(ranked.fired.get(e.doc.key, ())) for e, _, _ in top],
        )

    def _suggest(self, query: str, host_scope: list[_Segment] | None, kind_set: set[str] | None) -> list[str]:
        segs = host_scope if host_scope is not None else list(self._segments.values())
        terms = list({t for seg in segs for t in seg.term_counts}) if host_scope else self.postings.terms()
        names = [name for seg in segs for name in seg.names]

        def names_for(text: str, kinds: set[str] | None) -> list[str]:
            return [e.doc.name for e, _, _ in self._rank(text, host_scope, kinds, 5).hits]  # bound

        return suggest(query, kind_set, names_for, terms, names, self.analyzer.stop_words)

    def _rank(
        self,
        query: str,
        host_scope: list[_Segment] | None,
        kind_set: set[str] | None,
        limit: int,
        recent: Sequence[str] = (),
    ) -> Ranked:
        """Read the request once and rank the capabilities in scope (`host_scope`: None for all)."""
        if host_scope == [] or not self.entries:
            return Ranked()
        request = read_request(query, self.lexicon(), self.features.off)
        np = numpy_module()
        scope = np.ones(self.postings.size, dtype=bool)
        if host_scope is not None:
            scope[:] = False
            for seg in host_scope:
                scope[seg.base : seg.base + len(seg.docs)] = True
        if kind_set is not None:
            scope &= np.isin(self.postings.kind_codes(), [_KIND_RANK[k] for k in kind_set])
        return rank(self, request, self.features, scope, limit, recent)

    def _listing(
        self, scope: list[_Segment], kind_set: set[str] | None, limit: int, kinds_available: dict[str, int]
    ) -> SearchResult:
        total = sum(c for k, c in kinds_available.items() if kind_set is None or k in kind_set)
        hits: list[CapabilityDoc] = []
        for seg in scope:
            if len(hits) >= limit:
                break
            hits.extend(d for d in seg.docs if kind_set is None or d.kind in kind_set)
        hits = hits[:limit]
        return SearchResult(hits, total, [], kinds_available, [0.0] * len(hits))

    def close(self) -> None:
        """Stop the semantic layer's background work (before the process exits)."""
        if self.semantic is not None:
            self.semantic.close()

    def meaning_pending(self) -> int | None:
        """Capabilities still waiting for their vector (0: search ranks by meaning too); None when
        semantic ranking is off or cannot run here."""
        layer, vectors = self.semantic, self._vectors
        if layer is None or vectors is None or layer.error or not self.entries:
            return None
        return 0 if vectors.ready(layer, self.postings.size) is not None else max(1, len(vectors.missing))

    def semantic_sims(self, query: str) -> Any:
        """Cosine of the query with every doc number, or None when semantic ranking is off or
        not ready (a capability still waits for its vector, or the model is loading)."""
        layer = self.semantic
        if layer is None or self._vectors is None or not self.entries or layer.error:
            return None
        matrix = self._vectors.ready(layer, self.postings.size)
        if matrix is None:
            return None
        vector = layer.query_vector(query)
        if vector is None:
            return None
        # einsum, not `@`: BLAS would start threads whose spinning slows the next query's encoding
        return numpy_module().einsum("ij,j->i", matrix, vector)


def _check_kinds(kinds: Collection[str] | None) -> set[str] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    bad = sorted(set(kinds) - set(KINDS))
    if bad:
        raise ValueError(f"unknown kind(s) {bad}; use any of {list(KINDS)}")
    return set(kinds) if kinds else None


class _VectorTable:
    """Capability vectors by doc number, copied from the semantic layer's cache as they arrive."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.missing: set[int] = set()
        self.matrix: Any = None  # float32 rows by doc number, allocated with the first vector

    def add(self, base: int, docs: Sequence[CapabilityDoc], layer: SemanticLayer) -> None:
        texts = [sys.intern(semantic_text(d)) for d in docs]  # app instances share their texts
        for i, t in enumerate(texts):
            self.texts[base + i] = t
            self.missing.add(base + i)
        layer.submit(texts)

    def remove(self, base: int, n: int) -> None:
        for g in range(base, base + n):
            self.texts.pop(g, None)
            self.missing.discard(g)

    def compact(self, remap: Any) -> None:
        # rows are refilled from the layer's cache: simpler than moving them, and rare
        self.texts = {int(remap[g]): t for g, t in self.texts.items()}
        self.missing = set(self.texts)
        self.matrix = None

    def ready(self, layer: SemanticLayer, size: int) -> Any:
        """The matrix (rows 0..size-1) once every live doc has its vector, else None."""
        if self.missing:
            filled = []
            for g in self.missing:
                v = layer.vector(self.texts[g])
                if v is not None:
                    self._put(g, v, size)
                    filled.append(g)
            self.missing.difference_update(filled)
            if self.missing:  # still queued (or dropped from a full cache: ask again)
                layer.submit(self.texts[g] for g in self.missing)
                return None
        if self.matrix is None:
            return None
        if len(self.matrix) < size:
            self._grow(size)
        return self.matrix[:size]

    def _put(self, g: int, v: Any, size: int) -> None:
        if self.matrix is None:
            np = numpy_module()
            self.matrix = np.zeros((max(size, 64), len(v)), dtype=np.float32)  # bound
        elif len(self.matrix) <= g:
            self._grow(max(size, g + 1))
        self.matrix[g] = v

    def _grow(self, size: int) -> None:
        np = numpy_module()
        rows = max(size, 2 * len(self.matrix))
        grown = np.zeros((rows, self.matrix.shape[1]), dtype=np.float32)
        grown[: len(self.matrix)] = self.matrix
        self.matrix = grown
