"""Inverted lists in flat arrays, scored with numpy.

Documents get consecutive numbers as hosts are added; a host's removal only marks its
numbers dead (and fixes document frequencies), so adding or removing a host costs time in
proportion to that host. When more than half of the numbers are dead the lists are
compacted. numpy is imported on first use, not when the daemon starts.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

_COMPACT_MIN_DEAD = 4096


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

    def terms(self) -> list[str]:
        """Every term some live doc holds."""
        return list(self._df)

    @property
    def needs_compaction(self) -> bool:
        dead = self.size - self.live
        return dead > _COMPACT_MIN_DEAD and dead > self.live

    def compact(self) -> np.ndarray:
        """Drop dead docs and renumber the live ones in order; returns old number → new (-1 if dead)."""
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

    def score(self, weighted: Sequence[tuple[str, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per doc number: summed w × saturation, summed w of the terms it holds, and whether
        the doc is live. `weighted` is (term, w) pairs."""
        np = numpy_module()
        acc = np.zeros(self.size, dtype=np.float64)
        cov = np.zeros(self.size, dtype=np.float64)
        for term, w in weighted:
            pair = self._lists.get(term)
            if pair is None:
                continue
            g = np.frombuffer(pair[0], dtype=np.int32)
            acc[g] += w * np.frombuffer(pair[1], dtype=np.float32)
            cov[g] += w
            del g
        return acc, cov, np.frombuffer(self._alive, dtype=np.int8).astype(bool)

    def kind_codes(self) -> np.ndarray:
        """Kind code per doc number (a copy)."""
        np = numpy_module()
        return np.frombuffer(self._kind, dtype=np.int8).copy()

    def app_codes(self) -> np.ndarray:
        """App code per doc number (a copy)."""
        np = numpy_module()
        return np.frombuffer(self._app, dtype=np.int32).copy()
