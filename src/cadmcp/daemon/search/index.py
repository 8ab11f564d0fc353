"""The daemon's search index over every connected host's capabilities.

Ranking is field-aware BM25 (BM25F): each capability's name/target, title, description,
parameters, `_meta` keywords and host app are separate fields with their own weight and
length normalisation. On top of it: exact and prefix name matches come first, CAD/BIM
synonyms widen the query, and a query that names an app prefers that app's hosts.

Each host is analysed on its own and appended to shared postings (`postings.py`), so
replacing or removing a host costs time in proportion to that host; document frequencies
are kept up to date incrementally.
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sortedcontainers import SortedList

from cadmcp.daemon.search.analyzer import Analyzer, fold, split_words, token_key, without_names
from cadmcp.daemon.search.domain import HostDomain
from cadmcp.daemon.search.postings import Postings, numpy_module
from cadmcp.daemon.search.semantic import semantic_text
from cadmcp.daemon.search.vocabulary import Vocabulary, alias_forms, default_vocabulary

if TYPE_CHECKING:
    from cadmcp.daemon.search.semantic import SemanticLayer

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
    fallback: tuple[str, ...] = ()  # intents it stands in for (`_meta["io.cadmcp/fallback"]`)
    read_only: bool = False  # a tool annotated readOnlyHint (resources and templates always read)


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, with what an agent needs to page or to recover from zero hits."""

    hits: list[CapabilityDoc]
    total: int  # how many matched in all (hasMore = total > len(hits))
    suggestions: list[str]  # with no hits: closest capability names, else []
    kinds_available: dict[str, int]  # capabilities per kind in the host scope (kinds filter not applied)
    scores: list[float] = field(default_factory=list)  # one per hit; 0.0 when listing without a query
    reasons: list[str | None] = field(default_factory=list)  # per hit: why it ranked above its twins


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
    _Field(weight=3.0, b=0.5, ref_len=4.0),
    _Field(weight=2.0, b=0.5, ref_len=4.0),
    _Field(weight=1.0, b=0.75, ref_len=20.0),
    _Field(weight=0.5, b=0.75, ref_len=20.0),
    _Field(weight=1.5, b=0.3, ref_len=6.0),
    _Field(weight=0.3, b=0.0, ref_len=1.0),
    _Field(weight=1.0, b=0.5, ref_len=4.0),
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
#: Second stage: the best RERANK_DEPTH first-stage matches are re-scored by how much of their
#: name (IDF-weighted name words) the query covers: score × (1 + NAME_COVERAGE × share).
RERANK_DEPTH = 30
NAME_COVERAGE = 0.5
#: Semantic fusion (with a `SemanticLayer`): the lexical matches (scaled to the best one) and
#: the SEMANTIC_DEPTH capabilities most similar to the query (cosine >= SEMANTIC_MIN) are
#: ranked by FUSION_ALPHA × lexical + (1 − FUSION_ALPHA) × cosine; by FUSION_ALPHA_DOMAIN when
#: the request names an app or uses an app's declared domain words: the lexical side then
#: carries what hosts and the vocabulary know about the domain, which the model does not.
FUSION_ALPHA = 0.15
FUSION_ALPHA_DOMAIN = 0.35
SEMANTIC_DEPTH = 10
SEMANTIC_MIN = 0.2
#: Score factor for capabilities of the app whose declared domain words the query uses most
#: ("layer", "block" → the drawing host; "storey", "slab" → the building-model host).
DOMAIN_PREFERENCE = 1.3
#: Score factor for capabilities that only read (resources, readOnlyHint tools) when the request
#: is a question ("which documents are open" wants the listing, not `open_document`).
QUESTION_READ_PREFERENCE = 1.5
#: Twins (one capability on several hosts) whose scores are within this ratio count as tied;
#: the host invoked most recently then goes first.
TWIN_TIE = 0.8
#: A fallback tool lifted to the top scores this much above the best specific match.
FALLBACK_LIFT = 1.02
#: ... unless a specific capability holds this share (IDF-weighted) of the request's other words.
FALLBACK_COVERAGE = 0.6


_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _own_target(doc: CapabilityDoc) -> str:
    """The target's own words: a URI template's `{placeholders}` name what the caller supplies
    (they are its parameters), not what the capability is or does."""
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
        "head_terms",
        "host_key",
        "kind_counts",
        "name_keys",
        "name_terms",
        "names",
        "order",
        "postings",
        "term_counts",
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
        self.name_terms: list[frozenset[str]] = []  # per doc, for the second-stage re-rank
        self.head_terms: list[frozenset[str]] = []  # per doc: name, title and keyword terms
        postings: dict[str, tuple[list[int], list[float]]] = {}
        keys: list[tuple[str, str, int]] = []
        for i, doc in enumerate(self.docs):
            self.kind_counts[doc.kind] = self.kind_counts.get(doc.kind, 0) + 1
            weights, name_keys, name_terms, head_terms = analysis.of(doc)
            self.name_terms.append(name_terms)
            self.head_terms.append(head_terms)
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


_Analysed = tuple[tuple[tuple[str, float], ...], tuple[str, ...], frozenset[str], frozenset[str]]


class _Analysis:
    """A capability's BM25F term weights and name keys, cached by content: a host re-lists
    mostly unchanged capabilities, and several instances of one app list the same ones."""

    def __init__(self, analyzer: Analyzer, size: int = 50_000) -> None:
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
        weights = tuple((t, x * (_K1 + 1.0) / (x + _K1)) for t, x in tf.items())
        keys: set[str] = set()
        for text in (doc.name, doc.target):
            keys.add(fold(text).casefold())
            keys.add(" ".join(split_words(text)))
        name_terms = frozenset(t for t in self.analyzer.terms(fields[0]) if not t.isdigit())
        head_terms = name_terms | frozenset(self.analyzer.terms(f"{fields[1]} {fields[4]}"))
        result = (weights, tuple(sorted(keys)), name_terms, head_terms)
        if len(self._cache) >= self._size:
            self._cache.clear()
        self._cache[content] = result
        return result


@dataclass(frozen=True, slots=True)
class _Entry:
    doc: CapabilityDoc
    order: tuple[str, str, str, int, str, str]
    name_terms: frozenset[str]  # analysed terms of the name and target
    head_terms: frozenset[str]  # name, target, title and keyword terms


@dataclass(frozen=True, slots=True)
class _AppDomain:
    """One app's declared domain terms, analysed: phrases by their first term."""

    app: str  # casefolded
    # first term → (terms, words, text as declared): a phrase matches where the request has its
    # terms as inflections of its words (see `_inflection`)
    phrases: dict[str, list[tuple[tuple[str, ...], tuple[str, ...], str]]]
    # one-word terms by their first four letters → (word, its terms, text as declared): plurals
    # the English stemmer does not fold ("Decken" of "Decke", "Stützen" of "Stütze")
    singles: dict[str, list[tuple[str, tuple[str, ...], str]]]


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


_Hit = tuple[_Entry, int, float]  # entry, name tier, score


class SearchIndex:
    """Merged search index over every host's capabilities (tools, resources, resource templates).

    Each host is analysed on its own (`replace_host`) and appended to shared postings, so
    re-indexing one host costs time in proportion to that host only.
    """

    def __init__(self, vocabulary: Vocabulary | None = None, semantic: SemanticLayer | None = None) -> None:
        self.vocabulary = vocabulary or default_vocabulary()
        self.semantic = semantic
        self._vectors = _VectorTable() if semantic is not None else None
        self.analyzer = self.vocabulary.analyzer
        self._analysis = _Analysis(self.analyzer)
        self._segments: dict[str, _Segment] = {}
        self._postings = Postings()
        self._entries: dict[int, _Entry] = {}
        self._name_keys: SortedList = SortedList()
        self._app_ids: dict[str, int] = {}
        self._kind_counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._app_aliases: dict[tuple[str, ...], str] | None = None
        self._domains: list[_AppDomain] | None = None
        self._domain_tokens: frozenset[str] = frozenset()
        self._order: list[_Segment] | None = None  # segments in listing order, when known
        self._fallbacks: dict[int, tuple[str, ...]] = {}  # doc number → intents it stands in for
        self._read_only: set[int] = set()  # doc numbers of capabilities that only read
        self._heads: dict[str, set[int]] = {}  # head term → doc numbers

    def __len__(self) -> int:
        return len(self._entries)

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
        segment = _Segment(host_key, docs, self._analysis, self._postings.size, domain)
        self._remove(host_key)
        if segment.docs:
            self._add(segment)
        if self._postings.needs_compaction:
            self._compact()

    def _add(self, segment: _Segment) -> None:
        app_id = self._app_ids.setdefault(segment.app, len(self._app_ids))
        assert segment.postings is not None
        self._postings.add(
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
            self._entries[gid] = _Entry(doc, _order_key(doc), segment.name_terms[i], segment.head_terms[i])
            if doc.fallback:
                self._fallbacks[gid] = doc.fallback
            if doc.read_only or doc.kind != "tool":
                self._read_only.add(gid)
            for t in segment.head_terms[i]:
                self._heads.setdefault(t, set()).add(gid)
        self._name_keys.update(segment.name_keys)
        self._app_aliases = None
        self._domains = None
        self._order = None
        if self._vectors is not None and self.semantic is not None:
            self._vectors.add(segment.base, segment.docs, self.semantic)

    def remove_host(self, host_key: str) -> None:
        """Drop one host's capabilities (no-op for an unknown host)."""
        self._remove(host_key)
        if self._postings.needs_compaction:
            self._compact()

    def _remove(self, host_key: str) -> None:
        segment = self._segments.pop(host_key, None)
        if segment is None:
            return
        self._postings.remove(segment.base, len(segment.docs), segment.term_counts)
        for k, c in segment.kind_counts.items():
            self._kind_counts[k] -= c
        for i in range(len(segment.docs)):
            gid = segment.base + i
            del self._entries[gid]
            self._fallbacks.pop(gid, None)
            self._read_only.discard(gid)
            for t in segment.head_terms[i]:
                heads = self._heads[t]
                heads.discard(gid)
                if not heads:
                    del self._heads[t]
        for key in segment.name_keys:
            self._name_keys.remove(key)
        if self._vectors is not None:
            self._vectors.remove(segment.base, len(segment.docs))
        self._app_aliases = None
        self._domains = None
        self._order = None

    def _compact(self) -> None:
        remap = self._postings.compact()
        for seg in self._segments.values():
            seg.base = int(remap[seg.base])
        self._entries = {int(remap[g]): e for g, e in self._entries.items()}
        self._fallbacks = {int(remap[g]): f for g, f in self._fallbacks.items()}
        self._read_only = {int(remap[g]) for g in self._read_only}
        self._heads = {t: {int(remap[g]) for g in gs} for t, gs in self._heads.items()}
        if self._vectors is not None:
            self._vectors.compact(remap)

    def _aliases(self) -> dict[tuple[str, ...], str]:
        """App aliases: the vocabulary's, plus each host's own app name where that name is
        distinctive (rare outside the app's own capabilities), so that an app called "find" or
        "weather" is not mistaken for a mention of the app."""
        if self._app_aliases is None:
            aliases = self.vocabulary.app_aliases
            by_app: dict[str, list[_Segment]] = {}
            for seg in self._segments.values():
                by_app.setdefault(seg.app, []).append(seg)
            n = len(self._entries)
            for app, segs in by_app.items():
                for seg in segs:
                    for name in seg.domain.names if seg.domain else ():
                        for words in alias_forms(name):
                            aliases.setdefault(words, app)
            for app, segs in by_app.items():
                forms = alias_forms(segs[0].docs[0].host_app)
                words = forms[0] if forms else ()
                terms = self.analyzer.terms_of_words(words)
                if not words or not terms or words in aliases:
                    continue
                inside = sum(len(s.docs) for s in segs)
                outside_df = min(self._postings.df(t) for t in terms) - min(
                    sum(s.term_counts.get(t, 0) for s in segs) for t in terms
                )
                if outside_df <= max(2, 0.01 * (n - inside)):
                    for form in forms:
                        aliases.setdefault(form, app)
            self._app_aliases = aliases
        return self._app_aliases

    def _name_matches(self, probe: str) -> dict[int, int]:
        """Doc number → tier for capabilities whose name or target equals `probe` or starts with it."""
        tiers: dict[int, int] = {}
        keys = self._name_keys
        pos = keys.bisect_left((probe,))
        while pos < len(keys) and len(tiers) < _MAX_PREFIX_HITS:
            key, host_key, i = keys[pos]
            if not key.startswith(probe):
                break
            gid = self._segments[host_key].base + i
            tier = _TIER_EXACT if key == probe else _TIER_PREFIX
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
        limit: int = 12,
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
        reasons: dict[str, str] = {}
        top, total = self._rank(query, host_scope, kind_set, limit, recent, reasons)
        suggestions = [] if total else self._suggest(query, host_scope, kind_set)
        return SearchResult(
            hits=[e.doc for e, _, _ in top],
            total=total,
            suggestions=suggestions,
            kinds_available=kinds_available,
            scores=[round(s, 6) for _, _, s in top],
            reasons=[reasons.get(e.doc.key) for e, _, _ in top],
        )

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

    def _query_terms(self, words: list[str]) -> dict[str, float]:
        terms = self.analyzer.terms_of_words(words)
        if not terms:  # only stop words ("what is this"): use them rather than nothing
            terms = [self.analyzer.stem(w) for w in words]
        weights = self.vocabulary.expand(words)
        for t in terms:
            weights[t] = 1.0
        return weights

    def _rank(
        self,
        query: str,
        host_scope: list[_Segment] | None,
        kind_set: set[str] | None,
        limit: int,
        recent: Sequence[str] = (),
        reasons: dict[str, str] | None = None,
    ) -> tuple[list[_Hit], int]:
        """The best `limit` matches as (entry, name tier, score), and how many matched in all;
        `reasons` gets, by capability key, why a hit ranked above its twins.

        `host_scope` is the hosts searched, or None for all."""
        reasons = {} if reasons is None else reasons
        if host_scope == []:
            return [], 0
        words = split_words(query)
        states = self.vocabulary.state_words(words)  # "all open files": a state, not "open"
        qterms = self._query_terms([w for i, w in enumerate(words) if i not in states] or words)
        postings = self._postings
        n = len(self._entries)
        aliases = self._aliases()
        app_terms = {self.analyzer.stem(w) for w in words if (w,) in aliases}
        weighted: list[tuple[str, float]] = []
        total_w = 0.0
        for t, qw in qterms.items():
            df = postings.df(t)
            if not df:
                continue
            w = qw * math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            weighted.append((t, w))
            if qw >= 1.0 and t not in app_terms:  # coverage is measured against the words typed
                total_w += w
        tiers: dict[int, int] = {}
        for probe in {fold(query).strip().casefold(), " ".join(words)}:
            if len(probe) >= _MIN_PREFIX:
                for gid, tier in self._name_matches(probe).items():
                    tiers[gid] = max(tier, tiers.get(gid, 0))
        # a query that is a capability's exact name needs no model (and skips its ~30 ms)
        sims = None if _TIER_EXACT in tiers.values() else self._semantic_sims(query)
        if not weighted and not tiers and sims is None and not self._fallbacks:
            return [], 0
        np = numpy_module()
        acc, cov, scope = self._score(weighted, any(not t.isdigit() for t in qterms))
        if host_scope is not None:
            in_scope = np.zeros_like(scope)
            for seg in host_scope:
                in_scope[seg.base : seg.base + len(seg.docs)] = True
            scope &= in_scope
        if kind_set is not None:
            scope &= np.isin(postings.kind_codes(), [_KIND_RANK[k] for k in kind_set])
        mask = scope & (acc > 0)
        final = acc
        if total_w and COORD:
            final = acc * np.minimum(1.0, cov * (1.0 / total_w)) ** COORD
        preferred = Vocabulary.app_mentions(words, aliases) if words else set()
        single_host = host_scope is not None and len(host_scope) == 1
        inferred, domain_words = (set(), {}) if preferred or single_host else self._domain_apps(query)
        # preferences: `boost` scales lexical scores; `fused_boost` (what the request's domain
        # words and question form say, not a mentioned app name) also scales fused scores
        boost = fused_boost = None
        # "Pad001 ..." names a pad, it does not pad; "EXPLODE all blocks" still explodes
        said = split_words(without_names(query, keep=self.vocabulary.verbs))
        # "show me all open files" asks which are open, as "which files are open" does
        shows_state = bool(states) and self.vocabulary.asks_to_show(words)
        asks = shows_state or self.vocabulary.is_question(query, words, said)
        question = bool(self._read_only) and asks
        if inferred or question:
            fused_boost = np.ones(len(final))
            if inferred:
                ids = [self._app_ids[a] for a in inferred if a in self._app_ids]
                fused_boost[np.isin(postings.app_codes(), ids)] *= DOMAIN_PREFERENCE
            if question:
                fused_boost[list(self._read_only)] *= QUESTION_READ_PREFERENCE
            boost = fused_boost.copy()
        pref_ids = [self._app_ids[a] for a in preferred if a in self._app_ids]
        if pref_ids:
            boost = np.ones(len(final)) if boost is None else boost
            boost[np.isin(postings.app_codes(), pref_ids)] *= APP_PREFERENCE
        if boost is not None:
            final = final * boost
        idx = np.flatnonzero(mask)
        total = len(idx)
        depth = max(limit, RERANK_DEPTH if NAME_COVERAGE else 0, 1)
        if len(idx) > depth:
            vals = final[idx]
            cut = len(idx) - depth
            idx = idx[vals >= np.partition(vals, cut)[cut]]
        pool: dict[int, float] = {int(g): float(final[g]) for g in idx}
        if NAME_COVERAGE and pool:
            pool = self._rerank(pool, qterms)
        tiers = {g: t for g, t in tiers.items() if scope[g]}
        if sims is not None:
            alpha = FUSION_ALPHA_DOMAIN if preferred or inferred else FUSION_ALPHA
            pool, added = self._fuse(pool, final, mask, scope, sims, tiers, fused_boost, alpha)
            total += added
        for gid in tiers:
            if gid not in pool:
                total += not mask[gid]
                pool[gid] = float(final[gid]) if mask[gid] else 0.0
        if self._fallbacks and words:
            typed = [(t, w) for t, w in weighted if qterms[t] >= 1.0 and t not in app_terms]
            total += self._lift_fallbacks(
                pool, said, typed, scope, mask, preferred | inferred, reasons, question=asks
            )
        hits = [(self._entries[g], tiers.get(g, 0), s) for g, s in pool.items()]
        hits.sort(key=lambda h: (-h[1], -h[2], h[0].order))
        hits = self._order_twins(hits, preferred, inferred, domain_words, recent, reasons)
        return hits[:limit], total

    def _app_domains(self) -> list[_AppDomain]:
        """Every app's declared domain terms (merged over its hosts), analysed once per change."""
        if self._domains is None:
            stop = self.analyzer.stop_words
            merged: dict[str, dict[tuple[str, ...], str]] = {}
            for seg in self._segments.values():
                if seg.domain is None or not seg.domain.terms:
                    continue
                phrases = merged.setdefault(seg.app, {})
                for text in seg.domain.terms:
                    words = tuple(w for w in split_words(text) if w not in stop)
                    if words:
                        phrases.setdefault(words, text)
            domains = []
            for app, phrases in sorted(merged.items()):
                by_first: dict[str, list[tuple[tuple[str, ...], tuple[str, ...], str]]] = {}
                singles: dict[str, list[tuple[str, tuple[str, ...], str]]] = {}
                for words, text in phrases.items():
                    terms = tuple(self.analyzer.terms_of_words(words))
                    by_first.setdefault(terms[0], []).append((terms, words, text))
                    if len(words) == 1 and len(words[0]) >= 4:
                        singles.setdefault(words[0][:4], []).append((words[0], terms, text))
                domains.append(_AppDomain(app, by_first, singles))
            self._domains = domains
            # declared words typed as names would be (STEP, IGES, 3D) stay words of the domain
            self._domain_tokens = frozenset(
                token_key(token)
                for texts in merged.values()
                for text in texts.values()
                for token in text.split()
            )
        return self._domains

    def _domain_apps(self, query: str) -> tuple[set[str], dict[str, list[str]]]:
        """The apps whose declared domain words the query uses most (distinct words, a phrase
        counting by its length; none when every app with a domain ties), and the words matched."""
        domains = self._app_domains()
        if len(domains) < 2:
            return set(), {}
        stop = self.analyzer.stop_words
        kept = without_names(query, keep_object_types=True, keep=self._domain_tokens)
        typed = [w for w in split_words(kept) if w not in stop]
        seq = self.analyzer.terms_of_words(typed)
        found: dict[str, dict[tuple[str, ...], str]] = {}
        for d in domains:
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
            return set(), {}
        covered = {app: sum(len(t) for t in phrases) for app, phrases in found.items()}
        matched = {app: list(phrases.values()) for app, phrases in found.items()}
        best = max(covered.values())
        winners = {a for a, n in covered.items() if n == best}
        return (set() if len(winners) == len(domains) else winners), matched

    def _lift_fallbacks(
        self,
        pool: dict[int, float],
        words: list[str],
        typed: list[tuple[str, float]],
        scope: Any,
        mask: Any,
        apps: set[str],
        reasons: dict[str, str],
        question: bool = False,
    ) -> int:
        """Put a host's fallback tool first when the request asks for a change (or a computed
        answer) that no dedicated capability is named for; returns how many were not matches.
        A question asks for no change ("boolean cut failed in the body, why?")."""
        intents = self.vocabulary.intents(words)
        if question:
            intents.pop("change", None)
        if not intents:
            if pool or not apps:
                return 0
            # nothing matched a request in an app's domain ("zeichne eine Linie"): that app's
            # general-purpose tool is the one capability that may do it
            lift = [
                g for g in self._fallbacks if scope[g] and self._entries[g].doc.host_app.casefold() in apps
            ]
            for g in lift:
                pool[g] = 1.0
                reasons[self._entries[g].doc.key] = "general-purpose tool: nothing specific matches"
            return len(lift)
        lift = [
            g
            for g, kinds in self._fallbacks.items()
            if scope[g]
            and any(k in intents for k in kinds)
            and (not apps or self._entries[g].doc.host_app.casefold() in apps)
        ]
        if not lift:
            return 0
        asked = [(text, phrases) for k, found in intents.items() for text, phrases in found]
        asked_terms = {t for _, phrases in asked for phrase in phrases for t in phrase}

        def specific(g: int) -> bool:
            return (
                bool(scope[g])
                and g not in self._fallbacks
                and (not apps or self._entries[g].doc.host_app.casefold() in apps)
            )

        rest = [(t, w) for t, w in typed if t not in asked_terms]
        # a question for a quantity (area, volume ...) is answered only by what says that
        # quantity: counting walls is no total wall area
        measures = [t for t in self.analyzer.terms_of_words(words) if t in self.vocabulary.measure_terms]
        says = (
            self._postings.score([(t, 1.0) for t in measures])[1]
            if measures and "change" not in intents
            else None
        )
        for _, phrases in asked:
            for phrase in phrases:  # all of a phrase's terms: "change name" is not named by "change"
                named = set.intersection(*(self._heads.get(t, set()) for t in phrase))
                if any(specific(g) and (says is None or says[g] > 0) for g in named):
                    return 0  # a capability is named for what was asked: it ranks on its own
        # a question (not a change) that a capability answers by matching most of its other
        # words ("how many entities per layer") goes to that capability
        if "change" not in intents and rest and pool:
            _, covered, _ = self._postings.score(rest)
            need = FALLBACK_COVERAGE * sum(w for _, w in rest)
            if any(covered[g] >= need and (says is None or says[g] > 0) and specific(g) for g in pool):
                return 0
        top = max(pool.values(), default=0.0) or 1.0
        added = 0
        for g in lift:
            added += g not in pool and not mask[g]
            pool[g] = top * FALLBACK_LIFT
            reasons[self._entries[g].doc.key] = (
                f"general-purpose tool: no dedicated capability for {asked[0][0]!r}"
            )
        return added

    def _order_twins(
        self,
        hits: list[_Hit],
        named: set[str],
        inferred: set[str],
        domain_words: dict[str, list[str]],
        recent: Sequence[str],
        reasons: dict[str, str],
    ) -> list[_Hit]:
        """Order each group of twins (one capability on several hosts): the app the request names
        or whose words it uses first; between tied twins, the most recently used host first."""
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (e, _, _) in enumerate(hits):
            groups.setdefault((e.doc.kind, e.doc.target), []).append(i)
        rank = {k: i for i, k in enumerate(recent)}
        out = list(hits)
        for positions in groups.values():
            if len(positions) < 2:
                continue
            members = [hits[i] for i in positions]
            apps = {m[0].doc.host_app.casefold() for m in members}
            chosen = (named & apps) or (inferred & apps)
            first = members[0]
            why = None
            if chosen and apps - chosen:
                members.sort(key=lambda m: (-m[1], m[0].doc.host_app.casefold() not in chosen))
                app = members[0][0].doc.host_app
                if named & apps:
                    why = f"the request names {app}"
                else:
                    said = ", ".join(repr(w) for w in domain_words.get(app.casefold(), [])[:3])
                    why = f"{app} words in the request: {said}"
            else:
                tied = [m for m in members if m[1] == first[1] and m[2] >= TWIN_TIE * first[2]]
                if len(tied) > 1 and any(m[0].doc.host_key in rank for m in tied):
                    tied.sort(key=lambda m: rank.get(m[0].doc.host_key, len(rank)))
                    members = tied + [m for m in members if m not in tied]
                    if members[0][0].doc.host_key in rank:
                        why = "its host was used most recently"
                elif first[2] > members[1][2] or first[1] > members[1][1]:
                    why = "closer match to the request than its twins"
            for i, m in zip(positions, members, strict=True):
                out[i] = m
            key = members[0][0].doc.key
            if why and key not in reasons:
                reasons[key] = why
        return out

    def close(self) -> None:
        """Stop the semantic layer's background work (before the process exits)."""
        if self.semantic is not None:
            self.semantic.close()

    def _semantic_sims(self, query: str) -> Any:
        """Cosine of the query with every doc number, or None when semantic ranking is off or
        not ready (a capability still waits for its vector, or the model is loading)."""
        layer = self.semantic
        if layer is None or self._vectors is None or not self._entries or layer.error:
            return None
        matrix = self._vectors.ready(layer, self._postings.size)
        if matrix is None:
            return None
        vector = layer.query_vector(query)
        if vector is None:
            return None
        # einsum, not `@`: BLAS would start threads whose spinning slows the next query's encoding
        return numpy_module().einsum("ij,j->i", matrix, vector)

    def _fuse(
        self,
        pool: dict[int, float],
        final: Any,
        mask: Any,
        scope: Any,
        sims: Any,
        tiers: dict[int, int],
        boost: Any = None,
        alpha: float = FUSION_ALPHA,
    ) -> tuple[dict[int, float], int]:
        """Lexical pool + the most similar capabilities in scope, scored by the fusion formula;
        also returns how many candidates were not lexical matches."""
        np = numpy_module()
        cand = set(pool) | set(tiers)
        s = np.where(scope, sims, -np.inf)
        k = min(SEMANTIC_DEPTH, len(s))
        if k:
            for g in np.argpartition(-s, k - 1)[:k]:
                if s[g] >= SEMANTIC_MIN:
                    cand.add(int(g))
        top = max(pool.values(), default=0.0)
        out: dict[int, float] = {}
        added = 0
        for g in cand:
            lex = pool.get(g)
            if lex is None:
                lex = float(final[g]) if mask[g] else 0.0
                added += not mask[g]
            share = min(1.0, lex / top) if top > 0 else 0.0
            out[g] = alpha * share + (1.0 - alpha) * float(sims[g])
            if boost is not None:
                out[g] *= float(boost[g])
        return out, added

    def _score(self, weighted: list[tuple[str, float]], has_words: bool) -> tuple[Any, Any, Any]:
        """BM25F scores, matched weight and liveness per doc number. In a request with words, its
        numbers (sizes, coordinates, ids) count only where one of its words matched too: alone
        they meet version strings and example values ("0,0" → "FreeCAD 0.20.2")."""
        words = [(t, w) for t, w in weighted if not t.isdigit()]
        if not has_words or len(words) == len(weighted):
            return self._postings.score(weighted)
        np = numpy_module()
        acc, cov, alive = self._postings.score(words)
        acc_n, cov_n, _ = self._postings.score([(t, w) for t, w in weighted if t.isdigit()])
        matched = acc > 0
        return acc + np.where(matched, acc_n, 0.0), cov + np.where(matched, cov_n, 0.0), alive

    def _rerank(self, pool: dict[int, float], qterms: dict[str, float]) -> dict[int, float]:
        """Second stage: boost matches whose name words the query covers (IDF-weighted share)."""
        out: dict[int, float] = {}
        postings = self._postings
        n = len(self._entries)
        for gid, score in pool.items():
            names = self._entries[gid].name_terms
            if not names:
                out[gid] = score
                continue
            have = want = 0.0
            for t in names:
                df = postings.df(t)
                w = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                want += w
                if qterms.get(t, 0.0) >= 1.0:
                    have += w
            out[gid] = score * (1.0 + NAME_COVERAGE * have / want) if want else score
        return out

    def _suggest(self, query: str, host_scope: list[_Segment] | None, kind_set: set[str] | None) -> list[str]:
        """Guidance for zero hits: names found with the kinds filter lifted or with spelling fixed."""
        out: list[str] = []
        if kind_set is not None:
            out.extend(e.doc.name for e, _, _ in self._rank(query, host_scope, None, 5)[0])
        if len(out) < 5:
            vocab = (
                list({t for seg in host_scope for t in seg.term_counts})
                if host_scope
                else self._postings.terms()
            )
            fixed: list[str] = []
            for w in split_words(query):
                if w not in self.analyzer.stop_words:
                    fixed.extend(_close_words(w, vocab, 2, 0.75))
            if fixed:
                out.extend(e.doc.name for e, _, _ in self._rank(" ".join(fixed), host_scope, kind_set, 5)[0])
        if len(out) < 5:
            segs = host_scope if host_scope is not None else self._segments.values()
            by_folded = {name.casefold(): name for seg in segs for name in seg.names}
            close = _close_words(fold(query).strip().casefold(), list(by_folded), 5, 0.5, same_start=False)
            out.extend(by_folded[c] for c in close)
        return list(dict.fromkeys(out))[:5]


_PLURAL_ENDINGS = frozenset({"s", "es", "n", "en"})  # walls; Decken, Türen; deuren


def _close_words(
    word: str, candidates: list[str], n: int, cutoff: float, same_start: bool = True
) -> list[str]:
    """difflib's closest matches, after a cheap length (and first letter) filter so it stays fast."""
    slack = max(2, len(word) // 3)
    pool = [
        c for c in candidates if abs(len(c) - len(word)) <= slack and (not same_start or c[:1] == word[:1])
    ]
    return difflib.get_close_matches(word, sorted(pool), n=n, cutoff=cutoff)


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
            self.matrix = np.zeros((max(size, 64), len(v)), dtype=np.float32)
        elif len(self.matrix) <= g:
            self._grow(max(size, g + 1))
        self.matrix[g] = v

    def _grow(self, size: int) -> None:
        np = numpy_module()
        rows = max(size, 2 * len(self.matrix))
        grown = np.zeros((rows, self.matrix.shape[1]), dtype=np.float32)
        grown[: len(self.matrix)] = self.matrix
        self.matrix = grown
