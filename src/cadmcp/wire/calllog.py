"""Call logs: one compact line per `tools/call` and `resources/read` (invariant 7).

The daemon and every host write the same format through `CallLogger`, a low-level
`Server` middleware::

    2026-05-04T10:12:03.120+02:00 tools/call ok target=echo durationMs=3 args={"text":"hi"} result={...}

Lines go to `log_{pid}_{yyyyMMddHH}_{seq}.log` in the user log directory (`CADMCP_LOG_DIR`
overrides it), a new file every hour; files older than 30 days are removed at start-up.
Nothing is written to stderr. Binary content is logged as type/mime/length only, long
strings are clipped, and secrets are masked by the rule in `cadmcp.wire.masking` (fields
named like secrets, text that looks like a credential). The log folder is private (0700,
tightened if it is ours and looser) and files are created 0600 without following links.
`parse_line` reads a line back.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any

from cadmcp.userdirs import LOG_DIR_ENV, log_dir
from cadmcp.wire.endpoints import RuntimeDirError, ensure_private_dir
from cadmcp.wire.jsonwire import dumps
from cadmcp.wire.masking import MASK as MASK  # re-exported: the log's mask marker
from cadmcp.wire.masking import mask_secrets as mask_secrets  # re-exported
from cadmcp.wire.masking import mask_text, secret_name

KEEP_DAYS = 30
MAX_FILE_BYTES = 32 * 1024 * 1024
"""A file past this size rolls to the next `seq` within the same hour."""
MAX_QUEUED_LINES = 256
"""Lines waiting for the writer thread; more are dropped (and counted in the log)."""
MAX_STRING = 2000
"""Longer strings in logged arguments and results are clipped to this many characters."""
LOGGED_METHODS = frozenset({"tools/call", "resources/read"})

_MASK_OVERLAP = 512
"""Characters past the clip point still masked, so a secret cut by the clip leaves no prefix."""
_FILE_RE = re.compile(r"^log_\d+_\d{10}_\d+\.log$")
_BARE = re.compile(r'^[^\s"=]+$')
_SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


class CallLogFile:
    """An append-only log file per process that rolls every hour (thread-safe, never raises)."""

    def __init__(
        self,
        directory: Path | None = None,
        *,
        pid: int | None = None,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.directory = directory or log_dir()
        self.pid = pid or os.getpid()
        self.clock = clock
        self.path: Path | None = None
        self._lock = threading.Lock()
        self._file: Any = None
        self._hour = ""
        self._seq = 0
        self._broken = False
        self._queue: queue.SimpleQueue[Callable[[], str]] | None = None
        self._pending = 0
        self._dropped = 0
        self._count_lock = threading.Lock()
        try:
            ensure_private_dir(self.directory, "log folder", LOG_DIR_ENV, own_links=True)
            remove_old_files(self.directory)
        except RuntimeDirError as err:
            self._broken = True  # never write where another account can read or redirect
            logging.getLogger("cadmcp.wire").warning("call log disabled: %s", err)
        except OSError:
            pass

    def write_later(self, make_line: Callable[[], str]) -> None:
        """Append the line `make_line()` builds, on this log's writer thread: building and writing a
        line (clipping, masking, JSON) stays off the caller's path. Lines keep their order."""
        if self._broken:
            return
        if self._queue is None:
            with self._lock:
                if self._queue is None:
                    self._queue = queue.SimpleQueue()
                    threading.Thread(target=self._drain, name="cadmcp-call-log", daemon=True).start()
                    atexit.register(self.flush)
        with self._count_lock:
            if self._pending >= MAX_QUEUED_LINES:  # the writer is behind (a slow disk, a burst of big
                self._dropped += 1  # answers): each waiting line holds its whole call, so drop it
                return
            self._pending += 1
        self._queue.put(make_line)

    def flush(self, timeout: float = 2.0) -> None:
        """Wait (bounded) until every line handed to `write_later` is written."""
        deadline = time.monotonic() + timeout
        while self._pending and time.monotonic() < deadline:
            time.sleep(0.005)

    def _drain(self) -> None:
        assert self._queue is not None
        while True:
            make_line = self._queue.get()
            try:
                with self._count_lock:
                    dropped, self._dropped = self._dropped, 0
                if dropped:
                    self.write(dumps({"dropped": dropped, "why": "the call log fell behind"}))
                self.write(make_line())
            except Exception:  # logging never breaks anything
                pass
            finally:
                with self._count_lock:
                    self._pending -= 1

    def write(self, line: str) -> None:
        """Append one line (a newline is added); failures disable the log quietly."""
        if self._broken:
            return
        with self._lock:
            try:
                self._roll()
                self._file.write(line.replace("\n", " ") + "\n")
                self._file.flush()
            except (OSError, RuntimeDirError):
                self._broken = True  # a full disk must not break MCP calls, nor print to stderr

    def _roll(self) -> None:
        hour = self.clock().strftime("%Y%m%d%H")
        if self._file is not None and hour == self._hour and self._file.tell() < MAX_FILE_BYTES:
            return
        if self._file is not None:
            self._file.close()
            self._seq = 0 if hour != self._hour else self._seq + 1
        self._hour = hour
        ensure_private_dir(self.directory, "log folder", LOG_DIR_ENV, own_links=True)
        while True:
            path = self.directory / f"log_{self.pid}_{hour}_{self._seq}.log"
            fd = _create_private(path)
            if fd is not None:
                break
            self._seq += 1
        self._file = os.fdopen(fd, "a", encoding="utf-8")
        self.path = path

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


_CREATE = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def _create_private(path: Path) -> int | None:
    """A new log file opened for appending, mode 0600; None when the name is taken (even by a link)."""
    try:
        return os.open(path, _CREATE | getattr(os, "O_CLOEXEC", 0), 0o600)
    except FileExistsError:
        return None


def remove_old_files(directory: Path, keep_days: float = KEEP_DAYS) -> list[Path]:
    """Delete this format's log files last written more than `keep_days` ago; returns them."""
    cutoff = time.time() - keep_days * 86400
    removed = []
    for path in directory.iterdir():
        if _FILE_RE.match(path.name):
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed.append(path)
    return removed


_shared: CallLogFile | None = None
_shared_lock = threading.Lock()


def shared_log() -> CallLogFile:
    """This process's one log file (opened on first use, old files cleaned then)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.pid != os.getpid():
            _shared = CallLogFile()
        return _shared


def client_of(ctx: Any) -> str:
    """The calling client's name and version as it introduced itself (`claude-code/2.1`; "" when
    it gave none), clipped and with anything like a secret masked."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    if not isinstance(name, str) or not name:
        return ""
    version = getattr(info, "version", None)
    said = f"{name}/{version}" if isinstance(version, str) and version else name
    return mask_text(said[:80])


def timestamp() -> str:
    return datetime.now().astimezone().isoformat(timespec="milliseconds")


# -- routing stdlib log records into the same file ---------------------------------------------
class _FileHandler(logging.Handler):
    def __init__(self, log: CallLogFile) -> None:
        super().__init__(logging.INFO)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += " | " + " ".join(logging.Formatter().formatException(record.exc_info).split())
            message = mask_text(message[: MAX_STRING * 4])
            self.log.write(f"{timestamp()} {record.levelname.lower()} {record.name} {message}")
        except Exception:
            self.handleError(record)


class _Forward(logging.Handler):
    """Hands warnings on to the root handlers when the logger no longer propagates."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger().handle(record)


def route_logger(name: str, log: CallLogFile | None = None, stderr: int = logging.WARNING) -> None:
    """Write INFO and above of logger `name` into the call-log file.

    Info lines reach stderr only when the root logger is at INFO (`cadmcp -v`); records from
    `stderr` up (warnings by default) keep reaching it as before, so stdio clients see a quiet
    stderr.
    """
    logger = logging.getLogger(name)
    if any(isinstance(h, _FileHandler) for h in logger.handlers):
        return
    logger.addHandler(_FileHandler(log or shared_log()))
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
        if logging.getLogger().getEffectiveLevel() > logging.INFO:
            logger.propagate = False
            logger.addHandler(_Forward(stderr))


# -- compacting what gets logged ---------------------------------------------------------------
def clip(value: Any, limit: int = MAX_STRING) -> Any:
    """A copy of `value` fit for a log line: secrets masked (`cadmcp.wire.masking`: secret-named
    fields at any depth, credential-looking text), and strings longer than `limit` cut and marked."""
    if isinstance(value, str):
        text = mask_text(value[: limit + _MASK_OVERLAP])
        return text if len(value) <= limit else f"{text[:limit]}…(+{len(value) - limit} chars)"
    if isinstance(value, dict | Mapping):
        return {
            k: MASK if isinstance(k, str) and secret_name(k) else clip(v, limit) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [clip(v, limit) for v in value]
    return value


def _b64_length(data: Any) -> int:
    if not isinstance(data, str):
        return 0
    data = data.strip()
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


def _resource(res: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"uri": clip(res.get("uri"))}
    if res.get("mimeType"):
        out["mimeType"] = res["mimeType"]
    if "blob" in res:
        out["length"] = _b64_length(res["blob"])
    elif "text" in res:
        out["text"] = clip(res["text"])
    return out


def compact_content(block: Any, mirror_of: Any = None) -> Any:
    """One content block for the log: binary as type/mime/length, text clipped."""
    if not isinstance(block, Mapping):
        return clip(block)
    kind = block.get("type")
    if kind in ("image", "audio"):
        return {"type": kind, "mimeType": block.get("mimeType"), "length": _b64_length(block.get("data"))}
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        return {"type": "resource", "resource": _resource(block["resource"])}
    if kind == "text" and mirror_of is not None and block.get("text") == dumps(mirror_of):
        return {"type": "text", "mirror": "structuredContent"}
    return clip({k: v for k, v in block.items() if k != "_meta"})


def compact_result(result: Any) -> Any:
    """A tool or resource result for the log, without its binary payloads."""
    if not isinstance(result, Mapping):
        return clip(result)
    out: dict[str, Any] = {}
    structured = result.get("structuredContent")
    if "content" in result:
        out["content"] = [compact_content(c, structured) for c in result.get("content") or []]
    if structured is not None:
        out["structuredContent"] = clip(structured)
    if "contents" in result:
        out["contents"] = [_resource(c) for c in result.get("contents") or [] if isinstance(c, Mapping)]
    if result.get("isError"):
        out["isError"] = True
    if result.get("resultType") not in (None, "complete"):
        out["resultType"] = result["resultType"]
        out["inputRequests"] = sorted(result.get("inputRequests") or {})
    meta = {k: v for k, v in (result.get("_meta") or {}).items() if k != _SERVER_INFO_META}
    if meta:
        out["_meta"] = clip(meta)
    return out


def outcome_of(result: Any) -> str:
    """`ok`, `error`, `timeout` (an error result that says it timed out) or `input_required`."""
    if not isinstance(result, Mapping):
        return "ok"
    if result.get("resultType") == "input_required":
        return "input_required"
    if not result.get("isError"):
        return "ok"
    structured = result.get("structuredContent")
    if isinstance(structured, Mapping) and "timeout" in str(
        structured.get("type") or structured.get("status") or ""
    ):
        return "timeout"
    first = (result.get("content") or [{}])[0]
    if isinstance(first, Mapping) and str(first.get("text") or "").startswith("[TIMEOUT]"):
        return "timeout"
    return "error"


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(value)
    return text if isinstance(value, str) and _BARE.match(text) else dumps(value)


def format_line(method: str, outcome: str, fields: Mapping[str, Any], stamp: str | None = None) -> str:
    """`<time> <method> <outcome> key=value ...`; values with spaces or structure as compact JSON."""
    parts = [stamp or timestamp(), method, outcome]
    parts.extend(f"{k}={_value(v)}" for k, v in fields.items() if v is not None)
    return " ".join(parts)


def parse_line(line: str) -> dict[str, Any]:
    """Read a call-log line back: `{time, method, outcome, <field>: value...}` (JSON values decoded)."""
    head = line.rstrip("\n").split(" ", 3)
    if len(head) < 3:
        raise ValueError(f"not a call-log line: {line!r}")
    out: dict[str, Any] = {"time": head[0], "method": head[1], "outcome": head[2]}
    rest = head[3] if len(head) > 3 else ""
    decoder = json.JSONDecoder()
    pos = 0
    while pos < len(rest):
        eq = rest.index("=", pos)
        key = rest[pos:eq]
        start = eq + 1
        if rest[start : start + 1] in ('"', "{", "["):
            value, end = decoder.raw_decode(rest, start)
        else:
            end = rest.find(" ", start)
            end = len(rest) if end < 0 else end
            raw = rest[start:end]
            value = int(raw) if raw.lstrip("-").isdigit() else raw
        out[key] = value
        pos = end + 1
    return out


# -- the middleware ----------------------------------------------------------------------------
Annotate = Callable[[str, dict[str, Any]], dict[str, Any]]
"""(tool name, arguments) -> extra fields logged before `durationMs` (e.g. the resolved host)."""
Summarize = Callable[[Any], Any]
"""A tool's wire result -> what to log instead of the compacted result."""
Caller = Callable[[Any], dict[str, Any]]
"""The middleware context -> fields naming who called (e.g. the client's name), logged after `target`."""


_line_fields: ContextVar[dict[str, Any] | None] = ContextVar("cadmcp_call_line", default=None)


def note(**fields: Any) -> None:
    """Add fields to the log line of the call being handled (e.g. the checkpoint id of the change it
    made); outside a logged call, nothing."""
    current = _line_fields.get()
    if current is not None:
        current.update(fields)


class CallLogger:
    """Server middleware writing one line per `tools/call` and `resources/read`."""

    def __init__(
        self,
        log: CallLogFile | None = None,
        *,
        route: str | None = None,
        annotate: Annotate | None = None,
        summaries: Mapping[str, Summarize] | None = None,
        caller: Caller | None = None,
    ) -> None:
        """`route` names a stdlib logger whose INFO+ records go to the same file."""
        self._log = log
        self.annotate = annotate
        self.caller = caller
        self.summaries = dict(summaries or {})
        if route is not None:
            route_logger(route, self.log)

    @property
    def log(self) -> CallLogFile:
        if self._log is None:
            self._log = shared_log()
        return self._log

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        method = ctx.method
        if method not in LOGGED_METHODS:
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        if method == "tools/call":
            target = params.get("name")
            args = params.get("arguments") if isinstance(params.get("arguments"), Mapping) else {}
            fields: dict[str, Any] = {"target": target}
            if self.caller is not None:
                with contextlib.suppress(Exception):
                    fields.update(self.caller(ctx))
            if self.annotate is not None and isinstance(target, str):
                with contextlib.suppress(Exception):
                    fields.update(self.annotate(target, dict(args)))
        else:
            target, args = params.get("uri"), {}
            fields = {"target": target}
        started = time.perf_counter()
        token = _line_fields.set(fields)  # what the call notes about itself joins its line
        try:
            result = await call_next(ctx)
        except BaseException as exc:
            outcome = "timeout" if isinstance(exc, TimeoutError) else "error"
            if "Cancelled" in type(exc).__name__:
                outcome = "cancelled"
            self.record(method, outcome, fields, started, args, error=error_of(exc))
            raise
        finally:
            _line_fields.reset(token)
        summarize = self.summaries.get(str(target)) if method == "tools/call" else None
        self.record(method, outcome_of(result), fields, started, args, result=result, summarize=summarize)
        return result

    def record(
        self,
        method: str,
        outcome: str,
        fields: dict[str, Any],
        started: float,
        args: Mapping[str, Any],
        *,
        result: Any = None,
        summarize: Summarize | None = None,
        error: Any = None,
    ) -> None:
        """Write one call's line (`started` from `time.perf_counter()`): for a path that serves
        calls beside the middleware (a proxy's plain tool calls), the same line it writes."""
        duration = round((time.perf_counter() - started) * 1000)
        stamp = timestamp()
        if isinstance(result, dict):
            result = dict(result)  # the transport may still stamp the answer's top level meanwhile

        def line() -> str:  # built on the log's writer thread: the answer goes out first
            logged = None
            if summarize is not None and isinstance(result, Mapping) and not result.get("isError"):
                with contextlib.suppress(Exception):
                    logged = summarize(result)
            line_fields = {
                **fields,
                "durationMs": duration,
                "args": clip(args) if method == "tools/call" else None,
                "result": (clip(logged) or compact_result(result)) if result is not None else None,
                "error": error,
            }
            return format_line(method, outcome, line_fields, stamp)

        with contextlib.suppress(Exception):  # logging never breaks a call
            self.log.write_later(line)


def error_of(exc: BaseException) -> dict[str, Any]:
    """What a failed call's line says of its error."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    message = getattr(error, "message", None) or str(exc) or type(exc).__name__
    out: dict[str, Any] = {"type": type(exc).__name__, "message": clip(message, 500)}
    if code is not None:
        out["code"] = code
    return out
