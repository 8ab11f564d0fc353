"""Inverted lists in flat arrays, scored with numpy.

Documents get consecutive numbers as hosts are added; a host's removal only marks its
numbers dead (and fixes document frequencies), so adding or removing a host costs time in
proportion to that host. When more than half of the numbers are dead the lists are
compacted. numpy is imported on first use, not when the daemon starts.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

_COMPACT_MIN_DEAD = 4096  # bound


def numpy_module() -> Any:
    """numpy, imported on first use."""
    import numpy

    return numpy


class Postings:
    """term → (doc number, saturated term weight) lists, plus per-doc kind and app codes."""

    def __init__(self) -> None:
        self._lists: dict[str, tuple[array[int], array[float]]] = {}
        self._df: dict[str, int] = {}
        self._alive = array("b")
        self._kind = array("b")
        self._app = array("i")
        self.size = 0  # doc numbers handed out, dead ones included
        self.live = 0
        # per-search reads, kept until the lists change: numpy views of each term's list, its
        # IDF, and the per-doc arrays (a view pins its array, so they go before any change)
        self._views: dict[str, tuple[Any, Any]] = {}
        self._idf: dict[str, float] = {}
        self._arrays: dict[str, Any] = {}
        self._idf_sums: dict[frozenset[str], float] = {}

    def _changed(self) -> None:
        self._views.clear()
        self._idf.clear()
        self._arrays.clear()
        self._idf_sums.clear()

    def mask(self, name: str, docs: Collection[int]) -> Any:
        """A boolean array by doc number of `docs`, kept under `name` until the lists change
        (`docs` must change only with them)."""
        found = self._arrays.get(name)
        if found is None:
            np = numpy_module()
            found = np.zeros(self.size, dtype=bool)
            found[list(docs)] = True
            found.flags.writeable = False
            self._arrays[name] = found
        return found

    def add(
        self,
        base: int,
        postings: Mapping[str, tuple[Sequence[int], Sequence[float]]],
        kinds: Sequence[int],
        apps: Sequence[int],
    ) -> None:
        """Append one host's docs, numbered from `base` (which must be `size`): term → (numbers, weights)."""
        if base != self.size:
            raise ValueError(f"docs must be numbered from {self.size}, not {base}")
        self._changed()
        n = len(kinds)
        lists = self._lists
        df = self._df
        for term, (gids, sats) in postings.items():
            pair = lists.get(term)
            if pair is None:
                lists[term] = (array("i", gids), array("f", sats))
            else:
                pair[0].extend(gids)
                pair[1].extend(sats)
            df[term] = df.get(term, 0) + len(gids)
        self._alive.extend(array("b", [1]) * n)
        self._kind.extend(kinds)
        self._app.extend(apps)
        self.size += n
        self.live += n

    def remove(self, base: int, n: int, term_counts: Mapping[str, int]) -> None:
        """Mark docs base..base+n-1 dead; `term_counts` is how many of them hold each term."""
        self._changed()
        self._alive[base : base + n] = array("b", bytes(n))
        df = self._df
        for term, c in term_counts.items():
            left = df[term] - c
            if left:
                df[term] = left
            else:
                del df[term]
        self.live -= n

    def df(self, term: str) -> int:
        """How many live docs hold `term`."""
        return self._df.get(term, 0)

    def idf_sum(self, terms: frozenset[str]) -> float:
        """The summed IDF of a set of terms (cached: twins on several hosts share their sets)."""
        found = self._idf_sums.get(terms)
        if found is None:
            found = sum(map(self.idf, terms))
            if len(self._idf_sums) < 100_000:  # bound
                self._idf_sums[terms] = found
        return found

    def idf(self, term: str) -> float:
        """BM25's IDF of `term` over the live docs (0 for a term no live doc holds)."""
        found = self._idf.get(term)
        if found is None:
            df = self._df.get(term, 0)
            found = math.log(1.0 + (self.live - df + 0.5) / (df + 0.5)) if df else 0.0  # formula
            self._idf[term] = found
        return found

    def terms(self) -> list[str]:
        """Every term some live doc holds."""
        return list(self._df)

    @property
    def needs_compaction(self) -> bool:
        dead = self.size - self.live
        return dead > _COMPACT_MIN_DEAD and dead > self.live

    def compact(self) -> np.ndarray:
        """Drop dead docs and renumber the live ones in order; returns old number → new (-1 if dead)."""
        self._changed()
        np = numpy_module()
        alive = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
        remap = np.full(self.size, -1, dtype=np.int64)
        remap[alive] = np.arange(int(alive.sum()))
        lists: dict[str, tuple[array[int], array[float]]] = {}
        for term, (g, s) in self._lists.items():
            if term not in self._df:
                continue
            ga = np.frombuffer(g, dtype=np.int32)
            keep = alive[ga]
            lists[term] = (
                array("i", remap[ga[keep]].astype(np.int32).tobytes()),
                array("f", np.frombuffer(s, dtype=np.float32)[keep].tobytes()),
            )
        self._lists = lists
        self._kind = array("b", np.frombuffer(self._kind, dtype=np.int8)[alive].tobytes())
        self._app = array("i", np.frombuffer(self._app, dtype=np.int32)[alive].tobytes())
        self._alive = array("b", [1]) * self.live
        self.size = self.live
        return remap

    def _view(self, term: str) -> tuple[Any, Any] | None:
        found = self._views.get(term)
        if found is None:
            pair = self._lists.get(term)
            if pair is None:
                return None
            np = numpy_module()
            found = (np.frombuffer(pair[0], dtype=np.int32), np.frombuffer(pair[1], dtype=np.float32))
            self._views[term] = found
        return found

    def _array(self, name: str) -> Any:
        found = self._arrays.get(name)
        if found is None:
            np = numpy_module()
            if name == "alive":
                found = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
            elif name == "kind":
                found = np.frombuffer(self._kind, dtype=np.int8).copy()
            else:
                found = np.frombuffer(self._app, dtype=np.int32).copy()
            found.flags.writeable = False
            self._arrays[name] = found
        return found

    def score(self, weighted: Sequence[tuple[str, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per doc number: summed w × saturation, summed w of the terms it holds, and whether
        the doc is live (read-only). `weighted` is (term, w) pairs."""
        np = numpy_module()
        found = [(v, w) for v, w in ((self._view(t), w) for t, w in weighted) if v is not None]
        if not found:
            zeros = np.zeros(self.size, dtype=np.float64)
            return zeros, zeros.copy(), self._array("alive")
        if len(found) == 1:
            (g, sat), w = found[0]
            gids, sats, ws = g, sat * w, np.full(len(g), w)
        else:  # one pass over every list: cheaper than one scatter-add per term
            gids = np.concatenate([v[0] for v, _ in found])
            sats = np.concatenate([v[1] * w for v, w in found])
            ws = np.repeat([w for _, w in found], [len(v[0]) for v, _ in found])
        acc = np.bincount(gids, weights=sats, minlength=self.size)
        cov = np.bincount(gids, weights=ws, minlength=self.size)
        return acc, cov, self._array("alive")

    def kind_codes(self) -> np.ndarray:
        """Kind code per doc number (read-only)."""
        return self._array("kind")

    def app_codes(self) -> np.ndarray:
        """App code per doc number (read-only)."""
        return self._array("app")
