"""Ranking: the declared features (`features.py`) applied to a `Request` and the candidates
the store (`index.py`) scores. Stages, in order: BM25F over the store's postings; coordination;
preferences (app named, domain, question); name coverage on the best matches; semantic fusion;
exact and prefix name matches first; a host's general-purpose tool lifted where nothing is
named for what was asked; twins (one capability on several hosts) ordered.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from cadmcp.daemon.search.capability import Entry
from cadmcp.daemon.search.features import BY_NAME, FeatureSet, constant
from cadmcp.daemon.search.postings import Postings, numpy_module
from cadmcp.daemon.search.request import Request

#: Name tiers: exact name or target, name starting with the request.
TIER_EXACT = 2
TIER_PREFIX = 1
Hit = tuple[Entry, int, float]  # entry, name tier, score


class Store(Protocol):
    """What ranking reads from the store (`index.SearchIndex`), by doc number."""

    postings: Postings
    entries: Mapping[int, Entry]
    fallbacks: Mapping[int, tuple[str, ...]]  # the intents a general-purpose tool stands in for
    read_only: set[int]  # capabilities that only read
    heads: Mapping[str, set[int]]  # name, title and keyword term → doc numbers

    def __len__(self) -> int: ...

    def name_matches(self, probe: str) -> dict[int, int]:
        """Doc number → name tier for names equal to or starting with `probe`."""
        ...

    def semantic_sims(self, query: str) -> Any:
        """Cosine of the query with every doc number, or None."""
        ...

    def app_codes(self, apps: Collection[str]) -> list[int]:
        """The postings' codes of casefolded app names."""
        ...

    def undeclared_apps(self) -> frozenset[str]:
        """Casefolded apps that declare no domain words: a request's domain words say nothing of them."""
        ...


class Ranked:
    """The best hits of one search, how many matched in all, and per capability key why it
    ranked where it did and the features that moved it."""

    __slots__ = ("fired", "hits", "reasons", "total")

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.total = 0
        self.reasons: dict[str, str] = {}
        self.fired: dict[str, list[str]] = {}

    def fire(self, key: str, feature: str, explain: bool = True, **fill: str) -> None:
        """Record that `feature` moved capability `key`; with `explain`, its reason (filled in)
        becomes the `why` unless an earlier feature gave one."""
        self.fired.setdefault(key, []).append(feature)
        reason = BY_NAME[feature].reason
        if explain and reason and key not in self.reasons:
            self.reasons[key] = reason.format(**fill)


def rank(
    store: Store,
    request: Request,
    features: FeatureSet,
    scope: Any,
    limit: int,
    recent: Sequence[str] = (),
) -> Ranked:
    """The best `limit` capabilities in `scope` (a boolean array by doc number) for `request`."""
    out = Ranked()
    np = numpy_module()
    postings = store.postings
    qterms = request.terms
    weighted: list[tuple[str, float]] = []
    total_w = 0.0
    for t, qw in qterms.items():
        idf = postings.idf(t)
        if not idf:
            continue
        w = qw * idf
        weighted.append((t, w))
        if qw >= 1.0:
            total_w += w
    tiers: dict[int, int] = {}
    # rule: a capability whose name or target is the request, or starts with it, ranks first
    if features.on("name_match"):
        for probe in request.probes:
            for gid, tier in store.name_matches(probe).items():
                tiers[gid] = max(tier, tiers.get(gid, 0))
    sims = store.semantic_sims(request.text) if features.on("semantic") else None
    if not weighted and not tiers and sims is None and not store.fallbacks:
        return out
    has_words = any(not t.isdigit() for t in qterms)
    acc, cov, alive = _score(store, weighted, has_words and features.on("numbers_need_words"))
    scope = scope & alive
    mask = scope & (acc > 0)
    final = acc
    # rule: score x (share of the typed words matched) ** coordination
    if total_w and features.on("coordination"):
        final = acc * np.minimum(1.0, cov * (1.0 / total_w)) ** features.weight("coordination")
    preferred = request.apps if features.on("app_named") else frozenset()
    # rule: an app the request names overrides the apps its domain words point to
    inferred = request.domains if features.on("domain_app") and not preferred else frozenset()
    question = bool(store.read_only) and request.question and features.on("question_reads")
    # the app the request is about, and what only reads when it asks, are preferred: their
    # lexical and fused scores are scaled alike (`fused_boost`)
    boost = fused_boost = None
    if preferred or inferred or question:
        prefer = features.weight("app_named")
        fused_boost = np.ones(len(final))
        # rule: the app the request names or whose domain words it uses most is preferred (over the
        # apps declaring other domains: one declaring none is not set back by words it never claimed)
        apps = store.app_codes(preferred or inferred)
        if apps and inferred:
            fused_boost[_of_apps(postings, apps + store.app_codes(store.undeclared_apps()))] *= prefer
        # rule: a question prefers what only reads (read-only tools, resources, resource templates)
        if question:
            fused_boost[postings.mask("read_only", store.read_only)] *= prefer
        boost = fused_boost
        # rule: an app the request names scales the lexical score only (the model reads the name)
        if apps and preferred:
            boost = fused_boost * np.where(_of_apps(postings, apps), prefer, 1.0)
        final = final * boost
    idx = np.flatnonzero(mask)
    out.total = len(idx)
    coverage = features.on("name_coverage")
    depth = max(limit, int(constant("depth")) if coverage else 0, 1)
    if len(idx) > depth:
        vals = final[idx]
        cut = len(idx) - depth
        idx = idx[vals >= np.partition(vals, cut)[cut]]
    pool: dict[int, float] = dict(zip(idx.tolist(), final[idx].tolist(), strict=True))
    # rule: the best matches are re-ranked by the share of their name the request covers
    if coverage and pool:
        pool = _name_coverage(store, pool, qterms, features.weight("name_coverage"))
    tiers = {g: t for g, t in tiers.items() if scope[g]}
    if sims is not None:
        # rule: with an app named or inferred, the lexical side weighs fusion_domain in the fusion
        domain_alpha = features.on("semantic_domain") and (preferred or inferred)
        alpha = features.weight("semantic_domain" if domain_alpha else "semantic")
        pool, added = _fuse(pool, final, mask, scope, sims, tiers, fused_boost, alpha)
        out.total += added
    for gid in tiers:
        if gid not in pool:
            out.total += not mask[gid]
            pool[gid] = float(final[gid]) if mask[gid] else 0.0
    typed = [(t, w) for t, w in weighted if qterms[t] >= 1.0]
    if store.fallbacks and request.words:
        out.total += _lift_fallbacks(
            store, request, features, pool, typed, scope, mask, preferred, inferred, out
        )
    hits = [(store.entries[g], tiers.get(g, 0), s) for g, s in pool.items()]
    hits.sort(key=lambda h: (-h[1], -h[2], h[0].order))
    number = {store.entries[g].doc.key: g for g in pool}
    hits = _order_twins(hits, store, number, typed, preferred, inferred, request, features, recent, out)
    out.hits = hits[:limit]
    for e, tier, _ in out.hits:
        key = e.doc.key
        app = e.doc.host_app.casefold()
        if tier:
            out.fire(key, "name_match", explain=False)
        if app in preferred:
            out.fire(key, "app_named", explain=False)
        elif app in inferred:
            out.fire(key, "domain_app", explain=False)
    return out


def _of_apps(postings: Postings, codes: list[int]) -> Any:
    """Per doc number: whether its app is one of `codes`."""
    np = numpy_module()
    apps = postings.app_codes()
    table = np.zeros(int(apps.max(initial=0)) + 1, dtype=bool)
    table[codes] = True
    return table[apps]


def _score(store: Store, weighted: list[tuple[str, float]], numbers_need_words: bool) -> tuple[Any, Any, Any]:
    """BM25F scores, matched weight and liveness per doc number. With `numbers_need_words`, the
    request's numbers (sizes, coordinates, ids) count only where one of its words matched too:
    alone they meet version strings and example values ("0,0" → "FreeCAD 0.20.2")."""
    postings = store.postings
    words = [(t, w) for t, w in weighted if not t.isdigit()]
    # rule: the request's numbers score only where one of its words matched too
    if not numbers_need_words or len(words) == len(weighted):
        return postings.score(weighted)
    np = numpy_module()
    acc, cov, alive = postings.score(words)
    acc_n, cov_n, _ = postings.score([(t, w) for t, w in weighted if t.isdigit()])
    matched = acc > 0
    return acc + np.where(matched, acc_n, 0.0), cov + np.where(matched, cov_n, 0.0), alive


def _name_coverage(store: Store, pool: dict[int, float], qterms: Any, weight: float) -> dict[int, float]:
    """Boost matches whose name words the request covers (IDF-weighted share)."""
    out: dict[int, float] = {}
    postings = store.postings
    idf = postings.idf
    typed = {t for t, w in qterms.items() if w >= 1.0}
    entries = store.entries
    for gid, score in pool.items():
        names = entries[gid].name_terms
        want = postings.idf_sum(names)
        out[gid] = score * (1.0 + weight * sum(map(idf, names & typed)) / want) if want else score
    return out


def _fuse(
    pool: dict[int, float],
    final: Any,
    mask: Any,
    scope: Any,
    sims: Any,
    tiers: dict[int, int],
    boost: Any,
    alpha: float,
) -> tuple[dict[int, float], int]:
    """Lexical pool + the most similar capabilities in scope, scored by the fusion formula;
    also returns how many candidates were not lexical matches."""
    np = numpy_module()
    cand = set(pool) | set(tiers)
    # rule: fused = fusion x lexical share + (1 - fusion) x cosine (lexical best and nearest by meaning)
    s = np.where(scope, sims, -np.inf)
    k = min(int(constant("depth")), len(s))
    if k:
        for g in np.argpartition(-s, k - 1)[:k]:
            if s[g] >= constant("semantic_min"):
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


def _unseen_weight(store: Store, request: Request) -> float:
    """The weight of the typed words no capability holds, each at the highest IDF there is (a
    word nobody holds is the most specific): they are words of the request that no capability
    covers ("make the wall 100 mm thicker" is not mostly matched by a "make active" keyword)."""
    postings = store.postings
    unseen = [
        t
        for t, qw in request.terms.items()
        if qw >= 1.0 and not t.isdigit() and t not in request.amount_terms and not postings.idf(t)
    ]
    return len(unseen) * math.log(1.0 + (postings.live + 0.5) / 0.5) if unseen else 0.0  # formula


def _lift_fallbacks(
    store: Store,
    request: Request,
    features: FeatureSet,
    pool: dict[int, float],
    typed: list[tuple[str, float]],
    scope: Any,
    mask: Any,
    named: frozenset[str],
    inferred: frozenset[str],
    out: Ranked,
) -> int:
    """Put a host's fallback tool first when the request asks for a change (or a computed
    answer) that no dedicated capability is named for; returns how many were not matches."""
    intents = request.intents
    apps = named | inferred
    entries = store.entries
    if not intents:
        # rule: with nothing matched, the general-purpose tool of the app the request is about
        if pool or not apps or not features.on("fallback_in_domain"):
            return 0
        # nothing matched a request in an app's domain ("zeichne eine Linie"): that app's
        # general-purpose tool is the one capability that may do it
        lift = [g for g in store.fallbacks if scope[g] and entries[g].doc.host_app.casefold() in apps]
        for g in lift:
            pool[g] = 1.0
            out.fire(entries[g].doc.key, "fallback_in_domain")
        return len(lift)
    if not features.on("fallback"):
        return 0
    # rule: a general-purpose tool ranks first for the kind of request it declares (on the app asked)
    lift = [
        g
        for g, kinds in store.fallbacks.items()
        if scope[g]
        and any(k in intents for k in kinds)
        and (not apps or entries[g].doc.host_app.casefold() in apps)
    ]
    if not lift:
        return 0
    asked = [(text, phrases) for found in intents.values() for text, phrases in found]
    asked_terms = {t for _, phrases in asked for phrase in phrases for t in phrase}

    # what counts as a dedicated capability: one of the app the request is about, or (when its
    # domain words alone say which app that is) of an app declaring no domain
    neutral = store.undeclared_apps() if inferred and not named else frozenset()

    def specific(g: int) -> bool:
        app = entries[g].doc.host_app.casefold()
        return bool(scope[g]) and g not in store.fallbacks and (not apps or app in apps or app in neutral)

    # the other words: neither what was asked nor the app's name (which all its capabilities hold)
    rest = [(t, w) for t, w in typed if t not in asked_terms and t not in request.app_terms]
    # a question for a quantity (area, volume ...) is answered only by what says that
    # quantity: counting walls is no total wall area
    # rule: a question for a quantity (area, volume ...) is answered only by what says that quantity
    measures = request.quantities
    says = (
        store.postings.score([(t, 1.0) for t in measures])[1]
        if measures and "change" not in intents
        else None
    )
    heads = store.heads
    # what a change acts on: the other words the request typed, numbers and amounts aside (the app's
    # own words too: "close the drawing"); a capability's text that holds none of them is not for it
    objects = {
        t
        for t, w in request.terms.items()
        if w >= 1.0 and t not in asked_terms and not t.isdigit() and t not in request.amount_terms
    }
    holds: list[Any] = []  # which capabilities hold those words: scored once, where a name asks

    def for_object(g: int, phrase: tuple[str, ...]) -> bool:
        """Whether a capability whose name says the change verb is also for what the change acts on
        ("close_document" is not for "close the polyline"); one named for it by its title or keywords
        is, as is one whose name says no more than the verb."""
        name = entries[g].name_terms
        if not objects or not name.issuperset(phrase) or name.issubset(phrase):
            return True
        if not holds:
            holds.append(store.postings.score([(t, 1.0) for t in objects])[1])
        return bool(holds[0][g] > 0)

    def can_do(g: int, phrase: tuple[str, ...]) -> bool:
        """Whether a capability is for making the change: its name, or a title or keyword opening with
        the verb, says it ("resize part"; not "undo my changes"), and one that only reads only by its
        name ("convert_time"; not list_checkpoints' "changes")."""
        says_it = entries[g].name_terms if g in store.read_only else entries[g].verb_terms
        return phrase[0] in says_it

    # rule: a capability named for what was asked (the verb or a same-intent synonym, and for a change
    # something it acts on, which it can do) keeps the fallback out
    for kind, found in intents.items():
        for _, phrases in found:
            for phrase in phrases:  # all of a phrase's terms: "change name" is not named by "change"
                named = set.intersection(*(heads.get(t, set()) for t in phrase))
                if any(
                    specific(g)
                    and (says is None or says[g] > 0)
                    and (kind != "change" or (can_do(g, phrase) and for_object(g, phrase)))
                    for g in named
                ):
                    return 0  # a capability is named for what was asked: it ranks on its own
    # a question (not a change), or a change only an amount implies ("5 mm thicker"), that a
    # capability answers by matching most of its other words ("how many entities per layer")
    # goes to that capability
    # rule: a question, or a change only an amount implies, that a capability mostly matches goes to it
    implied = all(not phrases for _, phrases in intents.get("change", ()))
    if ("change" not in intents or implied) and rest and pool:
        _, covered, _ = store.postings.score(rest)
        need = constant("fallback_coverage") * (sum(w for _, w in rest) + _unseen_weight(store, request))
        if any(covered[g] >= need and (says is None or says[g] > 0) and specific(g) for g in pool):
            return 0
    top = max(pool.values(), default=0.0) or 1.0
    added = 0
    for g in lift:
        added += g not in pool and not mask[g]
        pool[g] = math.nextafter(top, math.inf)  # first, above the best match
        out.fire(entries[g].doc.key, "fallback", asked=asked[0][0])
    return added


def _order_twins(
    hits: list[Hit],
    store: Store,
    number: Mapping[str, int],
    typed: list[tuple[str, float]],
    named: frozenset[str],
    inferred: frozenset[str],
    request: Request,
    features: FeatureSet,
    recent: Sequence[str],
    out: Ranked,
) -> list[Hit]:
    """Order each group of twins (one capability on several hosts): the app the request names
    or whose words it uses first; between tied twins (holding the same of the words typed: their
    scores then differ by what the request does not say), the most recently used host first."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (e, _, _) in enumerate(hits):
        groups.setdefault((e.doc.kind, e.doc.target), []).append(i)
    rank_of = {k: i for i, k in enumerate(recent)}
    held: Any = None  # per doc number, the weight of the typed words it holds (when needed)
    result = list(hits)
    for positions in groups.values():
        if len(positions) < 2:
            continue
        members = [hits[i] for i in positions]
        apps = {m[0].doc.host_app.casefold() for m in members}
        first = members[0]
        first_app = first[0].doc.host_app
        why = None
        feature = None
        said = first_app.casefold() in (named or inferred) and len(apps) > 1
        tied: list[Hit] = []
        if not said and features.on("twins_recent") and any(m[0].doc.host_key in rank_of for m in members):
            if held is None:
                held = store.postings.score(typed)[1]
            # rule: twins holding the same of the words typed are tied: the most recently used host first
            level = held[number[first[0].doc.key]]
            tied = [m for m in members if m[1] == first[1] and held[number[m[0].doc.key]] == level]
        if len(tied) > 1 and any(m[0].doc.host_key in rank_of for m in tied):
            tied.sort(key=lambda m: rank_of.get(m[0].doc.host_key, len(rank_of)))
            chosen_ids = {id(m) for m in tied}
            members = tied + [m for m in members if id(m) not in chosen_ids]
            if members[0][0].doc.host_key in rank_of:
                why = BY_NAME["twins_recent"].reason
                feature = "twins_recent"
        elif said and first_app.casefold() in named:
            why = f"the request names {first_app}"
        elif said:
            words = ", ".join(repr(w) for w in request.domain_words.get(first_app.casefold(), ())[:3])
            why = f"{first_app} words in the request: {words}"
        elif first[2] > members[1][2] or first[1] > members[1][1]:
            why = "closer match to the request than its twins"
        for i, m in zip(positions, members, strict=True):
            result[i] = m
        key = members[0][0].doc.key
        if feature:
            out.fired.setdefault(key, []).append(feature)
        if why and key not in out.reasons:
            out.reasons[key] = why
    return result
