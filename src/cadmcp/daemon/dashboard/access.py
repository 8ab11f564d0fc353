"""Who may see the dashboard: the user, in their own browser, on this machine.

A one-time login code (minted on request through the daemon's private door in the 0700
runtime directory, or by a holder of the HTTP bearer token) is exchanged once for a session
cookie (HttpOnly, SameSite=Strict, path `/dashboard`). Every request must name this
daemon's loopback address in `Host` (no DNS rebinding), come from a loopback peer owned by
this user (Linux: the connecting socket's owner in /proc/net/tcp), and carry the cookie.
State-changing requests also need the session's CSRF token in a header and an `Origin` of
the dashboard itself.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cadmcp.daemon.dashboard.handover import Kept, cookie_digest

COOKIE = "cadmcp_dashboard"
CSRF_HEADER = "x-cadmcp-csrf"
CODE_SECONDS = 120.0
"""How long a login link works (once)."""
SESSION_SECONDS = 12 * 3600.0
MAX_CODES = 16
MAX_SESSIONS = 32
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass
class Session:
    secret: str
    csrf: str
    expires: float


@dataclass
class Access:
    """Login codes, sessions and the request checks of one dashboard listener."""

    port: int = 0
    on_login: Callable[[], None] | None = None
    """Called after each login (the handover record is written again)."""
    _codes: dict[str, float] = field(default_factory=dict)
    _sessions: dict[str, Session] = field(default_factory=dict)
    """By the digest of their cookie (`cookie_digest`)."""

    # -- logging in --------------------------------------------------------------------------
    def mint_code(self) -> str:
        """A new one-time login code (the oldest go when too many wait)."""
        now = time.monotonic()
        self._codes = {c: t for c, t in self._codes.items() if t > now}
        while len(self._codes) >= MAX_CODES:
            self._codes.pop(next(iter(self._codes)))
        code = secrets.token_urlsafe(24)
        self._codes[code] = now + CODE_SECONDS
        return code

    def redeem(self, code: str) -> Session | None:
        """The new session a valid, unused, unexpired code opens (the code is spent either way)."""
        expires = self._codes.pop(code, None) if isinstance(code, str) and len(code) < 100 else None
        if expires is None or expires < time.monotonic():
            return None
        now = time.time()
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(24), now + SESSION_SECONDS)
        self._sessions[cookie_digest(session.secret)] = session
        if self.on_login is not None:
            self.on_login()
        return session

    def session(self, cookie: str | None) -> Session | None:
        if not cookie or len(cookie) > 200:
            return None
        session = self._sessions.get(cookie_digest(cookie))
        return session if session is not None and session.expires > time.time() else None

    # -- going on from another daemon ---------------------------------------------------------
    def kept(self) -> list[Kept]:
        """The valid sessions as the handover record keeps them."""
        now = time.time()
        return [Kept(d, s.csrf, s.expires) for d, s in self._sessions.items() if s.expires > now]

    def adopt(self, kept: list[Kept]) -> None:
        """Accept the sessions another daemon's page logged in (their cookie is not known here)."""
        for one in kept[-MAX_SESSIONS:]:
            self._sessions[one.digest] = Session("", one.csrf, one.expires)

    # -- checking requests -------------------------------------------------------------------
    def host_ok(self, host: str | None) -> bool:
        """`Host` names this listener on a loopback name (a rebinding page's name is refused)."""
        if not host:
            return False
        return host.lower() in {f"{name}:{self.port}" for name in LOOPBACK_NAMES}

    def origin_ok(self, origin: str | None) -> bool:
        """`Origin` is the dashboard's own (a page of any other site, `null`, or none: refused)."""
        if not origin:
            return False
        return origin.lower() in {f"http://{name}:{self.port}" for name in LOOPBACK_NAMES}

    @staticmethod
    def csrf_ok(session: Session, header: str | None) -> bool:
        return bool(header) and hmac.compare_digest(
            session.csrf.encode(), str(header).encode(errors="replace")
        )


def peer_is_this_user(client: tuple[str, int] | None, server_port: int) -> bool:
    """Whether the TCP peer is a loopback socket owned by this user.

    On Linux the connecting socket is found in /proc/net/tcp(6) by its address and port and its
    owner compared with ours; elsewhere only loopback is checked (the cookie still decides)."""
    if client is None:
        return True  # a Unix socket: its 0600 mode already admits only this user
    host, port = client
    try:
        if not ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:
        return False
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        return True
    uid = _socket_owner(tables, port, server_port)
    return uid == os.getuid()


def _socket_owner(tables: list[Path], port: int, server_port: int) -> int | None:
    """The uid owning the socket with local port `port` connected to remote port `server_port`."""
    want_local, want_remote = f":{port:04X}", f":{server_port:04X}"
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 7 and parts[1].endswith(want_local) and parts[2].endswith(want_remote):
                return int(parts[7])
    return None
