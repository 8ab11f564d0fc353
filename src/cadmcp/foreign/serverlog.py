"""What a foreign server logs through MCP (`notifications/message`: FastMCP's ``ctx.info``,
``ctx.warning``), kept in the proxy's log: the call log, where `cadmcp logs` and the dashboard
read it. A server that logs in a loop is held to a rate, and one line says the rest are left out."""

from __future__ import annotations

import logging
import time
from typing import Any

from cadmcp.wire.calllog import clip

log = logging.getLogger("cadmcp.foreign")

MAX_LINES = 100
"""Lines of one server's log kept per window; the rest are counted."""
WINDOW_S = 10.0
MAX_CHARS = 500
"""Characters of one message kept."""
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ServerLog:
    """The session's `logging_callback` for one server (`name` as its host is called)."""

    def __init__(self, name: str, clock: Any = time.monotonic) -> None:
        self.name = name
        self._clock = clock
        self._window = clock()
        self._kept = 0

    async def __call__(self, params: Any) -> None:
        now = self._clock()
        if now - self._window >= WINDOW_S:
            self._window, self._kept = now, 0
        self._kept += 1
        if self._kept > MAX_LINES:
            if self._kept == MAX_LINES + 1:  # said at once: a flood that stops would never say it later
                said = "%s logs more than %d messages in %g s; the rest of them are left out"
                log.warning(said, self.name, MAX_LINES, WINDOW_S)
            return
        level = str(getattr(params, "level", "info"))
        logger = getattr(params, "logger", None)
        data = clip(getattr(params, "data", None), MAX_CHARS)
        text = data if isinstance(data, str) else repr(data)[:MAX_CHARS]
        source = f"{self.name} ({logger})" if logger else self.name
        log.log(max(_LEVELS.get(level, logging.INFO), logging.INFO), "%s logged %s: %s", source, level, text)
