"""Where the dashboard is served, started only when someone asks for it (`cadmcp dashboard`).

Every daemon has this small object; nothing of the dashboard is imported or run until a
login link is asked for through the daemon's door. A daemon serving HTTP on TCP
(`cadmcp daemon --http`) serves the page beside `/mcp`; any other daemon serves it on a
loopback port of its own, and only the one holding the runtime directory's dashboard lock
does, so there is one page per machine whichever daemon an AI client started. When that daemon
exits, another goes on serving the page at the same address with the same logins
(`cadmcp.daemon.dashboard.handover`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.abc

from cadmcp.daemon.dashboard import handover

if TYPE_CHECKING:
    from cadmcp.daemon.dashboard.parts import DaemonParts
    from cadmcp.daemon.dashboard.service import Dashboard

LOCK_FILE = "dashboard.lock"
PORT_ENV = "CADMCP_DASHBOARD_PORT"
"""The loopback port a daemon without HTTP serves the dashboard on (default: the port of the page
it goes on serving, else a free one)."""
log = logging.getLogger("cadmcp.daemon.dashboard")


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
        self._unusable: tuple[int, float] | None = None
        """The recorded port this daemon could not listen on, and when it tries it again."""

    def bind(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg
        tg.start_soon(self._watch_handover)

    @property
    def _directory(self) -> Path:
        return Path(self.daemon.directory.directory)

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
        return self._listen(handover.read(self._directory), elsewhere=True)

    def _listen(self, record: tuple[int, list[handover.Kept]] | None, *, elsewhere: bool) -> str | None:
        """Serve the page on the recorded port with its logins (or, `elsewhere`, on another port when
        that one is taken); the dashboard lock is this daemon's. None, or why it cannot listen."""
        assert self._tg is not None
        wanted = os.environ.get(PORT_ENV)
        if wanted:
            try:
                ports = [int(wanted)]
            except ValueError:
                self.release()
                return f"{PORT_ENV}={wanted!r} is no port number; set it to one, or unset it."
        elif record is None:
            ports = [0]
        else:
            ports = [record[0], 0] if elsewhere else [record[0]]
        problem = ""
        for port in ports:
            try:
                sock = socket.create_server(("127.0.0.1", port))
                break
            except OSError as exc:
                problem = f"Cannot listen on 127.0.0.1 port {port} ({exc}); set {PORT_ENV}."
        else:
            self.release()
            return problem
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        dashboard = self._make()
        dashboard.access.port = port = sock.getsockname()[1]
        if record is not None and port == record[0]:
            dashboard.access.adopt(record[1])
        dashboard.access.on_login = self._keep
        self._keep()
        app = _only_dashboard(dashboard.app())
        self._tg.start_soon(_guarded, lambda: _serve(app, sock), "its web server")
        self.base = f"http://127.0.0.1:{port}"
        return None

    def _keep(self) -> None:
        """Write the handover record: this page's port and logins."""
        if self.dashboard is not None:
            handover.write(self._directory, self.dashboard.access.port, self.dashboard.access.kept())

    async def _watch_handover(self) -> None:
        """Go on serving the page of a daemon that exited (its lock free, a login still valid)."""
        while self.base is None:
            await anyio.sleep(handover.HANDOVER_LOOK)
            record = handover.read(self._directory)
            if record is None or (
                self._unusable and self._unusable[0] == record[0] and time.monotonic() < self._unusable[1]
            ):
                continue
            async with self._starting:
                if self.base is not None or self._take_lock() is not None:
                    continue
                problem = self._listen(record, elsewhere=False)
            if problem is not None:  # another program has the port: tried again now and then
                self._unusable = (record[0], time.monotonic() + handover.RETRY_TAKEN)
                log.info("The dashboard's page was left by the daemon serving it; %s", problem)
            else:
                log.info("Serving the dashboard's page at %s, left by the daemon that served it", self.base)

    def _take_lock(self) -> int | None:
        """None when this daemon holds the dashboard lock now; else the holder's pid (0: unknown)."""
        path = self._directory / LOCK_FILE
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
        log.exception("the dashboard stopped (%s failed)", what)


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
