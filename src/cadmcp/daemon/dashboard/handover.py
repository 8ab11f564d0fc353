"""The page's address and logins, kept beside the dashboard lock so another daemon can go on
serving them when the one serving the page exits (its AI client's session ended).

The daemon holding `dashboard.lock` writes `dashboard.json` (mode 0600, in the 0700 runtime
directory) when it starts serving and at each login: its port and, per session, a digest of
the cookie, the page's CSRF token and when it expires. Every other daemon looks at the file
now and then (`HANDOVER_LOOK`); once the lock is free and a session is still valid, the first
to take the lock listens on the same port and accepts the same cookies, so an open page
reconnects by itself. Whoever could read the file could already ask a daemon's door for a
login link: it adds no way in.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD_FILE = "dashboard.json"
HANDOVER_LOOK = 1.0
"""Seconds between a daemon's looks at whether the page needs a new server."""
RETRY_TAKEN = 30.0
"""Seconds before a daemon tries again a page's port another program held."""
MAX_RECORD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Kept:
    """A login session as the record keeps it (the cookie itself is never written)."""

    digest: str
    csrf: str
    expires: float


def cookie_digest(cookie: str) -> str:
    return hashlib.sha256(cookie.encode("utf-8", "replace")).hexdigest()


def write(directory: Path, port: int, sessions: list[Kept]) -> None:
    """Write the record atomically, private to this user (a failure only loses the handover)."""
    path = directory / RECORD_FILE
    body = {
        "pid": os.getpid(),
        "port": port,
        "sessions": [{"digest": s.digest, "csrf": s.csrf, "expires": s.expires} for s in sessions],
    }
    temporary = path.with_name(f".{RECORD_FILE}.{os.getpid()}")
    with contextlib.suppress(OSError):
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out)
        os.replace(temporary, path)


def read(directory: Path) -> tuple[int, list[Kept]] | None:
    """The port and the sessions still valid, or None when there is no page to go on serving."""
    path = directory / RECORD_FILE
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            return None
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    port = raw.get("port") if isinstance(raw, dict) else None
    if not isinstance(port, int) or not 0 < port < 65536:
        return None
    now = time.time()
    kept = [
        Kept(s["digest"], s["csrf"], float(s["expires"]))
        for s in raw.get("sessions") or []
        if isinstance(s, dict)
        and isinstance(s.get("digest"), str)
        and isinstance(s.get("csrf"), str)
        and isinstance(s.get("expires"), (int, float))
        and s["expires"] > now
    ]
    return (port, kept) if kept else None
