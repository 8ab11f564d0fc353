"""The foreign-host proxy: someone else's MCP server served on a cadmcp endpoint like any host.

One proxy process per configured ``mcp`` application. It keeps one client session to the server
(started as a child over stdio, or reached over streamable HTTP, in either protocol era), keeps
the server's last good catalog, and serves it through the host runtime, which gives it the
endpoint, call logs, list-change announcements and the host state every host has.

- The server is supervised: when it exits, closes its connection or stops answering probes, its
  calls in flight fail, the host state says ``phase: down`` with the reason, and it is started
  again with backoff (1 s doubling to 30 s). Its ids stay valid while it comes back with the same
  catalog (the proxy's host instance id does not change).
- Every call is bounded by the server's ``callTimeoutSeconds``: a hung server fails only its own
  calls. Listing never waits on the server: the daemon lists the proxy's copy.
- A server that asks for input mid-call (``elicitation/create``, 2025 era) gets it through the
  protocol's own multi-round results: the call answers ``input_required`` and its retry carries
  the answer back to the waiting server (:mod:`cadmcp.foreign.rounds`). A 2026-era server's own
  ``input_required`` passes through untouched.
- Prompts are served as resource templates ``prompt://NAME{?arg,...}``: reading one returns the
  server's ``prompts/get`` result as JSON, so they are found and read like any resource.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from cadmcp.applications import Application, ConfigError, ForeignServer, StartRequest, config_path, find
from cadmcp.foreign import link
from cadmcp.foreign.fastlane import FastLane, NotSent, ServerChannel, ServerGone
from cadmcp.foreign.rounds import RELATED_TASK, Call, Progress, Rounds
from cadmcp.foreign.secrets import SecretError
from cadmcp.foreign.serverlog import ServerLog
from cadmcp.wire.catalogbounds import MAX_HOST_RESOURCES, MAX_HOST_TEMPLATES, MAX_HOST_TOOLS, catalog_problem
from cadmcp.wire.closure import connection_closed
from cadmcp.wire.jsonwire import dumps
from cadmcp.wire.masking import mask_text
from cadmcp.wire.meta import OURS, REQUIRED_ARGS
from cadmcp.wire.passthrough import EndlessList, PassThroughSession
from cadmcp.wire.reconnect import ListChanges, describe, retry_delay, unwrap

log = logging.getLogger("cadmcp.foreign")

PROMPT_SCHEME = "prompt://"
BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
PROBE_INTERVAL = 1.0
PROBE_TIMEOUT = 3.0
PROBE_MISSES = 2
START_MARGIN = 10.0
"""Seconds beyond its connectTimeoutSeconds that a proxy's start waits for the first attempt (the
server's spawn, a runtime such as npx or uv fetching it) before its endpoint says `starting`."""
CONFIG_POLL = 1.0
"""Seconds between looks at the host configuration file while the server waits to start again."""
ENTRY_CHANGED = (
    "its entry in the host configuration changed since the server started; the running server keeps "
    "the entry it started with, and the new one applies when it is started again (launch_host with "
    "restartHostInstanceId, or when it goes down)"
)
MAX_REASON_CHARS = 600
MAX_LISTED_TWICE = 10
"""Names listed twice that the host state names (the count says how many more)."""
TASK_TTL_MS = 3_600_000
"""How long a server keeps a task the proxy runs there (the call's own timeout ends it sooner)."""
TASK_POLL = (0.2, 5.0)
"""Bounds, in seconds, of how often a server task's status is asked for (its pollInterval)."""
CANCEL_TIMEOUT = 5.0


class ForeignSession(PassThroughSession):
    """The proxy's session to the foreign server."""


class ServerDown(MCPError):
    """The foreign server is not connected right now."""


def _complete(result: dict[str, Any], *, read: bool = False) -> dict[str, Any]:
    """A result as the 2026-07-28 wire needs it: a 2025-era server's result names no resultType,
    and its reads no cache hint (a read without one is not a read result on that wire). Any
    `io.cadmcp/` key of its `_meta` goes: a server does not stamp checkpoints or previews."""
    (result,) = _without_our_meta([result])
    out = result if "resultType" in result else {**result, "resultType": "complete"}
    if read and "ttlMs" not in out:
        out = {"ttlMs": 0, "cacheScope": "private", **out}
    return out


_NO_BACK_CHANNEL = "server-initiated requests"
"""Words of what MCP SDK servers (the SDK's own, FastMCP's) answer a tool that asks with
``ctx.elicit`` on a 2026-07-28 connection, which has no channel for a server's own requests."""


def _era_hint(app: str) -> str:
    return (
        f"cadmcp: the {app} server asks its question the 2025-11-25 way (ctx.elicit), for which the "
        "2026-07-28 protocol it is connected with has no channel. Hold it to 2025-11-25 and its "
        f"questions reach you: cadmcp host add {shlex.quote(app)} ... --protocol 2025-11-25 --force, or "
        '"protocolVersion": "2025-11-25" in its server entry.'
    )


def _with_era_hint(result: dict[str, Any], app: str) -> dict[str, Any]:
    """A failed call whose server asked its question the 2025 way, with what makes it work."""
    content = result.get("content") or []
    if not result.get("isError") or not any(_NO_BACK_CHANNEL in str(c.get("text", "")) for c in content):
        return result
    return {**result, "content": [*content, {"type": "text", "text": _era_hint(app)}]}


def _tool_result(result: Any, app: str, tool: str) -> dict[str, Any]:
    """A server's `tools/call` answer checked for the shape every client needs (an object whose
    `content` is a list of typed items), complete as `_complete` makes it; a server's broken answer
    is its error, said as such, not a protocol failure further on."""
    problem = None
    if not isinstance(result, dict):
        problem = "is not an object"
    elif result.get("resultType", "complete") == "complete":
        content = result.get("content")
        if content is None:
            problem = "has no content"
        elif not isinstance(content, list):
            problem = "has a content that is not a list"
        elif any(not isinstance(c, dict) or not isinstance(c.get("type"), str) for c in content):
            problem = "has a content item without a type"
        elif not isinstance(result.get("structuredContent", {}), dict):
            problem = "has a structuredContent that is not an object"
    if problem is not None:
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"The {app} server's answer to {tool} {problem}, so it is no MCP tool result; "
            "tell the server's author (the call may have run).",
            data={"type": "invalid_result"},
        )
    return _complete(result)


def _prompt_template(prompt: dict[str, Any]) -> dict[str, Any]:
    """A foreign prompt as the resource template its reads go through."""
    name = str(prompt.get("name") or "")
    args = [a.get("name") for a in prompt.get("arguments") or [] if isinstance(a, dict) and a.get("name")]
    query = "{?" + ",".join(args) + "}" if args else ""
    arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict) and a.get("name")]
    described = [
        f"{a['name']}{'' if a.get('required') else ' (optional)'}"
        + (f": {a['description']}" if a.get("description") else "")
        for a in arguments
    ]
    required = [str(a["name"]) for a in arguments if a.get("required")]
    description = str(prompt.get("description") or f"The {name} prompt")
    if described:
        description += " Arguments: " + "; ".join(described)
    return {
        "uriTemplate": f"{PROMPT_SCHEME}{quote(name, safe='')}{query}",
        "name": name,
        "title": prompt.get("title"),
        "description": f"Prompt. {description}",
        "mimeType": "application/json",
        **({"_meta": {REQUIRED_ARGS: required}} if required else {}),
    }


OPTIONAL_LISTS = ("resources/list", "resources/templates/list", "prompts/list")
"""List methods a server may lack though it declares their capability (the reference
mcp-server-sqlite declares `resources` and has no `resources/templates/list`): its answer Method
not found is an empty list. A server that declares tools must list them."""


def _list_failure(method: str, exc: MCPError, timeout: float) -> str:
    """Why listing the catalog failed, naming the method the server did not answer."""
    if exc.error.code == types.REQUEST_TIMEOUT:
        return (
            f"the server did not answer {method} within its connectTimeoutSeconds ({timeout:g} s); "
            "if it is only slow to list, raise connectTimeoutSeconds in its entry"
        )
    return (
        f"the server answered {method} with an error ({exc.error.code}: {exc.error.message[:200]}), "
        "so its catalog cannot be listed; tell the server's author"
    )


def _validated(kind: type, items: list[Any], what: str) -> list[Any]:
    out = []
    for n, item in enumerate(items):
        try:
            out.append(kind.model_validate(item))
        except ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            first = exc.errors()[0] if exc.errors() else {}
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise CatalogRefused(
                f"its {what} list is malformed: item {n}{f' ({str(name)[:60]!r})' if name else ''} "
                f"{where or ''}: {str(first.get('msg', exc))[:200]}"
            ) from None
    return out


def _without_our_meta(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with any of cadmcp's own `_meta` keys (`OURS`) dropped, the rest kept as sent: a
    foreign server's catalog and answers are someone else's (no fallback, preview, navigation or
    checkpoint claimed for cadmcp)."""
    kept: list[dict[str, Any]] = []
    for item in items:
        meta = item.get("_meta") if isinstance(item, dict) else None
        if isinstance(meta, dict) and any(str(k).startswith(OURS) for k in meta):
            meta = {k: v for k, v in meta.items() if not str(k).startswith(OURS)}
            item = {**item, "_meta": meta} if meta else {k: v for k, v in item.items() if k != "_meta"}
        kept.append(item)
    return kept


def _first_of_each(items: list[Any], key: Callable[[Any], str], what: str) -> tuple[list[Any], list[str]]:
    """The items with each key once (the first listed kept), and what was listed twice, named."""
    seen: set[str] = set()
    kept, twice = [], []
    for item in items:
        name = key(item)
        if name in seen:
            twice.append(f"{what} {name[:80]!r}")
        else:
            seen.add(name)
            kept.append(item)
    return kept, twice


def _driven_by_proxy(tool: types.Tool) -> types.Tool:
    """A foreign tool as the proxy serves it: any call may become a task of the caller's (the
    daemon's job, which calls the proxy plainly). What the server said of tasks at its end (the
    SDKs' `forbidden` default, or `required`) is the proxy's to honour: it creates and follows a
    server task where the server wants one."""
    if tool.execution is None or tool.execution.task_support in (None, "optional"):
        return tool
    return tool.model_copy(
        update={"execution": tool.execution.model_copy(update={"task_support": "optional"})}
    )


class GaveUp(ConnectionError):
    """The proxy ended an attempt itself (a start too slow, probes unanswered); says why."""


class CatalogRefused(ValueError):
    """The server's catalog cannot be served as it is; the message says why."""


def _file_signature(path: Path | None) -> tuple[int, int] | None:
    """What changes when a file is edited: its modification time (ns) and size; None when absent."""
    if path is None:
        return None
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


class ForeignHost:
    """Supervises one foreign server and serves its catalog to the host runtime."""

    def __init__(self, app: Application) -> None:
        if app.server is None:
            raise ValueError(f"{app.name} is not a foreign server")
        self.app = app
        self.config: ForeignServer = app.server
        self.session: ForeignSession | None = None
        self.channel: ServerChannel | None = None
        """The proxy's own requests on a stdio server's transport (`cadmcp.foreign.fastlane`)."""
        self.tools: list[types.Tool] = []
        self._tool_names: frozenset[str] = frozenset()
        self.served_tools: list[types.Tool] = []
        """`tools` as the proxy serves them (every one may run as a task of the caller's)."""
        self.resources: list[types.Resource] = []
        self.templates: list[types.ResourceTemplate] = []
        self.prompts: dict[str, dict[str, Any]] = {}
        self.server_info: types.Implementation | None = None
        self.protocol_version: str | None = None
        self.rounds = Rounds()
        self.state: dict[str, Any] = {"phase": "starting"}
        self._last_channel: ServerChannel | None = None
        self.down_reason: str | None = None
        self._ending: str | None = None  # why the proxy itself is ending the connection, if it is
        self.retry_at: float | None = None
        self.restarts = 0
        self.server_pid: int | None = None
        self.listed_twice: list[str] = []
        """Names the server's catalog lists more than once (`tool 'x'`, `resource 'y'`)."""
        self.entry_changed = False
        """Whether the server's entry in the host configuration changed since it was started."""
        self.lacking: list[str] = []
        """List methods the server answers Method not found though it declares their capability."""
        self.first_attempt = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None  # where calls run (they outlive one request)
        self._changed: list[Any] = []
        self._stderr = link.StderrTail()  # the end of the server's stderr, for why it went down
        self._http = link.HttpStatus()  # an HTTP server's last error status, for the same
        self._config_file = config_path()

    # -- what the runtime is told --------------------------------------------------------------
    def on_change(self, notify: Any) -> None:
        """Call ``notify(state)`` whenever the catalog or the state changes."""
        self._changed.append(notify)

    def _publish(self, **state: Any) -> None:
        self.state = {k: v for k, v in state.items() if v is not None}
        for notify in self._changed:
            notify(self.state)

    def _server_state(self, phase: str, **more: Any) -> None:
        info = self.server_info
        self._publish(
            phase=phase,
            foreign={
                "transport": self.config.transport,
                "server": self.config.describe(),
                **({"serverName": info.name, "serverVersion": info.version} if info else {}),
                **({"protocolVersion": self.protocol_version} if self.protocol_version else {}),
                **({"pid": self.server_pid} if self.server_pid else {}),
                "restarts": self.restarts,
                **({"listedTwice": self._listed_twice_note()} if self.listed_twice else {}),
                **({"notListed": self._lacking_note()} if self.lacking else {}),
                **({"entryChanged": ENTRY_CHANGED} if self.entry_changed else {}),
            },
            **more,
        )

    def _listed_twice_note(self) -> str:
        shown = ", ".join(self.listed_twice[:MAX_LISTED_TWICE])
        extra = len(self.listed_twice) - MAX_LISTED_TWICE
        more = f" and {extra} more" if extra > 0 else ""
        return f"{shown}{more}: the server lists these names twice; the first of each is served"

    def _lacking_note(self) -> str:
        return (
            f"{', '.join(self.lacking)}: the server declares the capability but answers "
            "Method not found; served as empty"
        )

    # -- supervision ---------------------------------------------------------------------------
    async def supervise(self) -> None:
        """Connect, serve, and start the server again with backoff whenever it goes, forever."""
        failures = 0
        while True:
            started = time.monotonic()
            refused = False
            try:
                await self._connect_once()
                reason = self._closed_reason()
            except Exception as exc:
                inner = unwrap(exc)
                refused = isinstance(inner, CatalogRefused)
                if refused:
                    reason = f"refused: {inner}"
                elif isinstance(inner, GaveUp | SecretError):  # their words are the reason
                    reason = str(inner)
                elif isinstance(inner, SubscriptionLost | anyio.EndOfStream) or self._transport_ended():
                    reason = self._closed_reason()  # the SDK's wording for it says nothing to a user
                else:
                    reason = _start_failure(inner, self.config) or describe(exc, MAX_REASON_CHARS)
            self.session = self.channel = None
            if self._last_channel is not None and (note := self._last_channel.not_protocol_note()):
                reason = f"{reason}; {note}"
            if not refused:  # a refusal is of the catalog: the server's stderr or status is not why
                reason = self._with_transport_note(reason)
            reason = mask_text(reason)  # the agent reads it (a URL, a log line)
            self.rounds.fail_all(reason)
            if time.monotonic() - started > 2 * BACKOFF_MAX:
                failures = 0  # it had been up for a while: a fresh failure
            failures += 1
            delay = retry_delay(failures, BACKOFF_START, BACKOFF_MAX)
            if refused:
                delay = BACKOFF_MAX  # listed again now and then: the server may be fixed
            self.down_reason = reason
            self.retry_at = time.monotonic() + delay
            self._server_state(
                "refused" if refused else "down",
                error=reason,
                retryInSeconds=round(delay, 1),
                retryAt=round(time.time() + delay, 1),  # the daemon counts down from it when listing
            )
            log.warning("%s is %s: %s (again in %.0f s)", self.app.name, self.state["phase"], reason, delay)
            self.first_attempt.set()
            await self._wait_or_edited(delay)
            self.restarts += 1
            self._reload()

    async def _wait_or_edited(self, delay: float) -> None:
        """Sleep `delay` seconds, less if the host configuration file changes meanwhile (someone
        fixing the entry, as the reason it is down tells them to, wants it tried at once)."""
        before = _file_signature(self._config_file)
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:
            await anyio.sleep(min(CONFIG_POLL, left))
            if _file_signature(self._config_file) != before:
                return

    def _reload(self) -> None:
        """Start again with the server's entry as the configuration has it now (a fixed command, a
        new URL or header), or as before when it is gone or cannot be read."""
        fresh = self._fresh_entry()
        if fresh is not None and fresh.server != self.config:
            log.info(
                "%s: its entry in the host configuration changed; started with the new one", self.app.name
            )
            self.app, self.config = fresh, fresh.server

    def _fresh_entry(self) -> Application | None:
        """The server's entry as the configuration has it now; None (said in the log) when it is
        gone, wrong or cannot be read."""
        try:
            fresh = find(self.app.name)
        except ConfigError as exc:
            log.warning(
                "%s: the host configuration cannot be read again (%s); its entry stays as it was",
                self.app.name,
                exc,
            )
            return None
        if fresh is not None and fresh.problem is not None:
            log.warning("%s: its entry is wrong now (%s); it stays as it was", self.app.name, fresh.problem)
            return None
        if fresh is None or fresh.server is None:
            log.warning(
                "%s: no longer a server in the host configuration; its entry stays as it was", self.app.name
            )
            return None
        return fresh

    async def _watch_entry(self) -> None:
        """While the server is up, say in its state when its entry in the host configuration
        changes. The running server is not restarted for it (its calls in flight, and what it
        holds, such as open documents, would go): the new entry applies at its next start."""
        seen = _file_signature(self._config_file)
        self._look_at_entry(seen)
        while True:
            await anyio.sleep(CONFIG_POLL)
            if (signature := _file_signature(self._config_file)) != seen:
                seen = signature
                self._look_at_entry(signature)

    def _look_at_entry(self, signature: tuple[int, int] | None) -> None:
        fresh = self._fresh_entry() if signature is not None else None
        changed = fresh is not None and fresh.server != self.config
        if changed != self.entry_changed and self.state.get("phase") == "ready":
            self.entry_changed = changed
            if changed:
                log.info("%s: %s", self.app.name, ENTRY_CHANGED)
            self._server_state("ready")

    def _server_ended(self) -> None:
        """The server's stdout ended: say it is down now, while the session and its transport wind
        down (which takes up to seconds), so the listing and new calls do not take it for ready."""
        self._down_now(self._closed_reason())

    def _down_now(self, reason: str) -> None:
        """Say the server is down at once, before its session and process wind down (seconds, for
        a process that must be killed), so the listing agrees with the calls that already fail."""
        if self.state.get("phase") == "ready":
            self.session = self.channel = None  # new calls answer that it is down, and why
            self.down_reason = mask_text(self._with_transport_note(reason))  # with what it wrote so far
            self._server_state("down", error=self.down_reason)

    def _with_transport_note(self, reason: str) -> str:
        """`reason` with what the transport adds to it: the end of a stdio server's stderr, or the
        meaning of the error status an HTTP server answered (which the SDK's wording lacks)."""
        if self.config.transport == "http":
            note = self._http.explain(self.config.headers)
            if note is None:
                return reason
            return note if link.SDK_ERROR_STAND_IN in reason else f"{reason}; {note}"
        tail = self._stderr.text()
        return f"{reason}; its stderr ends with: {tail[-400:]}" if tail else reason

    def _transport_ended(self) -> bool:
        """Whether the server ended the last connection's pipe (not the proxy closing it after
        something else went wrong, which is then the reason)."""
        return self._last_channel is not None and self._last_channel.ended

    def _closed_reason(self) -> str:
        if self.config.transport == "stdio" and self._transport_ended():
            return "the server's process ended or closed its stdout"
        return "the server closed its connection"

    async def _connect_once(self) -> None:
        self._stderr.clear()
        self._http.clear()
        # a stdio server's answers to the proxy's own calls are taken off its pipe before the
        # session reads it; over HTTP every request goes through the session
        channel = ServerChannel() if self.config.transport == "stdio" else None
        self._last_channel = channel
        intercept = channel.intercept if channel is not None else None
        async with link.transport(self.config, self._stderr, intercept, self._http) as connection:
            self.server_pid = connection.pid
            read = connection.read
            if channel is not None:
                channel.on_server_end = self._server_ended
                assert connection.stdin is not None  # a stdio server's
                read = channel.attach(read, connection.stdin)
            async with anyio.create_task_group() as pump:
                if channel is not None:
                    pump.start_soon(channel.run)
                try:
                    await self._serve_session(read, connection.write, channel)
                finally:
                    pump.cancel_scope.cancel()

    async def _serve_session(self, read: Any, write: Any, channel: ServerChannel | None) -> None:
        changes = ListChanges()
        async with ForeignSession(
            read,
            write,
            elicitation_callback=self.rounds.elicit,
            message_handler=changes.on_message,
            logging_callback=ServerLog(self.app.name),
        ) as session:
            steps = ["answering its first request (server/discover or initialize)"]
            try:
                with anyio.fail_after(self.config.connect_timeout):
                    probed = self._stderr.mark()
                    self.protocol_version = await session.connect(self.config.protocol)
                    if self.config.protocol is None and self.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                        self._forget_probe(probed)
                    self.server_info = session.server_info
                    steps.append("listing its catalog")
                    await self._list(session, steps)
            except TimeoutError:
                raise GaveUp(
                    f"the server did not finish starting within its connectTimeoutSeconds "
                    f"({self.config.connect_timeout:g} s): it was still {steps[-1]}. If it is only slow to "
                    "start, raise connectTimeoutSeconds in its entry"
                ) from None
            except ValidationError as exc:  # the SDK's reading of an answer that is no MCP
                first = exc.errors()[0] if exc.errors() else {}
                where = ".".join(str(p) for p in first.get("loc", ()))
                raise GaveUp(
                    f"an answer of the server's is not what MCP says ({exc.title}"
                    f"{f' {where}' if where else ''}: {str(first.get('msg', exc))[:200]}), while it was "
                    f"{steps[-1]}; tell the server's author"
                ) from None
            if channel is not None:
                channel.bind(session.envelope)
            self.session, self.channel = session, channel
            self.down_reason = self.retry_at = self._ending = None
            self.entry_changed = False  # it runs the entry it was started with
            self._server_state("ready")
            log.info("%s connected: %d tools", self.app.name, len(self.tools))
            self.first_attempt.set()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_liveness, session)
                tg.start_soon(self._watch_entry)
                if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    with contextlib.suppress(MCPError):  # a server with nothing to listen to
                        async with listen(
                            session, tools_list_changed=True, resources_list_changed=True
                        ) as events:
                            async for _ in events:
                                await self._relist(session)
                async for _ in changes.received:
                    await self._relist(session)
                tg.cancel_scope.cancel()

    def _forget_probe(self, probed: int) -> None:
        """The server did not know the `server/discover` the proxy tried first and fell back to
        `initialize`: what it wrote to stderr meanwhile (an MCP 1.x Python server logs a validation
        traceback for it) is about the proxy's probe, so reasons it goes down later do not quote it.
        Such a server logs before it answers, and its answer to `initialize` came after that, so by
        now the stderr reader has taken the traceback in."""
        self._stderr.forget(probed, self._stderr.mark())

    async def _relist(self, session: ForeignSession) -> None:
        with anyio.fail_after(self.config.connect_timeout):
            await self._list(session)
        self._server_state("ready")

    async def _watch_liveness(self, session: ForeignSession) -> None:
        misses = 0
        while True:
            await anyio.sleep(PROBE_INTERVAL)
            try:
                with anyio.fail_after(PROBE_TIMEOUT):
                    await session.probe()
                misses = 0
            except TimeoutError:
                misses += 1
                if misses >= PROBE_MISSES:
                    self._ending = (
                        f"the server stopped answering (no reply to {misses} probes in "
                        f"{misses * PROBE_TIMEOUT:g} s), so it is started again"
                    )
                    self._down_now(self._ending)
                    raise GaveUp(self._ending) from None
            except Exception as exc:
                raise ConnectionError(
                    f"the connection to the server is gone ({describe(exc, MAX_REASON_CHARS)})"
                ) from None

    async def _list(self, session: ForeignSession, doing: list[str] | None = None) -> None:
        """List the server's catalog and keep it; `doing` is told each method as it is asked (for
        the reason a start that took too long gives)."""
        caps = session.server_capabilities
        timeout = self.config.connect_timeout
        lacking: list[str] = []

        async def items(method: str, key: str, offered: Any, most: int) -> list[dict[str, Any]]:
            if caps is not None and offered is None:
                return []
            if doing is not None:
                doing.append(f"listing its catalog ({method})")
            try:
                found, _ = await session.list_all(method, key, timeout, max_items=most)
            except EndlessList as exc:
                raise CatalogRefused(str(exc)) from None
            except MCPError as exc:
                if connection_closed(exc):
                    raise  # the server went: said as such by whoever waits on it
                if exc.error.code == types.METHOD_NOT_FOUND and method in OPTIONAL_LISTS:
                    lacking.append(method)  # offered with its capability, but not there: none
                    return []
                raise GaveUp(_list_failure(method, exc, timeout)) from None
            return found

        tools = await items("tools/list", "tools", caps.tools if caps else True, MAX_HOST_TOOLS)
        resources = await items(
            "resources/list", "resources", caps.resources if caps else True, MAX_HOST_RESOURCES
        )
        templates = await items(
            "resources/templates/list",
            "resourceTemplates",
            caps.resources if caps else True,
            MAX_HOST_TEMPLATES,
        )
        prompts = await items("prompts/list", "prompts", caps.prompts if caps else True, MAX_HOST_TEMPLATES)
        prompt_items = [p for p in prompts if isinstance(p, dict)]
        prompt_templates = [_prompt_template(p) for p in prompt_items]
        # the bounds the daemon holds every host to, applied here: an oversized catalog is refused
        # where the server is supervised (down with why, retried now and then), not by the daemon
        problem = catalog_problem(tools, resources, [*templates, *prompt_templates])
        if problem is not None:
            raise CatalogRefused(f"{problem}; ask its author for a smaller one")
        tools, resources, templates = (_without_our_meta(x) for x in (tools, resources, templates))
        typed_tools = _validated(types.Tool, tools, "tools")
        typed_resources = _validated(types.Resource, resources, "resources")
        typed_templates = _validated(types.ResourceTemplate, templates, "resource templates")
        _validated(types.Prompt, prompts, "prompts")
        typed_templates += _validated(types.ResourceTemplate, prompt_templates, "prompts")
        # names a server lists twice would be one capability, its description and schema whichever
        # came last: the first is kept, and the listing says so
        typed_tools, twice = _first_of_each(typed_tools, lambda t: t.name, "tool")
        typed_resources, twice_r = _first_of_each(typed_resources, lambda r: str(r.uri), "resource")
        typed_templates, twice_t = _first_of_each(typed_templates, lambda t: t.uri_template, "template")
        self.listed_twice = [*twice, *twice_r, *twice_t]
        if self.listed_twice:
            log.warning("%s: %s", self.app.name, self._listed_twice_note())
        self.lacking = lacking
        if lacking:
            log.warning("%s: %s", self.app.name, self._lacking_note())
        self.tools, self.resources, self.templates = typed_tools, typed_resources, typed_templates
        self._tool_names = frozenset(t.name for t in typed_tools)
        self.served_tools = [_driven_by_proxy(t) for t in typed_tools]
        self.prompts = {str(p["name"]): p for p in prompt_items}

    # -- server tasks ----------------------------------------------------------------------------
    def _runs_as_task(self, session: ForeignSession, name: str) -> bool:
        """Whether the server runs this tool as a task (2025-11-25 tasks: the server takes them for
        `tools/call` and the tool says `optional` or `required`); its questions then name the call."""
        caps = session.server_capabilities
        requests = caps.tasks.requests if caps is not None and caps.tasks is not None else None
        if requests is None or requests.tools is None or requests.tools.call is None:
            return False
        tool = next((t for t in self.tools if t.name == name), None)
        support = tool.execution.task_support if tool is not None and tool.execution is not None else None
        return support in ("optional", "required")

    async def _call_as_task(self, session: ForeignSession, raw: dict[str, Any], call: Call) -> dict[str, Any]:
        """One call run as a server task: created, followed (its status as progress) until
        `tasks/result` answers; cancelled there when the call is given up or times out."""
        created = await session.raw_request(
            "tools/call", {**raw, "task": {"ttl": TASK_TTL_MS}}, on_progress=call.progress
        )
        task = created.get("task")
        if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
            return created  # the server answered at once
        call.task_id = task_id = task["taskId"]
        poll = min(max((task.get("pollInterval") or 1000) / 1000, TASK_POLL[0]), TASK_POLL[1])
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._follow_task, session, task_id, poll, call)
                result = await session.raw_request("tasks/result", {"taskId": task_id})
                tg.cancel_scope.cancel()
        except BaseException:
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after(CANCEL_TIMEOUT),
                contextlib.suppress(Exception),
            ):
                await session.raw_request("tasks/cancel", {"taskId": task_id}, timeout=CANCEL_TIMEOUT)
            raise
        meta = result.get("_meta")
        if isinstance(meta, dict) and RELATED_TASK in meta:  # the server's task id is no one else's
            meta = {k: v for k, v in meta.items() if k != RELATED_TASK}
            result = {**result, "_meta": meta} if meta else {k: v for k, v in result.items() if k != "_meta"}
        return result

    async def _follow_task(self, session: ForeignSession, task_id: str, poll: float, call: Call) -> None:
        """Report each change of a server task's status message as progress of its call."""
        last: tuple[Any, Any] | None = None
        steps = 0
        while True:
            await anyio.sleep(poll)
            with contextlib.suppress(MCPError, TimeoutError):
                task = await session.raw_request("tasks/get", {"taskId": task_id}, timeout=PROBE_TIMEOUT)
                seen = (task.get("status"), task.get("statusMessage"))
                if seen != last:
                    last, steps = seen, steps + 1
                    message = str(seen[1] or seen[0] or "")[:200]
                    await call.progress(float(steps), None, message or None)

    # -- serving -------------------------------------------------------------------------------
    def _live(self) -> ForeignSession:
        if self.session is not None:
            return self.session
        when = (
            f"It is started again in {max(0.0, self.retry_at - time.monotonic()):.0f} s; call again then"
            if self.retry_at
            else "It is being started again; call again in a few seconds"
        )
        raise ServerDown(
            code=types.INTERNAL_ERROR,
            message=f"The {self.app.name} server is down ({self.down_reason or 'starting'}). {when}, "
            "or call list_host_instances to see its state.",
            data={"type": "server_down", "reason": self.down_reason},
        )

    @property
    def task_group(self) -> anyio.abc.TaskGroup | None:
        """Where calls run (they outlive one request); None until the proxy is started."""
        return self._tg

    def serves_tool(self, name: str) -> bool:
        """Whether the server's catalog, as the proxy serves it now, has this tool."""
        return name in self._tool_names

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        input_responses: dict[str, Any] | None,
        state: str | None,
        reporter: Progress | None,
    ) -> Any:
        """One `tools/call` of the server's as the proxy serves it (the SDK's handler and the fast
        lane alike): the server's result, the proxy's `input_required` for a question the server
        asked, or the retry of one with its answer; the caller hears progress through `reporter`."""
        if state is not None and self.rounds.owns(state):
            return await self.rounds.resume(state, input_responses, reporter)
        session = self._live()
        channel = self.channel
        raw: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if input_responses:  # a 2026-era server's own rounds pass through
            raw["inputResponses"] = input_responses
        if state is not None:
            raw["requestState"] = state
        tasked = self._runs_as_task(session, name)

        async def run(call: Call) -> dict[str, Any]:
            try:
                if tasked:
                    with anyio.fail_after(self.config.call_timeout):
                        return _tool_result(await self._call_as_task(session, raw, call), self.app.name, name)
                if channel is not None:
                    heard = call.progress if reporter is not None else None  # asked for progress
                    result = await channel.call(raw, on_progress=heard, timeout=self.config.call_timeout)
                else:
                    result = await session.raw_request(
                        "tools/call", raw, timeout=self.config.call_timeout, on_progress=call.progress
                    )
                return _with_era_hint(_tool_result(result, self.app.name, name), self.app.name)
            except TimeoutError:
                raise self._timed_out(name) from None
            except (ServerGone, MCPError) as exc:
                # the channel tells closure apart (`ServerGone`): every error through it is the server's
                via_channel = channel is not None and not tasked
                if not via_channel and isinstance(exc, MCPError) and exc.error.code == types.REQUEST_TIMEOUT:
                    raise self._timed_out(name) from None  # the SDK's session timed the call out
                if isinstance(exc, MCPError) and (via_channel or not connection_closed(exc)):
                    if connection_closed(exc):  # the server's own words, which the daemon would misread
                        raise MCPError(
                            exc.error.code, f"the server answered: {exc.error.message}", exc.error.data
                        ) from None
                    if exc.error.message == link.SDK_ERROR_STAND_IN and (
                        note := self._http.explain(self.config.headers)
                    ):  # an HTTP error status: say which, and what it means
                        raise MCPError(exc.error.code, f"{name} failed: {note}", exc.error.data) from None
                    modern = self.protocol_version in MODERN_PROTOCOL_VERSIONS
                    if modern and _NO_BACK_CHANNEL in exc.error.message:  # asked the 2025 way
                        said = f"{exc.error.message} {_era_hint(self.app.name)}"
                        raise MCPError(exc.error.code, said, exc.error.data) from None
                    raise  # the server's own error answer (-32000 is its generic "server error" too)
                why = self._ending or self._with_transport_note(self._closed_reason())
                if isinstance(exc, NotSent):
                    raise MCPError(
                        code=types.INTERNAL_ERROR,
                        message=f"The {self.app.name} server is down ({why}); {name} did not reach it. "
                        "It is started again with backoff: call list_host_instances to see when it is back.",
                        data={"type": "server_down", "reason": why},
                    ) from None
                raise MCPError(
                    code=types.INTERNAL_ERROR,
                    message=f"The {self.app.name} server went away during {name} ({why}); it may have "
                    "partly run. It is started again with backoff: call list_host_instances to see when "
                    "it is back.",
                    data={"type": "server_down", "reason": why},
                ) from None

        return await self.rounds.start(run, reporter, tg=self._tg, tasked=tasked)

    def _timed_out(self, name: str) -> MCPError:
        return MCPError(
            code=types.INTERNAL_ERROR,
            message=f"The {self.app.name} server did not answer {name} within "
            f"{self.config.call_timeout:g} s (its callTimeoutSeconds); the call was cancelled "
            "there. Try again later, or with less work; if it needs longer, raise its callTimeoutSeconds "
            f"(cadmcp host add {shlex.quote(self.app.name)} ... --call-timeout SECONDS --force).",
            data={"type": "server_timeout", "timeoutSeconds": self.config.call_timeout},
        )

    def provider(self) -> Server[Any]:
        """The low-level server whose handlers the host runtime calls (the proxied catalog)."""

        async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.served_tools)

        async def list_resources(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=self.resources)

        async def list_templates(
            ctx: ServerRequestContext[Any], params: Any
        ) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(resource_templates=self.templates)

        async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
            responses = params.input_responses
            if responses:
                responses = {
                    k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
                    if hasattr(v, "model_dump")
                    else v
                    for k, v in responses.items()
                }
            return await self.call(
                params.name,
                params.arguments,
                input_responses=responses,
                state=params.request_state,
                reporter=ctx.session.report_progress if ctx.session is not None else None,
            )

        async def read_resource(
            ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
        ) -> Any:
            session = self._live()
            uri = str(params.uri)
            if uri.startswith(PROMPT_SCHEME):
                return await self._get_prompt(session, uri)
            with anyio.fail_after(self.config.call_timeout):
                return _complete(await session.raw_request("resources/read", {"uri": uri}), read=True)

        return Server(
            f"foreign-{self.app.name}",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
        )

    async def _get_prompt(self, session: ForeignSession, uri: str) -> dict[str, Any]:
        for template in self.templates:
            if not template.uri_template.startswith(PROMPT_SCHEME):
                continue
            matched = UriTemplate.parse(template.uri_template).match(uri)
            if matched is None:
                continue
            name = unquote(template.uri_template[len(PROMPT_SCHEME) :].split("{", 1)[0])
            args = {k: str(v) for k, v in matched.items() if v not in (None, "")}
            declared = (self.prompts.get(name) or {}).get("arguments") or []
            missing = [
                a["name"]
                for a in declared
                if isinstance(a, dict) and a.get("required") and isinstance(a.get("name"), str)
                if a["name"] not in args
            ]
            if missing:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"The {name} prompt of {self.app.name} needs a value for "
                    f"{', '.join(missing)}; give {'them' if len(missing) > 1 else 'it'} in arguments. "
                    "Nothing was read.",
                )
            with anyio.fail_after(self.config.call_timeout):
                result = await session.raw_request("prompts/get", {"name": name, "arguments": args})
            contents = [{"uri": uri, "mimeType": "application/json", "text": dumps(result)}]
            return _complete({"contents": contents}, read=True)
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"No prompt of {self.app.name} matches {uri[:200]}."
        )

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start supervising in ``tg`` and wait (bounded) for the first attempt's outcome."""
        self._tg = tg
        tg.start_soon(self.supervise)
        # the attempt's own timeout starts once the server is spawned and its session open
        with anyio.move_on_after(self.config.connect_timeout + START_MARGIN):
            await self.first_attempt.wait()


def _start_failure(exc: BaseException, config: ForeignServer) -> str | None:
    """What a failure to reach the server means to the person fixing its entry, where the
    exception's own words (`FileNotFoundError: [Errno 2] ...`) do not say it; None: they do."""
    if config.transport == "stdio" and isinstance(exc, FileNotFoundError | PermissionError):
        why = "was not found" if isinstance(exc, FileNotFoundError) else "may not be run (permission denied)"
        return (
            f"the command {config.command!r} {why}: install it, or give its full path as the entry's "
            "command (`cadmcp host add NAME --force -- COMMAND ARGS...`)"
        )
    if config.transport == "http" and type(exc).__name__ == "ConnectError":  # the SDK's HTTP client's,
        # by name: the SDK ships its own fork of httpx, under another package name
        return f"nothing answers at {config.describe()} ({exc}): start the server, or fix the entry's url"
    return None


def _say_ready(shown: str, host: ForeignHost) -> None:
    print(
        f"{shown}: ready, {len(host.tools)} tools of {host.config.describe()}. An AI client reaches it "
        "through `cadmcp daemon` (list_host_instances); Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )


UNKNOWN_VERSION = "unknown"
"""A server's version until it names one (one that gives none, or an empty one, stays so)."""


def _not_a_parse_traceback(record: logging.LogRecord) -> bool:
    """The SDK logs a traceback for every stdout line of a server that is no MCP message; the
    proxy's channel counts those lines and names the first in the server's state instead."""
    return record.getMessage() != "Failed to parse JSONRPC message from server"


def serve(app: Application, request: StartRequest) -> int:
    """`cadmcp host NAME` for a foreign server: the proxy process, until SIGINT/SIGTERM."""
    logging.getLogger("mcp.client.stdio").addFilter(_not_a_parse_traceback)
    from cadmcp.host.runtime import HostRuntime

    host = ForeignHost(app)
    runtime = HostRuntime(app.name, app.version or UNKNOWN_VERSION, instructions=None)
    runtime.update_state(phase="starting")

    async def prepare(tg: anyio.abc.TaskGroup) -> None:
        await host.start(tg)
        info = host.server_info
        if app.version is None and info is not None and info.version:
            runtime.version = info.version  # the server names itself (before the endpoint exists)

    said: list[str] = []
    terminal = sys.stderr.isatty()  # run by a person in a terminal: say when it serves

    def changed(state: dict[str, Any]) -> None:
        shown = ("phase", "error", "retryInSeconds", "retryAt", "foreign")
        runtime.update_state(**{k: state.get(k) for k in shown})
        runtime.catalog_changed()
        phase = str(state.get("phase"))
        if terminal and phase != "ready":
            said.clear()  # its going down is logged (a warning); its coming back is said again
        elif terminal and not said:
            said.append(phase)
            _say_ready(f"cadmcp host {app.key}", host)

    host.on_change(changed)
    runtime.add_server(host.provider(), origin=f"foreign:{app.name}")
    runtime.intercept = FastLane(host, lambda: runtime.server.server_info_stamp).intercept
    try:
        runtime.run(timeout=host.config.connect_timeout + 15, prepare=prepare)
    except RuntimeError as exc:
        print(f"cadmcp host {app.key}: {exc}", file=sys.stderr)
        return 1
    return 0
