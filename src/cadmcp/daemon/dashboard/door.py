"""Where the dashboard is served, started only when someone asks for it (`cadmcp dashboard`).

Every daemon has this small object; nothing of the dashboard is imported or run until a
login link is asked for through the daemon's door. A daemon serving HTTP on TCP
(`cadmcp daemon --http`) serves the page beside `/mcp`; any other daemon serves it on a
loopback port of its own, and only the one holding the runtime directory's dashboard lock
does, so there is one page per machine whichever daemon an AI client started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.abc

if TYPE_CHECKING:
    from cadmcp.daemon.dashboard.parts import DaemonParts
    from cadmcp.daemon.dashboard.service import Dashboard

LOCK_FILE = "dashboard.lock"
PORT_ENV = "CADMCP_DASHBOARD_PORT"
"""The loopback port a daemon without HTTP serves the dashboard on (default: a free one)."""


class DashboardDoor:
    """The daemon's dashboard, made and served on the first request for a login link."""

    def __init__(self, daemon: DaemonParts) -> None:
        self.daemon = daemon
        self.dashboard: Dashboard | None = None
        self.base: str | None = None
        """`http://127.0.0.1:PORT` where the page is served, once it is."""
        self.shared_http: str | None = None
        """The HTTP daemon's own base URL, when the page is served beside `/mcp`."""
        self._tg: anyio.abc.TaskGroup | None = None
        self._lock_file: IO[str] | None = None
        self._starting = anyio.Lock()

    def bind(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg

    def release(self) -> None:
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                self._lock_file.close()
            self._lock_file = None

    def asgi(self) -> Any:
        """For the HTTP daemon: the dashboard's app (made on its first request)."""
        dashboard = self._make()
        return dashboard.app()

    def status(self) -> dict[str, Any]:
        gateway = self.daemon.gateway
        registers = bool(gateway is not None and gateway.status().get("registeredBy") == "this daemon")
        return {
            "ok": True,
            "pid": os.getpid(),
            "serving": self.base,
            "http": self.shared_http is not None,
            "registers": registers,
        }

    async def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """The door's `dashboard` op: `{"status": true}` says how this daemon stands; otherwise the
        page is started if needed and a one-time login link answered."""
        if request.get("status") is True:
            return self.status()
        async with self._starting:
            if self.base is None:
                problem = await self._start()
                if problem is not None:
                    return {"ok": False, "error": problem}
        assert self.dashboard is not None and self.base is not None
        return {"ok": True, "pid": os.getpid(), "url": self.dashboard.login_link(self.base)}

    def _make(self) -> Dashboard:
        if self.dashboard is None:
            from cadmcp.daemon.dashboard.service import Dashboard

            self.dashboard = Dashboard(self.daemon)
            if self._tg is not None:
                self._tg.start_soon(_guarded, self.dashboard.run, "its updates")
        return self.dashboard

    async def _start(self) -> str | None:
        if self._tg is None:
            return "This daemon is not running yet."
        if self.shared_http is not None:
            self._make().access.port = int(self.shared_http.rsplit(":", 1)[1])
            self.base = self.shared_http
            return None
        holder = self._take_lock()
        if holder is not None:
            return f"Another daemon (pid {holder}) serves this machine's dashboard; ask it."
        try:
            port = int(os.environ.get(PORT_ENV, "0"))
            sock = socket.create_server(("127.0.0.1", port))
        except (OSError, ValueError) as exc:
            self.release()
            return f"Cannot listen on 127.0.0.1 port {os.environ.get(PORT_ENV, '0')} ({exc}); set {PORT_ENV}."
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        dashboard = self._make()
        dashboard.access.port = sock.getsockname()[1]
        app = _only_dashboard(dashboard.app())
        self._tg.start_soon(_guarded, lambda: _serve(app, sock), "its web server")
        self.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return None

    def _take_lock(self) -> int | None:
        """None when this daemon holds the dashboard lock now; else the holder's pid (0: unknown)."""
        path = Path(self.daemon.directory.directory) / LOCK_FILE
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no lock, every daemon may serve
            return None
        handle = open(path, "a+")  # noqa: SIM115 - held open while the lock is ours
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            with contextlib.suppress(OSError, ValueError):
                return int(path.read_text().strip() or "0")
            return 0
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock_file = handle
        return None


async def _guarded(run: Any, what: str) -> None:
    """Run a part of the dashboard; if it fails, the dashboard stops, never the daemon."""
    try:
        await run()
    except Exception:
        logging.getLogger("cadmcp.daemon.dashboard").exception("the dashboard stopped (%s failed)", what)


def _only_dashboard(app: Any) -> Any:
    async def only(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/dashboard"):
            from starlette.responses import RedirectResponse

            await RedirectResponse("/dashboard/")(scope, receive, send)
            return
        await app(scope, receive, send)

    return only


async def _serve(app: Any, sock: socket.socket) -> None:
    """uvicorn on the bound socket, leaving the daemon's signal handling alone."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield

    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1.0)
    server = Server(config)
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
