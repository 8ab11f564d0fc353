"""The dashboard of one daemon: its watcher loop and its HTTP routes under `/dashboard`."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
import anyio.abc
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse

from cadmcp.daemon.dashboard import hostsview, pages
from cadmcp.daemon.dashboard.access import COOKIE, CSRF_HEADER, Access, Session, peer_is_this_user
from cadmcp.daemon.dashboard.events import EventHub, TooManyPages
from cadmcp.daemon.dashboard.parts import DaemonParts
from cadmcp.daemon.dashboard.steering import Steering
from cadmcp.daemon.dashboard.timeline import Timeline
from cadmcp.daemon.dashboard.views import DocumentViews, View
from cadmcp.userdirs import log_dir

log = logging.getLogger("cadmcp.daemon.dashboard")

PREFIX = "/dashboard"
POLL_SECONDS = 0.25
QUIET_POLL_SECONDS = 1.0
"""How often the logs and hosts are looked at while no page is open."""
MAX_BODY = 16 * 1024
TOOLSETS_URI = "cadmcp://toolsets"
TOOLSETS_SECONDS = 3.0
MAX_HOSTS_SEEN = 4096
"""Host pids remembered for the timeline (past that, only the running ones, until seen again)."""
TOOLSETS_RETRY_START, TOOLSETS_RETRY_MAX = 1.0, 30.0
"""Seconds before a toolset report that could not be read is asked for again (doubling)."""
STATIC = {"app.js": "text/javascript", "style.css": "text/css"}
SKIP_VIEW_TARGETS = frozenset({"view_screenshot", "list_documents", "navigate_history"})
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}
NOT_LOGGED_IN = (
    "Not logged in. Run `cadmcp dashboard` in a terminal of this user and open the one-time link it prints."
)


class Dashboard:
    """Everything the page shows, read from the daemon's own state, plus the person's actions."""

    def __init__(self, daemon: DaemonParts) -> None:
        self.daemon = daemon
        self.directory = daemon.directory
        self.access = Access()
        self.hub = EventHub()
        self.timeline = Timeline(log_dir())
        self.steering = Steering(daemon.gate, daemon.directory)
        self.views = DocumentViews(daemon.directory, self._view_fresh)
        self.toolsets: dict[str, Any] = {}
        self._toolsets_unread: dict[str, tuple[float, float]] = {}
        """Hosts whose toolset report is still to be read: when to try next, and the delay before."""
        self._host_signature: Any = None
        self._approval_ids: tuple[str, ...] = ()
        self._checkpoint_marks: tuple[int, int, int] | None = None
        self._hosts_seen: set[int] = set()
        """Pids of the hosts seen while the dashboard ran: a host's lines stay its own after it exits."""

    # -- the watcher -------------------------------------------------------------------------
    async def run(self, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow logs, hosts, approvals and checkpoints; tell open pages what changed."""
        async with anyio.create_task_group() as tg:
            self.views.bind(tg)
            self.timeline.poll()  # the recent past is there before the first page asks
            task_status.started()
            while True:
                await anyio.sleep(POLL_SECONDS if self.hub.watching else QUIET_POLL_SECONDS)
                try:
                    await self.tick()
                except Exception:  # the page may miss an update; the daemon must not notice
                    log.exception("dashboard update failed")

    async def tick(self) -> None:
        host_pids = self._host_pids()
        called = False  # a call reached a host: its history may have moved (an undo, a redo)
        for call in await anyio.to_thread.run_sync(self.timeline.poll):
            self.hub.publish("call", call.summary(host_pids))
            line = call.line
            if call.pid not in host_pids or line.get("method") != "tools/call":
                continue
            called = True
            touched = call.touched()
            if touched is not None or line.get("target") == "navigate_history":
                self._touch_pid(call.pid, touched)  # an undo or redo leaves nothing of it to mark
            if line.get("target") not in SKIP_VIEW_TARGETS:
                self._mark_pid(call.pid)
        entries = sorted(self.directory.hosts().items(), key=lambda item: item[0].instance_id)
        signature = tuple((k.instance_id, id(e), self._busy(e)) for k, e in entries)
        signature_changed = signature != self._host_signature
        if signature_changed:
            previous = {instance_id: ident for instance_id, ident, _ in self._host_signature or ()}
            self._host_signature = signature
            for instance_id, ident, _ in signature:
                if instance_id in previous and previous[instance_id] != ident:
                    self.views.mark(instance_id)  # its state changed: a document changed, maybe
                if previous.get(instance_id) != ident:
                    self._toolsets_unread[instance_id] = (0.0, TOOLSETS_RETRY_START / 2)
            listed = {instance_id for instance_id, _, _ in signature}
            self._toolsets_unread = {k: v for k, v in self._toolsets_unread.items() if k in listed}
        read = await self._read_unread_toolsets() if self._toolsets_unread else False
        if signature_changed or read:
            self.hub.publish("hosts", self.host_panel())
        if self.hub.watching:
            approvals = await self.steering.approvals()
            ids = tuple(str(a["approvalId"]) for a in approvals)
            if ids != self._approval_ids:
                self._approval_ids = ids
                self.hub.publish("approvals", approvals)
            checkpoints = await self.steering.checkpoints(look=called or signature_changed)
            marks = (
                len(checkpoints),
                sum(1 for c in checkpoints if c.get("reverted")),
                sum(1 for c in checkpoints if c.get("hostRunning") is False),
            )
            if marks != self._checkpoint_marks:
                self._checkpoint_marks = marks
                self.hub.publish("checkpoints", checkpoints)

    async def _read_unread_toolsets(self) -> bool:
        """Read the toolset reports still missing; True when one was read. A report that could not
        be read (the host busy or slow) is asked for again later, every time twice as late."""
        now, read = time.monotonic(), False
        for instance_id, (due, delay) in sorted(self._toolsets_unread.items()):
            if due > now:
                continue
            done = await self._read_toolsets(instance_id)
            if done:
                del self._toolsets_unread[instance_id]
                read = True
            else:
                delay = min(delay * 2, TOOLSETS_RETRY_MAX)
                self._toolsets_unread[instance_id] = (time.monotonic() + delay, delay)
        return read

    async def _read_toolsets(self, instance_id: str) -> bool:
        """The host's toolset report (`cadmcp://toolsets`: paths, load errors), when it serves one.

        True when there is nothing more to read: the report was read, or the host serves none (or
        is another machine's)."""
        key = next((k for k in self.directory.local_entries() if k.instance_id == instance_id), None)
        if key is None:
            return True
        entry, link = self.directory.entries.get(key), self.directory.links.get(key)
        if entry is None or entry.find("resource", TOOLSETS_URI) is None:
            return True
        if link is None:
            return False
        with anyio.move_on_after(TOOLSETS_SECONDS):
            try:
                read = await link.raw_request("resources/read", {"uri": TOOLSETS_URI})
                report = json.loads((read.get("contents") or [{}])[0].get("text") or "{}")
            except Exception:  # a host that cannot say keeps its old report, and is asked again
                return False
            errors = report.get("errors") if isinstance(report.get("errors"), list) else []
            self.toolsets[instance_id] = {
                "count": len(report.get("toolsets") or []),
                "errors": [
                    {k: str(e.get(k))[:300] for k in ("path", "type", "message") if e.get(k)}
                    for e in errors[:20]
                    if isinstance(e, dict)
                ],
            }
            return True
        return False

    def _busy(self, entry: Any) -> Any:
        state = next(
            (s for s in self.directory.states.values() if str(s.endpoint.path) == entry.endpoint), None
        )
        return state.busy_since if state is not None else None

    def _host_pids(self) -> set[int]:
        """The hosts' pids: those running, and those seen running since the dashboard started."""
        now = {s.endpoint.pid for s in self.directory.states.values()} | {
            k.pid for k in self.directory.local_entries()
        }
        if len(self._hosts_seen) > MAX_HOSTS_SEEN:
            self._hosts_seen.clear()
        self._hosts_seen |= now
        return set(self._hosts_seen)

    def _mark_pid(self, pid: int) -> None:
        for key in self.directory.local_entries():
            if key.pid == pid:
                self.views.mark(key.instance_id)

    def _touch_pid(self, pid: int, touched: dict[str, Any] | None) -> None:
        for key, entry in self.directory.local_entries().items():
            if key.pid == pid:
                self.views.touch(key.instance_id, touched, hostsview.view_marks(entry))

    def _view_fresh(self, instance_id: str, view: View) -> None:
        self.hub.publish(
            "view",
            {
                "instanceId": instance_id,
                "revision": view.revision,
                "error": view.error,
                "touched": view.touched,
                "marked": view.marked,
            },
        )

    def host_panel(self) -> dict[str, Any]:
        return {
            **hostsview.machine_panel(self.directory, self.daemon.gateway),
            "hosts": hostsview.hosts(self.directory, self.toolsets),
        }

    # -- login links -------------------------------------------------------------------------
    def login_link(self, base: str) -> str:
        return f"{base}{PREFIX}/login?code={self.access.mint_code()}"

    # -- the HTTP app ------------------------------------------------------------------------
    def app(self) -> Any:
        """The ASGI app serving `/dashboard/...` (the checks in `_route` stand before every route)."""

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            response = await self._route(Request(scope, receive))
            await response(scope, receive, send)

        return app

    async def _route(self, request: Request) -> Response:
        server = request.scope.get("server")
        if server and not self.access.port:  # the daemon's own HTTP port, before any link was made
            self.access.port = int(server[1])
        port = server[1] if server else self.access.port
        if not self.access.host_ok(request.headers.get("host")):
            return refuse(421, "Open the dashboard at the address `cadmcp dashboard` prints (127.0.0.1).")
        client = request.scope.get("client")
        if server and not peer_is_this_user(tuple(client) if client else None, port):
            return refuse(403, "The dashboard answers only the user who runs the daemon, on this machine.")
        if request.headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
            return refuse(403, "Cross-site requests to the dashboard are refused.")
        path = request.url.path[len(PREFIX) :] or "/"
        method = request.method
        if path == "/login" and method == "GET":
            session = self.access.redeem(request.query_params.get("code", ""))
            if session is None:
                return refuse(403, "This login link was used or has expired. Run `cadmcp dashboard` again.")
            response = RedirectResponse(f"{PREFIX}/", status_code=303, headers=HEADERS)
            response.set_cookie(
                COOKIE, session.secret, httponly=True, samesite="strict", path=PREFIX, max_age=12 * 3600
            )
            return response
        session = self.access.session(request.cookies.get(COOKIE))
        if session is None:
            return refuse(401, NOT_LOGGED_IN)
        if method == "POST":
            if not self.access.origin_ok(request.headers.get("origin")):
                return refuse(403, "A change must come from the dashboard's own page (Origin).")
            if not self.access.csrf_ok(session, request.headers.get(CSRF_HEADER)):
                return refuse(403, "A change needs the page's token in the X-Cadmcp-Csrf header.")
            body = await request.body()
            if len(body) > MAX_BODY:
                return refuse(413, f"Send at most {MAX_BODY} bytes.")
            try:
                data = json.loads(body or b"{}")
            except ValueError:
                return refuse(400, "Send a JSON object.")
            if not isinstance(data, dict):
                return refuse(400, "Send a JSON object.")
            answer = await self._action(path, data)
            if answer is None:
                return refuse(404, "No such action.")
            return JSONResponse(answer, status_code=200 if answer.get("ok") else 409, headers=HEADERS)
        if method != "GET":
            return refuse(405, "GET or POST only.")
        return await self._read(path, request, session)

    async def _read(self, path: str, request: Request, session: Session) -> Response:
        query = request.query_params
        if path == "/":
            return Response(pages.index(session.csrf), media_type="text/html", headers=HEADERS)
        if path.startswith("/static/") and path[8:] in STATIC:
            return Response(pages.static(path[8:]), media_type=STATIC[path[8:]], headers=HEADERS)
        if path == "/api/state":
            return JSONResponse(
                {
                    **self.host_panel(),
                    "calls": self.timeline.listing(self._host_pids(), limit=100),
                    "approvals": await self.steering.approvals(),
                    "checkpoints": await self.steering.checkpoints(),
                    "dropped": self.hub.dropped,
                    "now": time.time(),
                },
                headers=HEADERS,
            )
        if path == "/api/calls":
            limit = min(int(query.get("limit", "200")) if query.get("limit", "").isdigit() else 200, 1000)
            calls = self.timeline.listing(
                self._host_pids(),
                host=query.get("host") or None,
                outcome=query.get("outcome") or None,
                sides=query.get("side") if query.get("side") in ("host", "all") else "daemon",
                limit=limit,
            )
            return JSONResponse({"calls": calls}, headers=HEADERS)
        if path.startswith("/api/calls/") and path[11:].isdigit() and len(path) < 30:
            call = self.timeline.find(int(path[11:]))
            if call is None:
                return refuse(404, "That call is no longer kept (the page keeps the last 1000).")
            return JSONResponse(call.whole(self._host_pids()), headers=HEADERS)
        if path == "/api/events":
            try:
                stream = self.hub.subscribe()
            except TooManyPages as exc:
                return refuse(503, str(exc))
            return StreamingResponse(
                stream, media_type="text/event-stream", headers={**HEADERS, "X-Accel-Buffering": "no"}
            )
        if path.startswith("/api/view/") and len(path) < 80:
            instance_id = path[10:]
            if not any(k.instance_id == instance_id for k in self.directory.local_entries()):
                return refuse(404, "No such host on this machine.")
            view = self.views.get(instance_id)
            options = _view_options(query, self._view_choices(instance_id))
            if view.options is None or options != view.options:
                self.views.choose(instance_id, options)
            elif view.png is None and not view.busy:
                self.views.mark(instance_id)
            if view.png is None:
                return refuse(
                    202 if view.error is None else 502, view.error or "The first picture is on its way."
                )
            return Response(
                view.png, media_type="image/png", headers={**HEADERS, "X-View-Revision": str(view.revision)}
            )
        if path.startswith("/api/images/") and len(path) < 60:
            return self._image(path[12:])
        if path == "/api/catalog":
            return JSONResponse(
                self._catalog(query.get("q", "")[:500], query.get("host") or None), headers=HEADERS
            )
        return refuse(404, "Nothing here.")

    async def _action(self, path: str, data: dict[str, Any]) -> dict[str, Any] | None:
        text = {k: v for k, v in data.items() if isinstance(v, str) and len(v) <= 200}
        if path == "/api/approvals/answer":
            return await self.steering.answer(text.get("approvalId", ""), text.get("answer", ""))
        if path == "/api/revert":
            return await self.steering.revert(text.get("callId", ""), data.get("since") is True)
        if path == "/api/history":
            return await self.steering.history(text.get("instanceId", ""), text.get("direction", ""))
        return None

    def _image(self, rest: str) -> Response:
        """Picture `n` of a recent answer (`/api/images/PID-N/n`), while this daemon keeps it."""
        key, _, index = rest.partition("/")
        if not index.isdigit() or not key.startswith(self.daemon.images.prefix):
            return refuse(404, "That picture was kept by another daemon, or never.")
        found = self.daemon.images.get(key, int(index))
        if found is None:
            return refuse(404, "That picture is no longer kept (the daemon keeps the last answers' only).")
        mime, data = found
        return Response(data, media_type=mime, headers=HEADERS)

    def _view_choices(self, instance_id: str) -> dict[str, list[str]]:
        entry = next(
            (e for k, e in self.directory.local_entries().items() if k.instance_id == instance_id), None
        )
        return {o["name"]: o["enum"] for o in hostsview.view_options(entry)} if entry is not None else {}

    def _catalog(self, query: str, host: str | None) -> dict[str, Any]:
        from cadmcp.daemon.errors import DaemonError
        from cadmcp.daemon.searching import search

        args: dict[str, Any] = {"query": query or None, "limit": 50}
        if host:
            args["hostInstanceId"] = host[:80]
        try:
            return search(self.directory, args)
        except DaemonError as err:
            return {"count": 0, "items": [], "error": err.message}


def refuse(status: int, message: str) -> Response:
    return PlainTextResponse(message + "\n", status_code=status, headers=HEADERS)


def _view_options(query: Any, choices: dict[str, list[str]]) -> dict[str, Any]:
    """The view options the page asked for, kept only where the host's tool offers that value."""
    return {k: query[k] for k, allowed in choices.items() if query.get(k) in allowed}
