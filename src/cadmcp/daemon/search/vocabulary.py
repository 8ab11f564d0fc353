"""The CAD/BIM search vocabulary: synonym groups, app aliases and stop words, shipped as data.

`vocabulary.json` beside this module holds the data; toolset authors add words for their own
tools through the tool's `_meta["io.cadmcp/keywords"]` (see `catalog.py`), not here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from cadmcp.daemon.search.analyzer import Analyzer, fold, split_words

#: App aliases longer than this many words are not looked for.
_MAX_ALIAS_WORDS = 4
_CLAUSES = re.compile(r"[,;:.!?]\s")  # where a clause (and maybe a question) starts


@dataclass(frozen=True, slots=True)
class _Member:
    stems: tuple[str, ...]  # every word stemmed, stop words kept, for matching in the query
    terms: tuple[str, ...]  # index terms it expands to (stop words dropped)
    words: tuple[str, ...] = ()  # the words as listed (for a verb's imperative: its infinitive)


def imperatives(verb: str) -> list[str]:
    """The forms a request starts with for a German, French, Spanish or Italian infinitive, as
    commands are typed: zeichnen → zeichne, ajouter → ajoute, agregar → agrega, añadir → añade,
    spostare → sposta, aggiungere → aggiungi. English verbs (no such ending) have none."""
    if len(verb) < 5 or " " in verb:
        return []
    if verb.endswith(("are",)):
        return [verb[:-3] + "a"]
    if verb.endswith(("ere", "ire")):
        return [verb[:-3] + "i"]
    if verb.endswith(("en", "er", "ar")):
        return [verb[:-1]]
    if verb.endswith("ir"):
        return [verb[:-2] + "e"]
    return []


class Vocabulary:
    """Synonym expansion and app-name detection for queries."""

    def __init__(self, data: Mapping[str, Any], analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer or Analyzer(data.get("stopWords", ()))
        self._groups: list[tuple[_Member, ...]] = []
        self._by_first: dict[str, list[tuple[_Member, int]]] = {}
        for group in data.get("synonyms", ()):
            members = tuple(self._member(text) for text in group if split_words(text))
            gid = len(self._groups)
            self._groups.append(members)
            for m in members:
                self._by_first.setdefault(m.stems[0], []).append((m, gid))
        self._intents: dict[str, list[tuple[str, _Member]]] = {}  # first stem → (intent, member)
        for intent, texts in data.get("intents", {}).items():
            for text in texts:
                if not split_words(text):
                    continue
                member = self._member(text)
                forms = [member] + [
                    _Member((self.analyzer.stem(fold(form)),), member.terms, member.words)
                    for form in imperatives(fold(text).casefold())
                ]
                for m in forms:
                    if m.stems[0] != member.stems[0] or m is member:
                        self._intents.setdefault(m.stems[0], []).append((intent, m))
        self.verbs = frozenset(
            w for texts in data.get("intents", {}).values() for t in texts for w in split_words(t)
        )
        """Words of the intents' verbs: typed in capitals ("EXPLODE all blocks") they are still commands."""
        self._questions = frozenset(w for text in data.get("questions", ()) for w in split_words(text)[:1])
        self._clause_questions = frozenset(
            w for text in data.get("clauseQuestions", ()) for w in split_words(text)[:1]
        )
        self._help: dict[str, list[tuple[str, ...]]] = {}  # first word → phrases
        for text in data.get("helpRequests", ()):
            phrase = tuple(split_words(text))
            if phrase:
                self._help.setdefault(phrase[0], []).append(phrase)
        # a document and its plural, in every language of the vocabulary's "document" group
        documents = next((g for g in data.get("synonyms", ()) if "document" in g), ())
        self._documents = frozenset(w for text in documents for w in split_words(text)) | frozenset(
            w + "s" for text in documents for w in split_words(text)
        )
        self._noun_before = frozenset(data.get("nounBefore", ()))
        self._states = frozenset(data.get("states", ()))
        self._determiners = frozenset(data.get("determiners", ()))
        self._show_verbs = frozenset(data.get("showVerbs", ()))
        self._units = frozenset(w for text in data.get("units", ()) for w in split_words(text))
        self._counting = [tuple(split_words(t)) for t in data.get("counting", ()) if split_words(t)]
        self._views = [
            tuple(split_words(t)) for t in data.get("views", {}).get("phrases", ()) if split_words(t)
        ]
        self.view_words = tuple(w for t in data.get("views", {}).get("means", ()) for w in split_words(t))
        """What a view direction ("from the top", "Draufsicht") says: a picture of the model."""
        measures = data.get("measures", ())
        self.measure_terms = frozenset(t for text in measures for t in self.analyzer.terms(text))
        """Terms of the quantities a computed question may ask for (area, volume, length ...)."""
        self._apps: dict[tuple[str, ...], str] = {}
        for app, aliases in data.get("apps", {}).items():
            for alias in (app, *aliases):
                for words in alias_forms(alias):
                    self._apps[words] = app.casefold()

    def _member(self, text: str) -> _Member:
        words = split_words(text)
        return _Member(
            stems=tuple(self.analyzer.stem(w) for w in words),
            terms=tuple(self.analyzer.terms_of_words(words)),
            words=tuple(words),
        )

    def _groups_hit(self, words: Sequence[str]) -> list[int]:
        stems = [self.analyzer.stem(w) for w in words]
        hit: set[int] = set()
        for i, s in enumerate(stems):
            for member, gid in self._by_first.get(s, ()):
                n = len(member.stems)
                if tuple(stems[i : i + n]) == member.stems:
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
            if m.terms and (intent is None or any(i == intent for i, _ in self._intents.get(m.stems[0], ())))
        ]

    def intents(self, words: Sequence[str]) -> dict[str, list[tuple[str, tuple[tuple[str, ...], ...]]]]:
        """What kind of request the query's words make: intent → [(the words as typed, the phrases
        of terms that say the same: theirs and their synonyms')]. `change` (rename, move, add ...)
        counts only as the request's first word (after stop words: "please rename ...") or, as an
        infinitive ending in -en, anywhere ("Layer umbenennen", "Layer umbenennen: A -> B": German
        and Dutch put the verb last or before its arguments), where it is a command and not a
        noun ("save my changes"); `query` (how many, total ...) counts anywhere."""
        stems = [self.analyzer.stem(w) for w in words]
        content = [i for i, w in enumerate(words) if w not in self.analyzer.stop_words]
        ends = set(content[:1])
        # a German or Dutch infinitive: their requests put the verb last, or before what it acts
        # on ("Layer umbenennen: WAND -> A-WALL")
        ends.update(i for i in content if words[i].endswith("en"))
        out: dict[str, list[tuple[str, tuple[tuple[str, ...], ...]]]] = {}
        for i, s in enumerate(stems):
            for intent, member in self._intents.get(s, ()):
                n = len(member.stems)
                if tuple(stems[i : i + n]) != member.stems or (intent == "change" and i not in ends):
                    continue
                if intent == "change" and words[i + n : i + n + 1] and words[i + n] in self._noun_before:
                    continue  # "that edit was wrong": a noun, not a command
                typed = words[i : i + n]
                phrases = [member.terms, tuple(self.analyzer.terms_of_words(list(typed)))]
                phrases += self.synonym_phrases(typed, intent) + self.synonym_phrases(member.words, intent)
                out.setdefault(intent, []).append(
                    (" ".join(typed), tuple(dict.fromkeys(p for p in phrases if p)))
                )
        return out

    def amounts(self, words: Sequence[str]) -> list[str]:
        """Amounts the request gives: a number followed by a unit ("5 mm", "0.5 m", "30 degrees")."""
        return [
            f"{words[i]} {words[i + 1]}"
            for i in range(len(words) - 1)
            if words[i].isdigit() and words[i + 1] in self._units
        ]

    def counting_words(self, words: Sequence[str]) -> set[int]:
        """Positions of the words that ask for a count ("how many", "number of", "wie viele")."""
        return _phrase_positions(words, self._counting)

    def view_directions(self, words: Sequence[str]) -> set[int]:
        """Positions of the words that name a view direction ("from the top", "vue de dessus")."""
        return _phrase_positions(words, self._views)

    def asks_to_show(self, words: Sequence[str]) -> bool:
        """Whether the request starts by asking to show or list something ("show me ...")."""
        content = [w for w in words if w not in self.analyzer.stop_words]
        return bool(content) and content[0] in self._show_verbs

    def state_words(self, words: Sequence[str]) -> set[int]:
        """Positions of words that describe a document's state rather than ask for an action:
        "open" in "show me all open files" or "focus on the second open document" (after a
        determiner, before a document word), not in "open the file"."""
        out: set[int] = set()
        for i in range(1, len(words) - 1):
            if (
                words[i] in self._states
                and words[i - 1] in self._determiners
                and words[i + 1] in self._documents
            ):
                out.add(i)
        return out

    def is_question(self, query: str, words: Sequence[str], said: Sequence[str] | None = None) -> bool:
        """Whether the request asks about state ("which layers are frozen", "... open?") or for
        help ("scripting recipes", "how to add a pset") rather than for something to be done.
        `said`: its words without the names it supplies (a layer called 'Examples' asks for no
        help); `words` by default."""
        if not words:
            return False
        if words[0] in self._questions or query.rstrip().endswith("?"):
            return True
        if self._asks_help(words if said is None else said):
            return True
        # a question may follow what the user saw: "Pad001 is red, why did the recompute fail"
        clauses = (split_words(c)[:1] for c in _CLAUSES.split(query)[1:])
        return any(first and first[0] in self._clause_questions for first in clauses)

    def _asks_help(self, words: Sequence[str]) -> bool:
        for i, word in enumerate(words):
            for phrase in self._help.get(word, ()):
                if tuple(words[i : i + len(phrase)]) != phrase:
                    continue
                # "help me find ..." is a way of asking, not a request for help
                if phrase != ("help",) or tuple(words[i + 1 : i + 2]) not in (("me",), ("us",), ("you",)):
                    return True
        return False

    @property
    def app_aliases(self) -> dict[tuple[str, ...], str]:
        """Word sequences that name an app → the app's casefolded name."""
        return dict(self._apps)

    @staticmethod
    def app_mentions(words: Sequence[str], aliases: Mapping[tuple[str, ...], str]) -> set[str]:
        """Casefolded app names that the query's words name, by any alias in `aliases`."""
        found: set[str] = set()
        for i in range(len(words)):
            for n in range(1, min(_MAX_ALIAS_WORDS, len(words) - i) + 1):
                app = aliases.get(tuple(words[i : i + n]))
                if app is not None:
                    found.add(app)
        return found


def _phrase_positions(words: Sequence[str], phrases: Sequence[tuple[str, ...]]) -> set[int]:
    out: set[int] = set()
    for phrase in phrases:
        n = len(phrase)
        for i in range(len(words) - n + 1):
            if tuple(words[i : i + n]) == phrase:
                out.update(range(i, i + n))
    return out


def alias_forms(name: str) -> list[tuple[str, ...]]:
    """The word sequences that name an app: its words as the analyser splits them and, for a
    one-token name the analyser splits ("FreeCAD", "IfcOpenShell"), the same as one word, as
    people type it ("freecad")."""
    words = tuple(split_words(name))
    forms = [words] if words else []
    if len(words) > 1 and len(name.split()) == 1 and all(w.isalpha() for w in words):
        forms.append(("".join(words),))
    return forms


def load_vocabulary_data() -> dict[str, Any]:
    """The shipped vocabulary data (`vocabulary.json`)."""
    text = resources.files(__package__).joinpath("vocabulary.json").read_text(encoding="utf-8")
    return json.loads(text)


def default_vocabulary() -> Vocabulary:
    """A fresh vocabulary from the shipped data."""
    return Vocabulary(load_vocabulary_data())
