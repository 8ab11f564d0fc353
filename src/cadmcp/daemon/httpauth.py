"""Who may call the daemon over HTTP: whoever holds the user's bearer token.

Whoever can call the daemon can run code as the user, so every HTTP request must carry
`Authorization: Bearer <token>`. The token is random (256 bits), made on the first HTTP
start and kept in `<config dir>/http-token` (mode 0600, read and written without following
links); `cadmcp daemon --print-token` prints it and `--new-token` replaces it. Requests
without it, or with another, get 401 and a `WWW-Authenticate: Bearer` challenge naming
the protected-resource metadata (RFC 9728) published at
`/.well-known/oauth-protected-resource/mcp`. Tokens are compared in constant time.

The checks are the MCP SDK's own (`BearerAuthBackend`, `RequireAuthMiddleware`) around the
SDK's streamable HTTP app; this module adds the token store, a static verifier, and the
listening socket (TCP on 127.0.0.1, or a Unix socket).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import re
import secrets
import socket
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadmcp.userdirs import CONFIG_DIR_ENV, config_dir
from cadmcp.wire.endpoints import RuntimeDirError, ensure_private_dir

TOKEN_FILE = "http-token"
TOKEN_PREFIX = "cadmcp_tok_"
MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
CLIENT_ID = "cadmcp-token"
"""The client id every holder of the token is known by (there is one user)."""
SHUTDOWN_GRACE_S = 1.0
"""How long Ctrl-C waits for in-flight HTTP requests before closing them."""
HINT = (
    "This cadmcp daemon needs the header Authorization: Bearer <token>. "
    "The user running it prints the token with: cadmcp daemon --print-token"
)
_TOKEN_RE = re.compile(r"^[\x21-\x7e]{32,512}$")


class TokenFileError(RuntimeError):
    """The token file cannot be trusted or read; the message names the path and the fix."""


def token_path() -> Path:
    """Where the HTTP token is kept: `<config dir>/http-token`."""
    return config_dir() / TOKEN_FILE


def read_token(path: Path | None = None) -> str:
    """The current token (what `cadmcp` itself sends when it is the client).

    Raises `TokenFileError` when there is none yet or the file is not private to the user.
    """
    path = path or token_path()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TokenFileError(
            f"no HTTP token yet at {path}: start the daemon once with `cadmcp daemon --http`"
        ) from None
    except OSError as exc:
        raise TokenFileError(
            f"the HTTP token file {path} cannot be opened ({exc.strerror}); if it is a link, remove it "
            "and start `cadmcp daemon --http --new-token`"
        ) from None
    with os.fdopen(fd, "r", encoding="ascii", errors="replace") as handle:
        info = os.fstat(handle.fileno())
        if os.name == "posix":
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                raise TokenFileError(
                    f"the HTTP token file {path} is not a regular file of yours; remove it and start "
                    "`cadmcp daemon --http --new-token`"
                )
            if stat.S_IMODE(info.st_mode) & 0o077:
                raise TokenFileError(
                    f"the HTTP token file {path} can be read by other users (mode "
                    f"{stat.S_IMODE(info.st_mode):04o}); run `chmod 600 {path}` and, since it may have "
                    "been read, start `cadmcp daemon --http --new-token`"
                )
        token = handle.read(1024).strip()
    if not _TOKEN_RE.match(token):
        raise TokenFileError(
            f"the HTTP token file {path} does not hold a token; start `cadmcp daemon --http --new-token`"
        )
    return token


def ensure_token(*, rotate: bool = False, path: Path | None = None) -> tuple[str, bool]:
    """The token to require, and whether it was made now (a first start, or `rotate`)."""
    path = path or token_path()
    try:
        ensure_private_dir(path.parent, "config folder", CONFIG_DIR_ENV, own_links=True)
    except RuntimeDirError as err:
        raise TokenFileError(str(err)) from None
    if not rotate:
        with contextlib.suppress(FileNotFoundError):
            if path.exists() or path.is_symlink():
                return read_token(path), False
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    staging = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(staging, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(token + "\n")
        os.replace(staging, path)  # atomic: a reader sees the old token or the new one
    except BaseException:
        with contextlib.suppress(OSError):
            staging.unlink()
        raise
    return token, True


def client_headers(path: Path | None = None) -> dict[str, str]:
    """The header `cadmcp` sends as a client of an HTTP daemon of the same user."""
    return {"Authorization": f"Bearer {read_token(path)}"}


# -- checking requests ---------------------------------------------------------------------------
class StaticTokenVerifier:
    """An MCP SDK `TokenVerifier` accepting exactly one token, compared in constant time."""

    def __init__(self, token: str, resource: str) -> None:
        self._expected = token.encode()
        self.resource = resource

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if not hmac.compare_digest(token.strip().encode(errors="replace"), self._expected):
            return None
        return AccessToken(token="***", client_id=CLIENT_ID, scopes=[], resource=self.resource)


def protected_resource_metadata(resource: str) -> dict[str, Any]:
    """RFC 9728 metadata for the MCP endpoint: a bearer token in the header, issued by the user.

    There is no authorization server to name: the token comes from the user's own machine
    (`cadmcp daemon --print-token`), so `authorization_servers` is left out.
    """
    return {
        "resource": resource,
        "bearer_methods_supported": ["header"],
        "resource_name": "cadmcp daemon",
    }


def guarded_app(
    server: Any,
    resource: str,
    token: str,
    *,
    transport_security: Any = None,
    dashboard: Callable[[], Any] | None = None,
) -> Any:
    """The SDK's streamable HTTP app behind the bearer check, plus the public metadata document.

    `dashboard` makes the dashboard's own app (on its first request), served under `/dashboard`
    with its own checks (a session cookie, not the bearer token: see `cadmcp.daemon.dashboard`)."""
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
    from pydantic import AnyHttpUrl
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.responses import JSONResponse

    from cadmcp.daemon.limits import MAX_REQUEST_BYTES

    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host="127.0.0.1",
        transport_security=transport_security,
        max_request_body_size=MAX_REQUEST_BYTES,  # larger bodies: 413 before they are read or parsed
    )
    metadata_url = _metadata_url(resource)

    class RequireToken(RequireAuthMiddleware):
        async def _send_auth_error(self, send: Any, status_code: int, error: str, description: str) -> None:
            await super()._send_auth_error(
                send, status_code, error, HINT if status_code == 401 else description
            )

    protected = AuthenticationMiddleware(
        AuthContextMiddleware(RequireToken(inner, [], AnyHttpUrl(metadata_url))),
        backend=BearerAuthBackend(StaticTokenVerifier(token, resource)),
    )
    metadata = JSONResponse(protected_resource_metadata(resource), headers={"Cache-Control": "no-store"})
    public = {METADATA_PATH, METADATA_PATH + MCP_PATH}
    page: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in public and scope["method"] in ("GET", "HEAD"):
            await metadata(scope, receive, send)
        elif dashboard is not None and scope["type"] == "http" and scope["path"].startswith("/dashboard"):
            if not page:
                page.append(dashboard())
            await page[0](scope, receive, send)
        elif scope["type"] == "lifespan":
            await inner(scope, receive, send)
        else:
            await protected(scope, receive, send)

    return app


def _metadata_url(resource: str) -> str:
    head, _, _ = resource.partition(MCP_PATH)
    return f"{head}{METADATA_PATH}{MCP_PATH}"


# -- where to listen -----------------------------------------------------------------------------
@dataclass
class Listener:
    """A bound listening socket and how clients reach it."""

    sock: socket.socket
    url: str
    """The MCP endpoint URL (for a Unix socket: the URL to send through it)."""
    unix_path: Path | None = None

    def describe(self) -> str:
        if self.unix_path is None:
            return self.url
        return f"{self.url} through the Unix socket {self.unix_path}"


class ListenError(RuntimeError):
    """The daemon cannot listen where asked; the message says what to change."""


def listen(host: str = "127.0.0.1", port: int = 8765, unix_path: Path | None = None) -> Listener:
    """Bind the HTTP listener now (so the URL printed is the one that works)."""
    if unix_path is not None:
        return _listen_unix(unix_path)
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        raise ListenError(
            f"cannot listen on {host}:{port} ({exc.strerror}); another daemon may be running there. "
            "Pass --port with a free port (or --port 0 to pick one)."
        ) from None
    # accepted connections inherit it: without it a response body written after its headers
    # waits for the client's delayed ACK, about 40 ms on every call
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return Listener(sock, f"http://{shown}:{bound_port}{MCP_PATH}")


def _listen_unix(path: Path) -> Listener:
    path = path.expanduser().absolute()
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if not stat.S_ISSOCK(info.st_mode) or (os.name == "posix" and info.st_uid != os.getuid()):
            raise ListenError(f"{path} exists and is not a socket of yours; choose another path.")
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # a socket left by a daemon that is gone
        else:
            raise ListenError(f"a server already listens on {path}; stop it or choose another path.")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is born 0600: no window where others may connect
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on the Unix socket {path} ({exc.strerror}).") from None
    finally:
        os.umask(old)
    sock.listen(128)
    return Listener(sock, f"http://localhost{MCP_PATH}", unix_path=path)


def unix_transport_security() -> Any:
    """Host/Origin checks for a Unix socket: clients send Host: localhost."""
    from mcp.server.transport_security import TransportSecuritySettings

    local = ["localhost", "localhost:*", "127.0.0.1", "127.0.0.1:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=local,
        allowed_origins=["http://localhost:*", "http://127.0.0.1:*", "http://localhost", "http://127.0.0.1"],
    )


# -- cadmcp as a client --------------------------------------------------------------------------
DEFAULT_URL = f"http://127.0.0.1:8765{MCP_PATH}"


@asynccontextmanager
async def connect(
    url: str = DEFAULT_URL, *, unix_socket: Path | None = None, token: str | None = None
) -> AsyncIterator[Any]:
    """MCP message streams to an HTTP daemon of this user, sending the token from the token file.

    Use with `mcp.client.session.ClientSession(read, write)`. `unix_socket` reaches a daemon
    started with `--unix-socket` (the URL's host is then only a name).
    """
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else client_headers()
    transport = httpx2.AsyncHTTPTransport(uds=str(unix_socket)) if unix_socket is not None else None
    client = httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(30.0, read=300.0), transport=transport
    )
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


def _quiet_cancelled_requests(record: logging.LogRecord) -> bool:
    """While stopping, requests closed after the grace period are expected, not errors."""
    exc = record.exc_info[1] if record.exc_info else None
    return not (isinstance(exc, asyncio.CancelledError) or record.getMessage().startswith("Cancel "))


async def serve(app: Any, listener: Listener) -> None:
    """Run uvicorn on the bound socket until SIGINT/SIGTERM, then return (no signal re-raised).

    uvicorn re-raises the signal that stopped it, and a re-raised SIGTERM ends the process
    before the daemon's own clean-up (launched hosts, the Unix socket file) can run.
    """
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if not self.should_exit:
                print("cadmcp daemon: stopping (hosts keep running)", file=sys.stderr, flush=True)
                logging.getLogger("uvicorn.error").addFilter(_quiet_cancelled_requests)
            super().handle_exit(sig, frame)
            self._captured_signals.clear()

    # In-flight calls (a long host script, an open event stream) must not hold the exit:
    # after the grace period uvicorn closes them, and the hosts keep their documents.
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=SHUTDOWN_GRACE_S
    )
    await Server(config).serve(sockets=[listener.sock])
