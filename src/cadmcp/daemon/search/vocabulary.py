"""The CAD/BIM search vocabulary, shipped as data: per language, in `words/<code>.json`, the
synonym groups (by concept), the verbs that make a change or a computed question, question
and help words, units, view directions and stop words; `vocabulary.json`
holds what no language owns (app aliases, what a view direction means, the languages).

Each language's words are stemmed with that language's Snowball stemmer (PyStemmer) and
matched against the request's words stemmed the same way: "zeichne" and "zeichnen" meet as
the German "zeichn", "Decken" and "Decke" as "deck". No language rule lives in code.
Toolset authors add words for their own tools through the tool's `_meta["io.cadmcp/keywords"]`
(see `catalog.py`), not here.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import Stemmer

from cadmcp.daemon.search.analyzer import Analyzer, split_words

#: App aliases spelled by more than this many words are not looked for.
_MAX_ALIAS_WORDS = 4  # bound
Aliases = dict[str, tuple[str, frozenset[str]]]
"""An alias's words joined → (the app's casefolded name, the alias's own words)."""


@dataclass(frozen=True, slots=True)
class _Member:
    lang: str  # the language code of the list it comes from
    stems: tuple[str, ...]  # every word stemmed in its language, stop words kept, to match requests
    terms: tuple[str, ...]  # index terms it expands to (stop words dropped)
    words: tuple[str, ...] = ()  # the words as listed


class Language:
    """One language's word lists (`words/<code>.json`) and its stemmer (cached)."""

    def __init__(self, code: str, data: Mapping[str, Any]) -> None:
        self.code = code
        self.data = data
        self.verb_anywhere = bool(data.get("verbAnywhere"))
        """Its change verbs make a change wherever they stand (German, Dutch: "Layer umbenennen")."""
        self._stemmer = Stemmer.Stemmer(str(data.get("language", "english")))
        self.own_stems = own_stems(data)
        """Words whose stem would be another word's ("drawing", a document, is not "draw")."""
        self._stems: dict[str, str] = dict(self.own_stems)
        self._runs: dict[tuple[str, ...], list[str]] = {}
        self.known: set[str] = set()  # stems of every word it lists, to tell the request's language
        self.words: set[str] = set()  # every word it lists

    def stem(self, word: str) -> str:
        """The stem of one lowercase word in this language."""
        stem = self._stems.get(word)
        if stem is None:
            stem = self._stemmer.stemWord(word)
            if len(self._stems) < 100_000:  # bound
                self._stems[word] = stem
        return stem

    def stems(self, words: Sequence[str]) -> list[str]:
        """Stems of several words (cached: one request's words are stemmed by several readers)."""
        key = tuple(words)
        found = self._runs.get(key)
        if found is None:
            found = [self.stem(w) for w in words]
            if len(self._runs) >= 4096:  # bound
                self._runs.clear()
            self._runs[key] = found
        return found

    def texts(self, key: str) -> list[str]:
        """The strings listed under `key` (a list, or the values of a mapping of lists)."""
        return self.listed(self.data, key)

    @staticmethod
    def listed(data: Mapping[str, Any], key: str) -> list[str]:
        """The strings a language's data lists under `key`."""
        value = data.get(key, ())
        if isinstance(value, Mapping):
            return [t for texts in value.values() for t in texts]
        return list(value)


class Vocabulary:
    """Synonym expansion, kinds of request and app-name detection for queries."""

    def __init__(
        self,
        shared: Mapping[str, Any],
        languages: Mapping[str, Mapping[str, Any]],
        analyzer: Analyzer | None = None,
    ) -> None:
        self.languages = [Language(code, data) for code, data in languages.items()]
        stop = [w for lang in self.languages for w in lang.texts("stopWords")]
        self.analyzer = analyzer or Analyzer(
            stop, {w: t for lang in self.languages for w, t in lang.own_stems.items()}
        )
        self._groups: list[tuple[_Member, ...]] = []
        self._by_first: dict[str, dict[str, list[tuple[_Member, int]]]] = {}  # lang → first stem → ...
        self._by_word: dict[str, list[tuple[_Member, int]]] = {}  # first word as listed → ...
        concepts: dict[str, list[_Member]] = {}
        for lang in self.languages:
            for concept, texts in lang.data.get("synonyms", {}).items():
                concepts.setdefault(concept, []).extend(
                    self._member(lang, t) for t in texts if split_words(t)
                )
        for members in concepts.values():
            gid = len(self._groups)
            self._groups.append(tuple(members))
            for m in members:
                self._by_first.setdefault(m.lang, {}).setdefault(m.stems[0], []).append((m, gid))
                self._by_word.setdefault(m.words[0], []).append((m, gid))
        self._intents: dict[str, dict[str, list[tuple[str, _Member]]]] = {}  # lang → first stem → ...
        for lang in self.languages:
            for intent, texts in lang.data.get("intents", {}).items():
                for text in texts:
                    if split_words(text):
                        m = self._member(lang, text)
                        self._intents.setdefault(lang.code, {}).setdefault(m.stems[0], []).append((intent, m))
        for lang in self.languages:
            for key in lang.data:
                if key not in ("language", "verbAnywhere"):
                    listed = [w for t in lang.texts(key) for w in split_words(t)]
                    lang.words.update(listed)
                    lang.known.update(lang.stems(listed))

        def every(key: str) -> list[str]:
            return [t for lang in self.languages for t in lang.texts(key)]

        self._questions = frozenset(w for text in every("questions") for w in split_words(text)[:1])
        self._units = frozenset(w for text in every("units") for w in split_words(text))
        self._views = _by_first_word(every("views"))
        self._spoken: dict[tuple[str, ...], Language] = {}  # the last requests' languages
        self.view_words = tuple(w for t in shared.get("viewMeans", ()) for w in split_words(t))
        """What a view direction ("from the top", "Draufsicht") says: a picture of the model."""
        self.measure_terms = frozenset(t for text in every("measures") for t in self.analyzer.terms(text))
        """Terms of the quantities a computed question may ask for (area, volume, length ...)."""
        self._apps: Aliases = {}
        for app, aliases in shared.get("apps", {}).items():
            for alias in (app, *aliases):
                add_alias(self._apps, alias, app.casefold())

    def _member(self, lang: Language, text: str) -> _Member:
        words = split_words(text)
        return _Member(
            lang=lang.code,
            stems=tuple(lang.stems(words)),
            terms=tuple(self.analyzer.terms_of_words(words)),
            words=tuple(words),
        )

    def language(self, words: Sequence[str]) -> Language:
        """The language most of the request's words are listed in (the first language on a tie):
        a word listed as typed counts 1, a word that only shares a listed word's stem counts 1/2."""
        key = tuple(words)
        best = self._spoken.get(key)
        if best is None:
            # rule: the request's language is the one most of its words are listed in
            best, count = self.languages[0], 0.0
            for lang in self.languages:
                known = lang.known
                n = sum(1 for t in lang.stems(words) if t in known)
                if n > count:
                    best, count = lang, n
            if len(self._spoken) >= 1024:  # bound
                self._spoken.clear()
            self._spoken[key] = best
        return best

    def _groups_hit(self, words: Sequence[str]) -> list[int]:
        """Synonym groups the words name: stemmed in the request's language (and the first, the
        index's), as typed in any other: a German word in an English request is the word itself."""
        hit: set[int] = set()
        # rule: synonyms match stemmed in the request's language and English, as listed in any other
        spoken = (self.languages[0], self.language(words))
        for lang in dict.fromkeys(spoken):
            table = self._by_first.get(lang.code)
            if table:
                seq = lang.stems(words)
                for i, key in enumerate(seq):
                    for member, gid in table.get(key, ()):
                        if tuple(seq[i : i + len(member.stems)]) == member.stems:
                            hit.add(gid)
        codes = {lang.code for lang in spoken}
        by_word = self._by_word
        for i, word in enumerate(words):
            for member, gid in by_word.get(word, ()):
                if member.lang not in codes and tuple(words[i : i + len(member.words)]) == member.words:
                    hit.add(gid)
        return sorted(hit)

    def synonym_terms(self, words: Sequence[str]) -> list[str]:
        """Terms of the synonyms of a query's words (lowercase, split)."""
        out: dict[str, None] = {}
        for gid in self._groups_hit(words):
            for member in self._groups[gid]:
                out.update(dict.fromkeys(member.terms))
        return list(out)

    def synonym_phrases(self, words: Sequence[str], intent: str | None = None) -> list[tuple[str, ...]]:
        """The words' synonyms as whole phrases of terms ("rename" → ("renam",), ("chang", "name"));
        with `intent`, only those that start with a verb of that intent (for "export": "exportieren",
        not "csv" or "spreadsheet", which are what is exported, not the act)."""
        return [
            m.terms
            for gid in self._groups_hit(words)
            for m in self._groups[gid]
            if m.terms
            and (
                intent is None
                or any(i == intent for i, _ in self._intents.get(m.lang, {}).get(m.stems[0], ()))
            )
        ]

    def intents(self, words: Sequence[str]) -> dict[str, list[tuple[str, tuple[tuple[str, ...], ...]]]]:
        """What kind of request the query's words make: intent → [(the words as typed, the phrases
        of terms that say the same: theirs and their synonyms')]. `change` (rename, move, add ...)
        counts only as the request's first word (after stop words: "please rename ...") or, in a
        language whose verbs may stand anywhere ("Layer umbenennen: A -> B"), anywhere: there it
        is a command and not a noun ("save my changes"); `query` (how many, total ...) counts anywhere."""
        content = [i for i, w in enumerate(words) if w not in self.analyzer.stop_words]
        first = set(content[:1])
        out: dict[str, list[tuple[str, tuple[tuple[str, ...], ...]]]] = {}
        for lang in self.languages:
            intents = self._intents.get(lang.code)
            if not intents:
                continue
            stems = lang.stems(words)
            # rule: a change verb counts as the first word (stop words aside), anywhere in a verbAnywhere one
            ends = set(content) if lang.verb_anywhere else first
            for i, s in enumerate(stems):
                for intent, member in intents.get(s, ()):
                    n = len(member.stems)
                    if tuple(stems[i : i + n]) != member.stems or (intent == "change" and i not in ends):
                        continue
                    typed = words[i : i + n]
                    found = out.setdefault(intent, [])
                    if any(text == " ".join(typed) for text, _ in found):
                        continue  # the same words, listed in two languages
                    phrases = [member.terms, tuple(self.analyzer.terms_of_words(list(typed)))]
                    # rule: a verb's synonyms that are verbs of the same intent say the same
                    phrases += self.synonym_phrases(typed, intent) + self.synonym_phrases(
                        member.words, intent
                    )
                    found.append((" ".join(typed), tuple(dict.fromkeys(p for p in phrases if p))))
        return out

    def amounts(self, words: Sequence[str]) -> list[str]:
        """Amounts the request gives: a number followed by a unit ("5 mm", "0.5 m", "30 degrees")."""
        return [
            f"{words[i]} {words[i + 1]}"
            for i in range(len(words) - 1)
            # rule: an amount is a number followed by a unit
            if words[i].isdigit() and words[i + 1] in self._units
        ]

    def view_directions(self, words: Sequence[str]) -> set[int]:
        """Positions of the words that name a view direction ("from the top", "vue de dessus")."""
        return _phrase_positions(words, self._views)

    def is_question(self, query: str, words: Sequence[str]) -> bool:
        """Whether the request asks about state ("which layers are frozen", "... open?") rather
        than for something to be done: it opens with a question word or ends with "?"."""
        # rule: a question opens with a question word or ends with '?'
        return bool(words) and (words[0] in self._questions or query.rstrip().endswith("?"))

    @property
    def app_aliases(self) -> Aliases:
        """The vocabulary's app aliases (see `add_alias`)."""
        return dict(self._apps)

    @staticmethod
    def app_mentions(
        words: Sequence[str], aliases: Aliases, stop_words: Collection[str]
    ) -> dict[str, set[str]]:
        """The casefolded apps that the query's words name, each with the words naming it: a run
        of words spelling an alias,
        spaces and case aside ("freecad", "FreeCAD", "Free CAD"; "HDB car park" for an app
        called hdbcarpark), where a stop word counts only as a word of the alias itself ("a cad"
        does not spell "acad", "MySQL" typed still spells MySQL)."""
        found: dict[str, set[str]] = {}
        for i in range(len(words)):
            key = ""
            for n, w in enumerate(words[i : i + _MAX_ALIAS_WORDS], 1):
                key += w
                alias = aliases.get(key)
                # rule: an app is named by a run of words spelling an alias (stop words only as the alias has)
                if alias and all(v in alias[1] for v in words[i : i + n] if v in stop_words):
                    found.setdefault(alias[0], set()).update(words[i : i + n])
        return found


def _by_first_word(texts: Sequence[str]) -> dict[str, list[tuple[str, ...]]]:
    out: dict[str, list[tuple[str, ...]]] = {}
    for text in texts:
        phrase = tuple(split_words(text))
        if phrase:
            out.setdefault(phrase[0], []).append(phrase)
    return out


def _phrase_positions(words: Sequence[str], phrases: Mapping[str, list[tuple[str, ...]]]) -> set[int]:
    out: set[int] = set()
    for i, w in enumerate(words):
        for phrase in phrases.get(w, ()):
            if tuple(words[i : i + len(phrase)]) == phrase:
                out.update(range(i, i + len(phrase)))
    return out


def add_alias(aliases: Aliases, name: str, app: str, *, replace: bool = True) -> None:
    """Record `name` as naming `app`: keyed by its words joined (so that however the analyser
    splits a name, "FreeCAD" into free and cad, it is spelled the same typed as one word or as
    several), with those words (where a run of the request's words may hold a stop word)."""
    words = split_words(name)
    if words and (replace or "".join(words) not in aliases):
        aliases["".join(words)] = (app, frozenset(words))


def load_vocabulary_data() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The shipped vocabulary data: `vocabulary.json`, and each of its languages' `words/<code>.json`."""
    root = resources.files(__package__)
    shared = json.loads(root.joinpath("vocabulary.json").read_text(encoding="utf-8"))
    languages = {
        code: json.loads(root.joinpath("words", f"{code}.json").read_text(encoding="utf-8"))
        for code in shared.get("languages", ())
    }
    return shared, languages


def default_vocabulary(analyzer: Analyzer | None = None) -> Vocabulary:
    """A fresh vocabulary from the shipped data (with `analyzer`, which must drop its stop words)."""
    return Vocabulary(*load_vocabulary_data(), analyzer=analyzer)


def shipped_analyzer() -> Analyzer:
    """The index's analyser for the shipped languages: their stop words dropped, and the words
    that keep a stem of their own (`ownStems`) kept so."""
    _, languages = load_vocabulary_data()
    stop = [w for data in languages.values() for w in Language.listed(data, "stopWords")]
    return Analyzer(stop, {w: t for data in languages.values() for w, t in own_stems(data).items()})


def own_stems(data: Mapping[str, Any]) -> dict[str, str]:
    """A language's `ownStems`: each listed word → the term it stands for (its key)."""
    listed = data.get("ownStems") or {}
    return {w.casefold(): term.casefold() for term, words in listed.items() for w in words}
