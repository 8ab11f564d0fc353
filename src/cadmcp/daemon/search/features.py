"""The ranking features, declared: each has a name, what it reads, its weight and the reason a
result it moved gives. `ranking.py` applies them; `cadmcp eval search --ablate NAME` switches
one off to measure what it is worth (docs/search.md has the table: a feature that does not
improve the held-out sets goes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Feature:
    """One ranking feature (see the module docstring)."""

    name: str
    reads: str  # the fields of the request (and of the capability) it reads
    weight: float  # its strength; what the number scales is said in `does`
    does: str  # what it does with the weight
    reason: str  # the `why` of a result it moved ({app}, {words}, {asked} filled in)


FEATURES: tuple[Feature, ...] = (
    Feature(
        "synonyms",
        "request.terms",
        0.4,
        "a synonym of a typed word (CAD/BIM vocabulary) counts at this weight of the word",
        "",
    ),
    Feature(
        "amount_is_change",
        "request.amounts, request.intents",
        1.0,
        "a request giving an amount ('5 mm thicker') that neither asks nor says what it wants is a change",
        "",
    ),
    Feature(
        "view_is_picture",
        "request.terms",
        1.0,
        "a view direction ('from the top', 'Draufsicht') counts as the word 'view' typed, at this weight",
        "",
    ),
    Feature(
        "counting_is_kind",
        "request.terms",
        0.4,
        "the words asking for a count ('how many') weigh this much: the things counted say what it is about",
        "",
    ),
    Feature(
        "numbers_need_words",
        "request.terms, capability terms",
        1.0,
        "the request's numbers score only where one of its words matched too",
        "",
    ),
    Feature(
        "coordination",
        "request.terms, capability terms",
        0.5,
        "score x (share of the request's typed weight matched) ** weight",
        "",
    ),
    Feature(
        "app_named",
        "request.apps, capability app",
        1.5,
        "score x weight for the capabilities of an app the request names",
        "the request names {app}",
    ),
    Feature(
        "domain_app",
        "request.domains, capability app",
        1.3,
        "score x weight for the app whose declared domain words the request uses most",
        "{app} words in the request: {words}",
    ),
    Feature(
        "question_reads",
        "request.question, capability read-only",
        1.5,
        "score x weight for what only reads when the request asks (about state, or for help)",
        "the request asks, and this only reads",
    ),
    Feature(
        "name_coverage",
        "request.terms, capability name terms",
        0.5,
        "score x (1 + weight x IDF-weighted share of its name the request covers)",
        "",
    ),
    Feature(
        "semantic",
        "request.text, capability vector",
        0.15,
        "fused = weight x lexical share + (1 - weight) x cosine (with the model installed)",
        "",
    ),
    Feature(
        "semantic_domain",
        "request.apps, request.domains",
        0.35,
        "the lexical weight of the fusion when the request names an app or uses its domain words",
        "",
    ),
    Feature(
        "name_match",
        "request.probes, capability name and target",
        1.0,
        "a capability whose name is the request (or starts with it) ranks first",
        "",
    ),
    Feature(
        "fallback",
        "request.intents, request.quantities, capability fallback",
        1.02,
        "a host's general-purpose tool scores weight x the best when nothing is named for what was asked",
        "general-purpose tool: no dedicated capability for {asked!r}",
    ),
    Feature(
        "fallback_in_domain",
        "request.apps, request.domains, capability fallback",
        1.0,
        "with nothing matched, the general-purpose tool of the app the request is about",
        "general-purpose tool: nothing specific matches",
    ),
    Feature(
        "twins_app",
        "request.apps, request.domains, capability app",
        1.0,
        "of one capability on several hosts, the app the request names or is about goes first",
        "",
    ),
    Feature(
        "twins_recent",
        "recently used hosts",
        0.8,
        "twins scoring within this ratio are tied: the most recently used host goes first",
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
        """The weight of feature `name` (declared in `FEATURES`)."""
        return BY_NAME[name].weight
