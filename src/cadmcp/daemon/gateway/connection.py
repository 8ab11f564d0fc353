"""The daemon's one connection to the NATS gateway: connect out, reconnect forever, say why not.

The connection never stops the daemon: while the gateway is down or refuses the
credentials, local hosts keep working and `list_machines` reports the state as a typed
error (`gateway_unreachable` with the URL, `authentication_failed`), scrubbed of secrets.
`nats` is imported only here, when a gateway is configured.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import anyio

from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.gateway.settings import Settings
from cadmcp.daemon.gateway.subjects import Subjects
from cadmcp.wire.echo import echo

log = logging.getLogger("cadmcp.daemon.gateway")

RECONNECT_WAIT = 1.0
CONNECT_TIMEOUT = 3.0


class NotConnected(Exception):
    """The gateway connection is down right now."""


class Connection:
    """One NATS client with a state: connecting, connected, reconnecting, unreachable, auth_failed."""

    def __init__(self, settings: Settings, subjects: Subjects, inbox_prefix: str) -> None:
        self.settings = settings
        self.subjects = subjects
        self.inbox_prefix = inbox_prefix
        self.state = "connecting"
        self.problem: DaemonError | None = None
        self.denied: dict[str, float] = {}
        """Subjects the server refused (permission violations), with when."""
        self.connected_since: float | None = None
        self.reconnects = 0
        self.on_reconnect: list[Callable[[], Awaitable[None]]] = []
        """Called after the client reconnected (its subscriptions are back by then)."""
        self.up = anyio.Event()
        self._client: Any = None
        self._tg: Any = None

    # -- state -------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The NATS client once it has connected (while it reconnects, it queues what is sent)."""
        if self._client is None or not self.up.is_set() or self._client.is_closed:
            raise NotConnected(self.describe_down())
        return self._client

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.is_connected

    @property
    def max_payload(self) -> int:
        return int(getattr(self._client, "max_payload", 1024 * 1024) or 1024 * 1024)

    def describe_down(self) -> str:
        if self.problem is not None:
            return self.problem.message
        return f"The gateway {self.settings.display_url} is not connected yet."

    def status(self) -> dict[str, Any]:
        """What `list_machines` says about the gateway."""
        out: dict[str, Any] = {
            "configured": True,
            "url": self.settings.display_url,
            "space": self.settings.space,
            "state": "connected" if self.connected else self.state,
        }
        if self.connected and self.connected_since is not None:
            out["connectedForSeconds"] = round(time.monotonic() - self.connected_since, 1)
        if not self.connected and self.problem is not None:
            out["error"] = self.problem.body()
        if self.denied:
            subjects = sorted(self.denied)[:5]
            out["permissionDenied"] = {
                "type": "permission_denied",
                "message": f"The gateway refused this daemon the subjects {subjects}: this daemon uses "
                f"{self.subjects.everything} (space {self.settings.space!r}), which the server does not "
                f"allow its user{self._user_hint()}. Set the space the server's permissions give this user "
                "(--space, CADMCP_GATEWAY_SPACE or `space` in the config file), or allow that space there.",
                "subjects": subjects,
            }
        return out

    def _user_hint(self) -> str:
        """` (the NATS user 'alice': its space is usually 'alice')`, when a user name is set and the
        space is another."""
        user = self.settings.user
        if user and user != self.settings.space:
            return f" (the NATS user {user!r}: its space is usually {user!r}, the default is your login name)"
        return ""

    # -- running -----------------------------------------------------------------------------
    async def run(self) -> None:
        """Connect (retrying forever), then stay until cancelled; the client reconnects by itself."""
        client = _tls_kept_client()
        self._client = client
        try:
            await client.connect(**self._options())
            self._up()
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception), anyio.move_on_after(2):
                await client.close()
            self.state = "closed"

    def _options(self) -> dict[str, Any]:
        s = self.settings
        options: dict[str, Any] = {
            "servers": s.servers,
            "name": f"cadmcp {s.machine_name}",
            "error_cb": self._on_error,
            "disconnected_cb": self._on_disconnected,
            "reconnected_cb": self._on_reconnected,
            "max_reconnect_attempts": -1,
            "reconnect_time_wait": RECONNECT_WAIT,
            "connect_timeout": CONNECT_TIMEOUT,
            "ping_interval": max(5, int(s.heartbeat * 2)),
            "max_outstanding_pings": 3,
            "inbox_prefix": self.inbox_prefix,
        }
        if s.creds:
            options["user_credentials"] = s.creds
        if s.nkey:
            options["nkeys_seed"] = s.nkey
        if s.user:
            options["user"] = s.user
        if s.password:
            options["password"] = s.password
        if s.token:
            options["token"] = s.token
        if s.tls_ca or s.tls_cert or any(u.startswith("tls://") for u in s.servers):
            context = ssl.create_default_context(cafile=s.tls_ca)
            if s.tls_cert:
                context.load_cert_chain(s.tls_cert, s.tls_key)
            options["tls"] = context
        return options

    def _up(self) -> None:
        self.state = "connected"
        self.problem = None
        self.connected_since = time.monotonic()
        self.up.set()
        log.info("gateway connected url=%s space=%s", self.settings.display_url, self.settings.space)

    async def _on_error(self, exc: Exception) -> None:
        text = self.settings.redact(f"{type(exc).__name__}: {exc}")
        url = self.settings.display_url
        if "permissions violation" in text.lower():
            subject = text.split('"')[1] if text.count('"') >= 2 else text
            self.denied[subject] = time.monotonic()
            log.warning("gateway refused a subject: %s", echo(subject, 200))
            return
        if "authorization violation" in text.lower() or "authentication" in text.lower():
            self.state = "auth_failed"
            self.problem = DaemonError(
                "authentication_failed",
                f"The gateway {url} refused this daemon's credentials ({self._sent()}). Check them against "
                "the server's (see docs/machines.md); they were not shown here.",
                {"url": url},
            )
        elif not self.connected and not (
            self.state == "auth_failed" and isinstance(exc, ConnectionResetError)
        ):
            # (a server that refused the credentials also resets the connection: keep that reason)
            self.state = "unreachable"
            self.problem = DaemonError(
                "gateway_unreachable",
                f"The gateway {url} cannot be reached ({echo(text, 160)}). {_unreachable_hint(text)} The "
                "daemon keeps retrying.",
                {"url": url},
            )
        log.info("gateway error: %s", echo(text, 200))

    def _sent(self) -> str:
        """Which credentials this daemon sent, by kind (several set at once are all sent)."""
        s = self.settings
        kinds = [
            name
            for name, present in (
                (f"the creds file {s.creds}", s.creds),
                (f"the nkey seed {s.nkey}", s.nkey),
                ("a user and password" if s.password else "a user without password", s.user),
                ("a token", s.token),
            )
            if present
        ]
        if any(urlsplit(u).username for u in s.servers):
            kinds.append("the user in the URL")
        if not kinds:
            return "it sent none: set the creds, nkeySeed, user and password, or token the server expects"
        sent = ", ".join(kinds)
        if len(kinds) > 1:
            return f"it sent {sent}: only one kind is expected, unset the others (config file, environment)"
        return f"it sent {sent}"

    async def _on_disconnected(self) -> None:
        if self.state == "connected":
            self.state = "reconnecting"
            self.problem = DaemonError(
                "gateway_unreachable",
                f"The connection to the gateway {self.settings.display_url} was lost; reconnecting.",
                {"url": self.settings.display_url},
            )
            log.info("gateway disconnected url=%s", self.settings.display_url)

    async def _on_reconnected(self) -> None:
        self.reconnects += 1
        self._up()
        for callback in list(self.on_reconnect):
            with contextlib.suppress(Exception):
                await callback()


PLAIN_SERVER = (
    "the server does not offer TLS, and a tls:// address asks for it: nothing was sent (no credentials). "
    "Configure TLS on nats-server, or use a nats:// address if a plain connection is what you want"
)


def _tls_kept_client() -> Any:
    """A NATS client that keeps a tls:// address's promise. nats-py turns a connection to TLS only
    when the server's INFO asks for it, so a server that does not (or someone in between) got the
    CONNECT, credentials included, in plain text; this one refuses before writing it."""
    from nats.aio.client import Client
    from nats.errors import Error

    class TLSKept(Client):
        def _connect_command(self) -> bytes:
            server = self._current_server
            plain = not self._server_info.get("tls_required") and not self.options.get("tls_handshake_first")
            if server is not None and server.uri.scheme == "tls" and plain:
                raise Error(PLAIN_SERVER)
            return super()._connect_command()

    return TLSKept()


def _unreachable_hint(text: str) -> str:
    """What to check, from how the connection failed."""
    lowered = text.lower()
    if "certificate_verify_failed" in lowered or "certificate verify failed" in lowered:
        return (
            "The server's TLS certificate is not trusted here: give the CA that signed it with tlsCa "
            "(CADMCP_GATEWAY_TLS_CA, --tls-ca)."
        )
    if "wrong_version_number" in lowered or "record layer failure" in lowered:  # not TLS on that port
        return "TLS did not work with that server: if it does not offer TLS, use a nats:// URL."
    return "Check that nats-server runs there and the address and port are right."
