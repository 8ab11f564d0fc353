"""The pictures of the daemon's recent answers, kept for the dashboard's timeline.

The call log keeps an image as type, mime type and length only. This middleware keeps the
images themselves of the last few `tools/call` answers, in memory and bounded (count and
bytes), and notes their key on the call's log line (`images=PID-N`), so the page can show
them inline beside the line. Keeping one is taking a reference to the answer's base64 text:
nothing is decoded, copied or written on the agent's path. Only raster images are kept.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cadmcp.wire.calllog import note

MAX_ANSWERS = 64
"""Answers whose images are kept (the oldest go first)."""
MAX_BYTES = 24 * 1024 * 1024
"""Base64 characters kept in all (the oldest answers go first)."""
MAX_IMAGES_PER_ANSWER = 4
RASTER = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Served as they are; others (an SVG can carry script) are not kept."""


class RecentImages:
    """A bounded store of recent answers' images, by key; also the daemon's middleware."""

    def __init__(self, max_answers: int = MAX_ANSWERS, max_bytes: int = MAX_BYTES) -> None:
        self.max_answers = max_answers
        self.max_bytes = max_bytes
        self._kept: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()
        self._bytes = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.prefix = f"{os.getpid()}-"
        """Keys of this daemon start with its pid (other daemons keep their own)."""

    def keep(self, result: Any) -> str | None:
        """Keep the raster images of a wire result; their key, or None when it has none."""
        if not isinstance(result, Mapping):
            return None
        images = [
            (str(c.get("mimeType")), c["data"])
            for c in result.get("content") or []
            if isinstance(c, Mapping)
            and c.get("type") == "image"
            and c.get("mimeType") in RASTER
            and isinstance(c.get("data"), str)
            and len(c["data"]) <= self.max_bytes // 4
        ][:MAX_IMAGES_PER_ANSWER]
        if not images:
            return None
        size = sum(len(data) for _, data in images)
        with self._lock:
            key = f"{self.prefix}{next(self._ids)}"
            self._kept[key] = images
            self._bytes += size
            while self._kept and (len(self._kept) > self.max_answers or self._bytes > self.max_bytes):
                _, gone = self._kept.popitem(last=False)
                self._bytes -= sum(len(data) for _, data in gone)
        return key

    def get(self, key: str, index: int) -> tuple[str, bytes] | None:
        """Image `index` of the answer `key` as (mime type, bytes); None once it is no longer kept."""
        with self._lock:
            images = self._kept.get(key)
            found = images[index] if images is not None and 0 <= index < len(images) else None
        if found is None:
            return None
        with contextlib.suppress(binascii.Error, ValueError):
            return found[0], base64.b64decode(found[1], validate=False)
        return None

    @property
    def size(self) -> tuple[int, int]:
        """(answers kept, base64 characters kept)."""
        with self._lock:
            return len(self._kept), self._bytes

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """Middleware inside the call log's: a `tools/call` answer's images are kept, their key noted."""
        result = await call_next(ctx)
        if ctx.method == "tools/call":
            with contextlib.suppress(Exception):  # keeping a picture never breaks a call
                key = self.keep(result)
                if key is not None:
                    note(images=key)
        return result
