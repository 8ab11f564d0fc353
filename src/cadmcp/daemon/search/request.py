"""A search request read once: a frozen `Request` built by small named readers.

Every ranking feature reads this record, never the query string: the request is analysed in
one place, one way. `read_request` runs the readers in order; each is a plain function of the
words (and of the `Lexicon`: the vocabulary plus what the connected hosts declare), with a
table test in tests/search/test_request.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from cadmcp.daemon.search.analyzer import fold, split_words, without_names
from cadmcp.daemon.search.domain import DomainTable
from cadmcp.daemon.search.features import constant
from cadmcp.daemon.search.vocabulary import Aliases, Language, Vocabulary

Intents = Mapping[str, tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]]
_EMPTY: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Lexicon:
    """What the readers know besides the request: the vocabulary, the word sequences that name
    an app (the vocabulary's and the hosts' own), and the apps' declared domain words."""

    vocabulary: Vocabulary
    aliases: Aliases  # an alias's words joined → its app (see `vocabulary.add_alias`)
    domains: DomainTable
    fallbacks: bool = True  # whether any host declares a general-purpose tool (what reads the intents)
    undeclared: frozenset[str] = frozenset()  # connected apps declaring no domain words (casefolded)


@dataclass(frozen=True, slots=True)
class Request:
    """What a search request says, read once (see the module docstring)."""

    text: str
    words: tuple[str, ...]  # every word, lowercase, split as capability names are
    language: str  # code of the language most of its words are listed in ("en", "de" ...)
    terms: Mapping[str, float]  # index term → weight: typed words 1.0, their synonyms less
    probes: tuple[str, ...]  # the request as a whole name, for exact and prefix name matches
    apps: frozenset[str]  # apps the request names (casefolded)
    app_terms: frozenset[str]  # index terms of the words that name them
    domains: frozenset[str]  # apps whose declared domain words the request uses most
    domain_words: Mapping[str, tuple[str, ...]]  # app → its declared words the request uses
    question: bool  # asks about state or for help, rather than for something to be done
    intents: Intents  # kind of request ("change", "query") → (words as typed, phrases saying it)
    quantities: tuple[str, ...]  # terms of the quantities asked for (area, volume ...)
    amounts: tuple[str, ...] = ()  # amounts given: a number with a unit ("5 mm", "30 degrees")
    amount_terms: frozenset[str] = frozenset()  # their index terms
    off: frozenset[str] = field(default=frozenset())  # readers switched off (an ablation)


def read_words(text: str) -> tuple[str, ...]:
    """Every word of the request."""
    return tuple(split_words(text))


def read_terms(
    words: Sequence[str],
    vocabulary: Vocabulary,
    synonyms: float,
    off: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """Index terms with weights: the typed words' at 1, their synonyms at
    `synonyms`. A request of stop words only ("what is this") uses them rather than nothing.
    A view direction ("from the top") says "view"."""
    kept = list(words)
    analyzer = vocabulary.analyzer
    terms = analyzer.terms_of_words(kept)
    # rule: a synonym of a typed word counts at synonym_weight
    weights = dict.fromkeys(vocabulary.synonym_terms(kept), synonyms) if synonyms else {}
    weights.update(dict.fromkeys(terms, 1.0))
    # rule: a view direction ('from the top') says 'view'
    if "view_is_picture" not in off and vocabulary.view_directions(kept):
        implied = list(vocabulary.view_words)
        if synonyms:
            weights.update((t, synonyms) for t in vocabulary.synonym_terms(implied) if t not in weights)
        weights.update(dict.fromkeys(analyzer.terms_of_words(implied), 1.0))
    return weights


def read_probes(text: str, words: Sequence[str]) -> tuple[str, ...]:
    """The request as a capability name would be keyed: folded as typed, and as its words."""
    return tuple(dict.fromkeys((fold(text).strip().casefold(), " ".join(words))))


def read_apps(words: Sequence[str], lexicon: Lexicon) -> tuple[frozenset[str], frozenset[str]]:
    """Apps the request names by any alias, and the index terms of the words naming them."""
    if not words:
        return frozenset(), frozenset()
    analyzer = lexicon.vocabulary.analyzer
    found = Vocabulary.app_mentions(words, lexicon.aliases, analyzer.stop_words)
    named = set().union(*found.values())
    return frozenset(found), frozenset(analyzer.terms_of_words([w for w in words if w in named]))


def read_language(words: Sequence[str], vocabulary: Vocabulary) -> Language:
    """The language most of the request's words are listed in (English on a tie)."""
    return vocabulary.language(words)


def read_domains(
    text: str, language: Language, lexicon: Lexicon
) -> tuple[frozenset[str], dict[str, tuple[str, ...]]]:
    """Apps whose declared domain words the request uses most (both stemmed in the request's
    language), and the words used; words in capitals are names (a layer `A-WALL`), not domain
    words."""
    table = lexicon.domains
    if not table.contested:
        return frozenset(), {}
    stop = lexicon.vocabulary.analyzer.stop_words
    kept = without_names(text)
    typed = [w for w in split_words(kept) if w not in stop]
    apps, found = table.apps_used(typed, language.stem, language.code)
    return apps, {app: tuple(words) for app, words in found.items()}


def read_question(text: str, words: Sequence[str], vocabulary: Vocabulary) -> bool:
    """Whether the request asks about state or for help rather than for a change."""
    return vocabulary.is_question(text, words)


def read_amounts(words: Sequence[str], vocabulary: Vocabulary) -> tuple[str, ...]:
    """Amounts the request gives: a number with a unit ("5 mm", "0.5 m", "30 degrees")."""
    return tuple(vocabulary.amounts(words))


def read_intents(
    words: Sequence[str], question: bool, amounts: Sequence[str], vocabulary: Vocabulary
) -> Intents:
    """The kinds of request the words make (see `Vocabulary.intents`); a question makes no change.
    A request that gives an amount and neither asks nor says what kind of request it is asks
    for a change by that amount ("make the bracket 5 mm thicker", "widen the door by 100 mm")."""
    found = vocabulary.intents(words)
    # rule: a question makes no change
    if question:
        found.pop("change", None)
    # rule: a request giving an amount that says no kind of request is a change
    elif amounts and not found:
        found["change"] = [(amounts[0], ())]
    return MappingProxyType({k: tuple(v) for k, v in found.items()})


def read_quantities(words: Sequence[str], vocabulary: Vocabulary) -> tuple[str, ...]:
    """Terms of the quantities the request asks for (area, volume, length ...)."""
    measures = vocabulary.measure_terms
    return tuple(t for t in vocabulary.analyzer.terms_of_words(words) if t in measures)


def read_request(text: str, lexicon: Lexicon, off: frozenset[str] = frozenset()) -> Request:
    """Read a request once. `off` names readers to skip (an ablation: their field stays empty)."""
    vocabulary = lexicon.vocabulary
    words = read_words(text)
    language = read_language(words, vocabulary)
    synonyms = constant("synonym_weight") if "synonyms" not in off else 0.0
    terms = read_terms(words, vocabulary, synonyms, off)
    # what a kind of request says is read only where a general-purpose tool may take it
    kinds = lexicon.fallbacks
    amounts = read_amounts(words, vocabulary) if kinds and "amount_is_change" not in off else ()
    apps, app_terms = read_apps(words, lexicon)
    domains, domain_words = read_domains(text, language, lexicon)
    question = read_question(text, words, vocabulary)
    return Request(
        text=text,
        words=words,
        language=language.code,
        terms=MappingProxyType(terms) if terms else _EMPTY,
        probes=read_probes(text, words),
        apps=apps,
        app_terms=app_terms,
        domains=domains,
        domain_words=MappingProxyType(domain_words),
        question=question,
        intents=read_intents(words, question, amounts, vocabulary) if kinds else MappingProxyType({}),
        quantities=read_quantities(words, vocabulary) if kinds else (),
        amounts=amounts,
        amount_terms=frozenset(vocabulary.analyzer.terms(" ".join(amounts))),
        off=off,
    )
