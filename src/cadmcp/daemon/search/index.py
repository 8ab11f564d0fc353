"""The daemon's search index over every connected host's capabilities.

Ranking is field-aware BM25 (BM25F): each capability's name/target, title, description,
parameters, `_meta` keywords and host app are separate fields with their own weight and
length normalisation. On top of it: exact and prefix name matches come first, CAD/BIM
synonyms widen the query, and a query that names an app prefers that app's hosts.

The index is split into one segment per host, so replacing or removing a host touches that
host only; global document frequencies are kept up to date incrementally.
"""

from __future__ import annotations

import difflib
import heapq
import math
from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from cadmcp.daemon.search.analyzer import Analyzer, fold, split_words
from cadmcp.daemon.search.vocabulary import Vocabulary, default_vocabulary

Kind = Literal["tool", "resource", "resource_template"]
KINDS: tuple[Kind, ...] = ("tool", "resource", "resource_template")
_KIND_RANK = {k: i for i, k in enumerate(KINDS)}


@dataclass(frozen=True, slots=True)
class CapabilityDoc:
    """One searchable capability, built by the daemon from a host's list results."""

    key: str  # opaque id the daemon gives it (unique in the whole index)
    kind: Kind
    target: str  # tool name, resource URI or URI template
    name: str
    title: str | None
    description: str
    params: tuple[tuple[str, str], ...]  # (parameter name, parameter description)
    keywords: tuple[str, ...]  # extra words, e.g. from the tool's `_meta["io.cadmcp/keywords"]`
    host_app: str
    host_version: str
    host_key: str


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, with what an agent needs to page or to recover from zero hits."""

    hits: list[CapabilityDoc]
    total: int  # how many matched in all (hasMore = total > len(hits))
    suggestions: list[str]  # with no hits: closest capability names, else []
    kinds_available: dict[str, int]  # capabilities per kind in the host scope (kinds filter not applied)
    scores: list[float] = field(default_factory=list)  # one per hit; 0.0 when listing without a query


@dataclass(frozen=True, slots=True)
class _Field:
    weight: float
    b: float
    ref_len: float  # reference length for length normalisation (a typical field's length)


# name/target, title, description, parameters, keywords, host app
_FIELDS: tuple[_Field, ...] = (
    _Field(weight=3.0, b=0.5, ref_len=4.0),
    _Field(weight=2.0, b=0.5, ref_len=4.0),
    _Field(weight=1.0, b=0.75, ref_len=20.0),
    _Field(weight=0.5, b=0.75, ref_len=20.0),
    _Field(weight=1.5, b=0.3, ref_len=6.0),
    _Field(weight=0.3, b=0.0, ref_len=1.0),
)
_K1 = 1.2
_TIER_EXACT = 2
_TIER_PREFIX = 1
_MIN_PREFIX = 3
_MAX_PREFIX_HITS = 200
#: Score factor for capabilities of an app the query names ("... in the IFC model").
APP_PREFERENCE = 1.5
#: Coordination: a capability's score is scaled by (share of the query's weight it matches) ** COORD.
COORD = 0.5


def _doc_fields(doc: CapabilityDoc) -> tuple[str, ...]:
    name = doc.name if doc.target == doc.name else f"{doc.name} {doc.target}"
    params = " ".join(f"{n} {d}" for n, d in doc.params)
    return (name, doc.title or "", doc.description, params, " ".join(doc.keywords), doc.host_app)


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
    """One host's capabilities: postings with precomputed per-term BM25F saturation."""

    __slots__ = (
        "app",
        "docs",
        "host_key",
        "kind_counts",
        "names",
        "order",
        "order_keys",
        "postings",
        "prefix_idx",
        "prefix_keys",
    )

    def __init__(self, host_key: str, docs: Sequence[CapabilityDoc], analyzer: Analyzer) -> None:
        self.host_key = host_key
        self.docs = sorted(docs, key=_order_key)
        self.order_keys = [_order_key(d) for d in self.docs]
        self.app = self.docs[0].host_app.casefold() if self.docs else ""
        self.order = _order_key(self.docs[0])[:3] if self.docs else ("", "", host_key)
        self.kind_counts: dict[str, int] = {}
        postings: dict[str, list[tuple[int, float]]] = {}
        pairs: list[tuple[str, int]] = []
        for i, doc in enumerate(self.docs):
            self.kind_counts[doc.kind] = self.kind_counts.get(doc.kind, 0) + 1
            tf: dict[str, float] = {}
            for spec, text in zip(_FIELDS, _doc_fields(doc), strict=True):
                if not text:
                    continue
                terms = analyzer.terms(text)
                if not terms:
                    continue
                norm = spec.weight / (1.0 - spec.b + spec.b * len(terms) / spec.ref_len)
                for t in terms:
                    tf[t] = tf.get(t, 0.0) + norm
            for t, x in tf.items():
                postings.setdefault(t, []).append((i, x * (_K1 + 1.0) / (x + _K1)))
            for text in {doc.name, doc.target}:
                pairs.append((fold(text).casefold(), i))
                pairs.append((" ".join(split_words(text)), i))
        self.postings = postings
        pairs = sorted(set(pairs))
        self.prefix_keys = [p[0] for p in pairs]
        self.prefix_idx = [p[1] for p in pairs]
        self.names = sorted({d.name for d in self.docs})

    def name_matches(self, probe: str) -> tuple[set[int], set[int]]:
        """Local indexes whose name/target equals `probe`, and those it is a prefix of."""
        exact: set[int] = set()
        prefix: set[int] = set()
        if not probe:
            return exact, prefix
        keys = self.prefix_keys
        pos = bisect_left(keys, probe)
        while pos < len(keys) and keys[pos].startswith(probe) and len(prefix) < _MAX_PREFIX_HITS:
            (exact if keys[pos] == probe else prefix).add(self.prefix_idx[pos])
            pos += 1
        return exact, prefix - exact


class SearchIndex:
    """Merged, per-host search index over capabilities (tools, resources, resource templates)."""

    def __init__(self, vocabulary: Vocabulary | None = None) -> None:
        self.vocabulary = vocabulary or default_vocabulary()
        self.analyzer = self.vocabulary.analyzer
        self._segments: dict[str, _Segment] = {}
        self._df: dict[str, int] = {}
        self._n = 0
        self._app_aliases: dict[tuple[str, ...], str] | None = None

    def __len__(self) -> int:
        return self._n

    @property
    def host_keys(self) -> list[str]:
        """Keys of the hosts indexed, sorted."""
        return sorted(self._segments)

    def docs(self) -> Iterable[CapabilityDoc]:
        """Every capability in the index, in listing order."""
        for seg in sorted(self._segments.values(), key=lambda s: s.order):
            yield from seg.docs

    def replace_host(self, host_key: str, docs: Sequence[CapabilityDoc]) -> None:
        """Index (or re-index) one host's whole catalog; other hosts are untouched."""
        for doc in docs:
            if doc.host_key != host_key:
                raise ValueError(f"capability {doc.key!r} belongs to host {doc.host_key!r}, not {host_key!r}")
            if doc.kind not in _KIND_RANK:
                raise ValueError(f"capability {doc.key!r} has unknown kind {doc.kind!r}; use one of {KINDS}")
        segment = _Segment(host_key, docs, self.analyzer)  # built before the swap: search never sees half
        self.remove_host(host_key)
        if not segment.docs:
            return
        self._segments[host_key] = segment
        self._n += len(segment.docs)
        df = self._df
        for t, plist in segment.postings.items():
            df[t] = df.get(t, 0) + len(plist)
        self._app_aliases = None

    def remove_host(self, host_key: str) -> None:
        """Drop one host's capabilities (no-op for an unknown host)."""
        segment = self._segments.pop(host_key, None)
        if segment is None:
            return
        self._n -= len(segment.docs)
        df = self._df
        for t, plist in segment.postings.items():
            left = df[t] - len(plist)
            if left:
                df[t] = left
            else:
                del df[t]
        self._app_aliases = None

    def _aliases(self) -> dict[tuple[str, ...], str]:
        """App aliases: the vocabulary's, plus each host's own app name where that name is
        distinctive (rare outside the app's own capabilities), so that an app called "find" or
        "weather" is not mistaken for a mention of the app."""
        if self._app_aliases is None:
            aliases = self.vocabulary.app_aliases
            by_app: dict[str, list[_Segment]] = {}
            for seg in self._segments.values():
                by_app.setdefault(seg.app, []).append(seg)
            for app, segs in by_app.items():
                words = tuple(split_words(segs[0].docs[0].host_app))
                terms = self.analyzer.terms_of_words(words)
                if not words or not terms or words in aliases:
                    continue
                inside = sum(len(s.docs) for s in segs)
                outside_n = self._n - inside
                outside_df = min(self._df.get(t, 0) for t in terms) - min(
                    sum(len(s.postings.get(t, ())) for s in segs) for t in terms
                )
                if outside_df <= max(2, 0.01 * outside_n):
                    aliases[words] = app
            self._app_aliases = aliases
        return self._app_aliases

    def _scope(self, host_key: str | None) -> list[_Segment]:
        if host_key is None:
            return list(self._segments.values())
        seg = self._segments.get(host_key)
        return [seg] if seg is not None else []

    def search(
        self,
        query: str | None,
        *,
        host_key: str | None = None,
        kinds: Collection[str] | None = None,
        limit: int = 12,
    ) -> SearchResult:
        """Best capabilities for `query` (or the whole filtered catalog, in stable order, without one)."""
        if limit < 0:
            raise ValueError(f"limit must be 0 or more, got {limit}")
        kind_set = _check_kinds(kinds)
        scope = self._scope(host_key)
        kinds_available: dict[str, int] = {}
        for seg in scope:
            for k, c in seg.kind_counts.items():
                kinds_available[k] = kinds_available.get(k, 0) + c
        kinds_available = {k: kinds_available[k] for k in KINDS if k in kinds_available}
        if query is None or not query.strip():
            return self._listing(scope, kind_set, limit, kinds_available)
        ranked = self._rank(query, scope, kind_set)
        top = heapq.nsmallest(limit, ranked, key=lambda r: r[0])
        hits = [r[1] for r in top]
        suggestions: list[str] = []
        if not ranked:
            suggestions = self._suggest(query, scope, kind_set)
        return SearchResult(
            hits=hits,
            total=len(ranked),
            suggestions=suggestions,
            kinds_available=kinds_available,
            scores=[round(-r[0][1], 6) for r in top],
        )

    def _listing(
        self, scope: list[_Segment], kind_set: set[str] | None, limit: int, kinds_available: dict[str, int]
    ) -> SearchResult:
        hits: list[CapabilityDoc] = []
        total = 0
        for seg in sorted(scope, key=lambda s: s.order):
            for doc in seg.docs:
                if kind_set is None or doc.kind in kind_set:
                    total += 1
                    if len(hits) < limit:
                        hits.append(doc)
        return SearchResult(hits, total, [], kinds_available, [0.0] * len(hits))

    def _query_terms(self, words: list[str]) -> dict[str, float]:
        terms = self.analyzer.terms_of_words(words)
        if not terms:  # only stop words ("what is this"): use them rather than nothing
            terms = [self.analyzer.stem(w) for w in words]
        weights = self.vocabulary.expand(words)
        for t in terms:
            weights[t] = 1.0
        return weights

    def _rank(
        self, query: str, scope: list[_Segment], kind_set: set[str] | None
    ) -> list[tuple[tuple[float, float, tuple[str, str, str, int, str, str]], CapabilityDoc]]:
        words = split_words(query)
        qterms = self._query_terms(words)
        n = self._n
        df = self._df
        weighted = [
            (t, w * math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))) for t, w in qterms.items() if t in df
        ]
        preferred = Vocabulary.app_mentions(words, self._aliases()) if words else set()
        probes = {p for p in (fold(query).strip().casefold(), " ".join(words)) if len(p) >= _MIN_PREFIX}
        app_terms = {self.analyzer.stem(w) for w in words if (w,) in self._aliases()}
        total_w = sum(w for t, w in weighted if qterms[t] >= 1.0 and t not in app_terms) or 1.0
        ranked = []
        for seg in scope:
            acc: dict[int, float] = {}
            cov: dict[int, float] = {}
            get = acc.get
            cget = cov.get
            for t, w in weighted:
                plist = seg.postings.get(t)
                if plist:
                    for i, s in plist:
                        acc[i] = get(i, 0.0) + w * s
                        cov[i] = cget(i, 0.0) + w
            tiers: dict[int, int] = {}
            for probe in probes:
                exact, prefix = seg.name_matches(probe)
                for i in prefix:
                    tiers[i] = max(tiers.get(i, 0), _TIER_PREFIX)
                for i in exact:
                    tiers[i] = _TIER_EXACT
            if not acc and not tiers:
                continue
            boost = APP_PREFERENCE if seg.app in preferred else 1.0
            docs = seg.docs
            for i in acc.keys() | tiers.keys():
                doc = docs[i]
                if kind_set is not None and doc.kind not in kind_set:
                    continue
                score = acc.get(i, 0.0) * boost
                if score and COORD:
                    score *= min(1.0, cov[i] / total_w) ** COORD
                ranked.append(((-tiers.get(i, 0), -score, seg.order_keys[i]), doc))
        return ranked

    def _suggest(self, query: str, scope: list[_Segment], kind_set: set[str] | None) -> list[str]:
        """Guidance for zero hits: names found with the kinds filter lifted or with spelling fixed."""
        out: list[str] = []
        if kind_set is not None:
            wider = self._rank(query, scope, None)
            out.extend(doc.name for _, doc in heapq.nsmallest(5, wider, key=lambda r: r[0]))
        if len(out) < 5:
            vocab = list(self._df)
            fixed: list[str] = []
            for w in split_words(query):
                if w in self.analyzer.stop_words:
                    continue
                fixed.extend(difflib.get_close_matches(self.analyzer.stem(w), vocab, n=2, cutoff=0.75))
            if fixed:
                ranked = self._rank(" ".join(fixed), scope, kind_set)
                out.extend(doc.name for _, doc in heapq.nsmallest(5, ranked, key=lambda r: r[0]))
        if len(out) < 5:
            names = sorted({name for seg in scope for name in seg.names})
            out.extend(difflib.get_close_matches(fold(query).strip(), names, n=5, cutoff=0.5))
        return list(dict.fromkeys(out))[:5]


def _check_kinds(kinds: Collection[str] | None) -> set[str] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    bad = sorted(set(kinds) - set(KINDS))
    if bad:
        raise ValueError(f"unknown kind(s) {bad}; use any of {list(KINDS)}")
    return set(kinds) if kinds else None
