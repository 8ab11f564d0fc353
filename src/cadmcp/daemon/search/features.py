"""The ranking features and the tuned numbers, declared: each feature has a name, what it
reads, the constant it is weighted by (if any) and the reason a result it moved gives;
`CONSTANTS` holds every tuned number of the ranking (the BM25F field table apart, in
`index.py`). `ranking.py` applies the features; `cadmcp eval search --ablate NAME` switches one
off to measure what it is worth, and `cadmcp eval search --rules` lists the rules and constants
(docs/search.md has both: a feature that does not improve the held-out sets goes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Constant:
    """One tuned number of the ranking."""

    name: str
    value: float
    what: str  # what it scales or bounds, and where it was chosen


CONSTANTS: dict[str, Constant] = {
    c.name: c
    for c in (
        Constant("synonym_weight", 0.4, "weight of a synonym of a typed word"),
        Constant(
            "prefer",
            1.5,
            "score x this for the app the request names or is about, and for what only reads when it asks",
        ),
        Constant(
            "coverage",
            0.5,
            "how much a share of words covered counts: score x (share of the request's typed weight"
            " a capability matches) ** this, and x (1 + this x IDF share of its name the request covers)",
        ),
        Constant("fusion", 0.15, "fused = this x lexical share + (1 - this) x cosine"),
        Constant("fusion_domain", 0.35, "the same, when the request names an app or uses its domain words"),
        Constant(
            "semantic_min", 0.2, "cosine a capability needs to join the candidates on its meaning alone"
        ),
        Constant(
            "depth",
            30,
            "candidates taken from each side (lexical best, semantic nearest) to re-rank and fuse",
        ),
        Constant(
            "fallback_coverage",
            0.6,
            "share of a question's other words a capability must match to keep the fallback out",
        ),
        Constant("k1", 1.2, "BM25 term-frequency saturation"),
    )
}


def constant(name: str) -> float:
    """The value of tuned constant `name`."""
    return CONSTANTS[name].value


@dataclass(frozen=True, slots=True)
class Feature:
    """One ranking feature (see the module docstring)."""

    name: str
    reads: str  # the fields of the request (and of the capability) it reads
    weight: str | None  # the name of the constant it is weighted by (`CONSTANTS`), or None
    does: str  # what it does (with the weight)
    reason: str  # the `why` of a result it moved ({app}, {words}, {asked} filled in)


FEATURES: tuple[Feature, ...] = (
    Feature(
        "synonyms",
        "request.terms",
        "synonym_weight",
        "a synonym of a typed word (CAD/BIM vocabulary) counts at this weight of the word",
        "",
    ),
    Feature(
        "amount_is_change",
        "request.amounts, request.intents",
        None,
        "a request giving an amount ('5 mm thicker') that neither asks nor says what it wants is a change",
        "",
    ),
    Feature(
        "view_is_picture",
        "request.terms",
        None,
        "a view direction ('from the top', 'Draufsicht') counts as the word 'view' typed, at this weight",
        "",
    ),
    Feature(
        "numbers_need_words",
        "request.terms, capability terms",
        None,
        "the request's numbers score only where one of its words matched too",
        "",
    ),
    Feature(
        "coordination",
        "request.terms, capability terms",
        "coverage",
        "score x (share of the request's typed weight matched) ** weight",
        "",
    ),
    Feature(
        "app_named",
        "request.apps, capability app",
        "prefer",
        "score x weight for the capabilities of an app the request names",
        "the request names {app}",
    ),
    Feature(
        "domain_app",
        "request.domains, capability app",
        "prefer",
        "score x weight for the app whose declared domain words the request uses most",
        "{app} words in the request: {words}",
    ),
    Feature(
        "question_reads",
        "request.question, capability read-only",
        "prefer",
        "score x weight for what only reads when the request asks (about state, or for help)",
        "the request asks, and this only reads",
    ),
    Feature(
        "name_coverage",
        "request.terms, capability name terms",
        "coverage",
        "score x (1 + weight x IDF-weighted share of its name the request covers)",
        "",
    ),
    Feature(
        "semantic",
        "request.text, capability vector",
        "fusion",
        "fused = weight x lexical share + (1 - weight) x cosine (with the model installed)",
        "",
    ),
    Feature(
        "semantic_domain",
        "request.apps, request.domains",
        "fusion_domain",
        "the lexical weight of the fusion when the request names an app or uses its domain words",
        "",
    ),
    Feature(
        "name_match",
        "request.probes, capability name and target",
        None,
        "a capability whose name is the request (or starts with it) ranks first",
        "",
    ),
    Feature(
        "fallback",
        "request.intents, request.quantities, capability fallback",
        None,
        "a host's general-purpose tool scores weight x the best when nothing is named for what was asked",
        "general-purpose tool: no dedicated capability for {asked!r}",
    ),
    Feature(
        "fallback_in_domain",
        "request.apps, request.domains, capability fallback",
        None,
        "with nothing matched, the general-purpose tool of the app the request is about",
        "general-purpose tool: nothing specific matches",
    ),
    Feature(
        "twins_recent",
        "recently used hosts",
        None,
        "twins matching the same words of the request are tied: the most recently used host goes first",
        "its host was used most recently",
    ),
)

BY_NAME = {f.name: f for f in FEATURES}


class FeatureSet:
    """The features on, with their weights; `off` switches some off (an ablation)."""

    def __init__(self, off: Iterable[str] = ()) -> None:
        self.off = frozenset(off)
        unknown = sorted(self.off - set(BY_NAME))
        if unknown:
            raise ValueError(f"unknown feature(s) {unknown}; use any of {sorted(BY_NAME)}")

    def on(self, name: str) -> bool:
        """Whether feature `name` takes part."""
        return name not in self.off

    def weight(self, name: str) -> float:
        """The weight of feature `name`: the value of its constant."""
        constant_name = BY_NAME[name].weight
        if constant_name is None:
            raise ValueError(f"feature {name!r} has no weight")
        return constant(constant_name)
