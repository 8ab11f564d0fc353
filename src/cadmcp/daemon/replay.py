"""Single-use multi-round state: the nonces of `requestState`s already answered.

Every `requestState` the daemon seals carries a fresh nonce and its expiry. When a client
sends one back, its nonce is spent here; the same state sent again is refused, so a
confirmed action cannot be run twice by replaying the round that confirmed it. Nonces are
kept only until their state would have expired anyway, and the set is bounded: when it is
full the oldest are dropped and every state that expires no later than them is refused as
too old, so eviction never re-opens a replay.
"""

from __future__ import annotations

import heapq
import os
import secrets
import threading
import time
from collections.abc import Callable

MAX_SPENT = 100_000
"""Spent nonces remembered at once (about 10 MB); past it the oldest go and the floor rises."""


class SpentNonces:
    """A bounded, thread-safe set of spent nonces, each held until its state's expiry."""

    def __init__(self, capacity: int = MAX_SPENT, clock: Callable[[], float] = time.time) -> None:
        self.capacity = capacity
        self.clock = clock
        self._spent: dict[str, float] = {}
        self._by_expiry: list[tuple[float, str]] = []
        self._floor = float("-inf")
        self._lock = threading.Lock()

    def spend(self, nonce: str, expires: float) -> bool:
        """Mark a state's nonce used; False when it was used before (or is older than the floor)."""
        with self._lock:
            self._purge()
            if nonce in self._spent or expires <= self._floor:
                return False
            self._spent[nonce] = expires
            heapq.heappush(self._by_expiry, (expires, nonce))
            while len(self._spent) > self.capacity:
                oldest, dropped = heapq.heappop(self._by_expiry)
                del self._spent[dropped]
                self._floor = max(self._floor, oldest)
            return True

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._spent)

    def _purge(self) -> None:
        now = self.clock()
        while self._by_expiry and self._by_expiry[0][0] < now:
            _, nonce = heapq.heappop(self._by_expiry)
            del self._spent[nonce]


spent_states = SpentNonces()
"""The daemon's store (one per process: the state key is per process too)."""


STATE_TTL_ENV = "CADMCP_REQUEST_STATE_TTL"
"""Seconds a sealed multi-round requestState stays valid (default 600)."""


def state_ttl() -> float:
    """The configured state lifetime: spent nonces are kept at least this long."""
    try:
        return max(1.0, float(os.environ.get(STATE_TTL_ENV, "600")))
    except ValueError:
        return 600.0


def new_nonce() -> str:
    """A fresh random nonce for a state about to be sealed."""
    return secrets.token_urlsafe(16)
