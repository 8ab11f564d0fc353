"""Text analysis for search: Unicode normalisation, identifier splitting, stop words, stemming,
and the names a request supplies (`without_names`: layer names in capitals).

One `Analyzer` turns any text (a tool name, a description, a user's query) into the list of
terms the index stores and the query looks up, so both sides always agree.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

import Stemmer

# Runs of letters (any script) or runs of digits; everything else separates words, which
# splits names on `_`, `-`, `.`, `/`, `:`, spaces and punctuation, and letters from digits.
_RUN = re.compile(r"[^\W\d_]+|\d+")
# camelCase / PascalCase / acronym boundaries inside a run of ASCII letters:
# "getHTTPResponse" -> get, HTTP, Response; "IfcWall" -> Ifc, Wall.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_]+")


# a lowercase letter followed by an uppercase one, or an acronym running into a word
_MIXED_CASE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_TEXT_CACHE = 50_000  # bound


# a word in capitals, in a request not all typed in capitals, is a name it supplies
_CAPS_TOKEN = re.compile(r"(?<!\S)(?=[^\sa-z]*?[A-Z]{2})[^\sa-z]+(?!\S)")


def without_names(query: str) -> str:
    """The request without the names it supplies: in a request not typed in capitals, the
    words in capitals (layer names such as `A-WALL`). A layer called WALL says nothing about
    which app the request is for."""
    # rule: in a request not all in capitals, words in capitals are names (a layer A-WALL), not domain words
    return _CAPS_TOKEN.sub(" ", query) if re.search(r"[a-z]", query) else query


def fold(text: str) -> str:
    """Unicode-normalise: compatibility forms (NFKC), accents dropped, case kept."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", text)


def split_words(text: str) -> list[str]:
    """Split text and identifiers into lowercase words (camelCase, snake, kebab, dotted, digits)."""
    text = fold(text)
    if text.isascii() and _MIXED_CASE.search(text) is None:  # fast path: no camelCase to split
        return _RUN.findall(text.lower())
    words: list[str] = []
    for run in _RUN.findall(text):
        if run.isdigit() or run.islower() or run.isupper() or run[1:].islower():
            words.append(run.casefold())
        else:
            words.extend(part.casefold() for part in _CAMEL.findall(run))
    return words


class Analyzer:
    """Words → search terms: stop words dropped, the rest stemmed (Snowball English, except the
    words whose stem would be another word's: `own_stems`, "drawing" is not "draw")."""

    def __init__(self, stop_words: Iterable[str] = (), own_stems: Mapping[str, str] | None = None) -> None:
        self._stemmer = Stemmer.Stemmer("english")
        self.stop_words = frozenset(w.casefold() for w in stop_words)
        self._stems: dict[str, str] = dict(own_stems or {})
        self._texts: dict[str, tuple[str, ...]] = {}

    def stem(self, word: str) -> str:
        """The stem of one lowercase word (cached)."""
        stem = self._stems.get(word)
        if stem is None:
            stem = self._stemmer.stemWord(word)
            if len(self._stems) < 200_000:  # bound
                self._stems[word] = stem
        return stem

    def terms(self, text: str) -> tuple[str, ...]:
        """Stemmed terms of `text` in order, stop words removed (cached: hosts re-list the same texts)."""
        cached = self._texts.get(text)
        if cached is None:
            stop = self.stop_words
            stems = self._stems
            cached = tuple([stems.get(w) or self.stem(w) for w in split_words(text) if w not in stop])
            if len(self._texts) >= _TEXT_CACHE:
                self._texts.clear()
            self._texts[text] = cached
        return cached

    def terms_of_words(self, words: Iterable[str]) -> list[str]:
        """Stemmed terms of already split words, stop words removed."""
        stop = self.stop_words
        return [self.stem(w) for w in words if w not in stop]
