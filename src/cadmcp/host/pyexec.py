"""Run an agent's Python code against a live document namespace, like a notebook cell.

Shared by every host adapter's ``execute_python_code`` tool. One call to :func:`run_code`:

1. parses the code (``[SYNTAX ERROR]`` on failure, nothing runs);
2. installs PEP 723 inline dependencies (``# /// script`` … ``dependencies = [...]``) with uv
   into a cached target directory keyed by the sorted dependency list and the Python
   version, and puts it on ``sys.path`` for this run only (``[DEPENDENCY ERROR]`` with uv's
   message on failure, nothing runs);
3. calls the adapter's ``begin()`` hook (e.g. take a change-tracking snapshot);
4. executes the code on the *calling* thread with stdout/stderr of that thread captured and
   the value of a final expression kept; a watchdog thread stops a runaway script after
   ``timeout`` seconds by raising :class:`ExecTimeout` asynchronously in it (``[TIMEOUT]``);
5. calls ``commit(token)`` on success or ``rollback(token)`` on any failure
   (``[RUNTIME ERROR]`` / ``[TIMEOUT]`` plus ``[ROLLBACK]``). The adapter decides whether the
   document was mutated and what to record; the hooks may return a note for the output.

Adapter example::

    result = run_code(code, {"doc": doc}, timeout=60,
                      begin=tracker.snapshot, commit=record_step, rollback=tracker.restore)
    text, is_error = result.text(), result.is_error

A run also stops when its request is cancelled (``[CANCELLED]``, rolled back), and
``os._exit``/``os.abort`` from the script raise instead of ending the host. Scripts find
``progress(fraction, message)`` in their namespace (unless they defined their own): it
reports how far they are to the caller as MCP progress (see :mod:`cadmcp.host.progress`).

Limits: the stop is delivered between Python bytecodes, plus a signal that interrupts a
blocking C call (``time.sleep(1e6)``, a huge regex) when the script runs on the process's
main thread; elsewhere such a call is stopped only when it returns. A loop that catches
everything with a bare ``except:`` may swallow the repeated stop requests; the host then
reports itself wedged (``host_busy``) until the code ends or the host is restarted.
Modules imported from a PEP 723 directory stay in ``sys.modules`` after the run.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import functools
import io
import linecache
import os
import reprlib
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO, TypeVar

from cadmcp.host import sideeffects
from cadmcp.host.appthread import AppCall, current_call
from cadmcp.host.progress import report_progress
from cadmcp.host.scriptdeps import (
    DependencyError,
    ensure_dependencies,
    parse_script_dependencies,
    prepended_to_sys_path,
)

__all__ = [
    "EXEC_TIMEOUT_ENV",
    "ExecCancelled",
    "ExecResult",
    "ExecTimeout",
    "Status",
    "default_timeout",
    "run_code",
]

EXEC_TIMEOUT_ENV = "CADMCP_EXEC_TIMEOUT"
"""Environment variable (seconds) for the runaway-script timeout; default 60."""

DEFAULT_TIMEOUT = 60.0
USER_FILENAME = "<agent-code>"
MAX_VALUE_REPR = 20_000
MAX_OUTPUT = 200_000


class _EndCut(reprlib.Repr):
    """reprlib's bounds, but a long string or object is cut at its end and says how much is left
    out: reprlib cuts it in the middle with a bare '...', which reads as part of the value (a
    30,006-character string came back as 20,000 with its middle gone and nothing said)."""

    def repr_str(self, x: str, level: int) -> str:
        return _cut(x, self.maxstring, "characters of the string")

    def repr_bytes(self, x: bytes, level: int) -> str:
        return _cut(x, self.maxstring, "bytes")

    def repr_instance(self, x: object, level: int) -> str:
        try:
            text = builtins.repr(x)
        except Exception:
            return f"<{type(x).__name__} instance at {id(x):#x}>"
        if len(text) <= self.maxother:
            return text
        return f"{text[: self.maxother]}… [{len(text) - self.maxother} more characters]"


def _cut(value: str | bytes, most: int, what: str) -> str:
    if len(value) <= most:
        return builtins.repr(value)
    return f"{value[:most]!r}… [{len(value) - most} more {what}]"


def _value_repr() -> reprlib.Repr:
    """`repr` with bounds: a final expression holding a huge value cannot exhaust memory or time."""
    limits = _EndCut()
    limits.maxlevel = 6
    limits.maxlist = limits.maxtuple = limits.maxset = limits.maxfrozenset = limits.maxdeque = 2000
    limits.maxarray = 2000
    limits.maxdict = 1000
    limits.maxstring = limits.maxother = limits.maxlong = MAX_VALUE_REPR - 100  # room for the marker
    return limits


_REPR = _value_repr()

Status = Literal["ok", "syntax_error", "dependency_error", "runtime_error", "timeout", "cancelled"]

T = TypeVar("T")

PREFIX: dict[Status, str] = {
    "ok": "",
    "syntax_error": "[SYNTAX ERROR]",
    "dependency_error": "[DEPENDENCY ERROR]",
    "runtime_error": "[RUNTIME ERROR]",
    "timeout": "[TIMEOUT]",
    "cancelled": "[CANCELLED]",
}


class ExecTimeout(BaseException):
    """Raised asynchronously inside a script that ran past its timeout.

    A ``BaseException`` so that ``except Exception`` in user code does not swallow it.
    """


class ExecCancelled(BaseException):
    """Raised asynchronously inside a script whose call was cancelled (or whose host is stopping)."""


class HostExitRefused(Exception):
    """A script called ``os._exit``/``os.abort``, which would end the host with its documents."""


@dataclass
class ExecResult:
    """Outcome of one :func:`run_code` call.

    ``output`` is what the code printed; ``value`` the value of a final expression (``None``
    if there was none); ``error`` the prefixed error text; ``notes`` what the transaction
    hooks reported (undo step recorded, ``[ROLLBACK] …``).
    """

    status: Status
    output: str = ""
    value: Any = None
    has_value: bool = False
    error: str | None = None
    rolled_back: bool = False
    notes: list[str] = field(default_factory=list)
    duration: float = 0.0

    @property
    def is_error(self) -> bool:
        """True unless the code ran to completion."""
        return self.status != "ok"

    @property
    def value_repr(self) -> str | None:
        """``repr`` of the final expression's value, truncated; None when there was none."""
        if not self.has_value:
            return None
        try:
            text = _REPR.repr(self.value)
        except Exception as exc:
            text = f"<repr failed: {type(exc).__name__}: {exc}>"
        if len(text) > MAX_VALUE_REPR:
            text = text[:MAX_VALUE_REPR] + f"… [{len(text) - MAX_VALUE_REPR} more characters]"
        return text

    def text(self) -> str:
        """Human/agent readable summary: error first, then output, value and notes."""
        parts: list[str] = []
        if self.error:
            parts.append(self.error)
        if self.output:
            parts.append(("Output before the error:\n" if self.error else "") + self.output.rstrip("\n"))
        value = self.value_repr
        if value is not None:
            parts.append(f"Result: {value}")
        parts.extend(self.notes)
        if not parts:
            parts.append("Code ran without output. End the code with an expression to see its value.")
        return "\n\n".join(parts)


def default_timeout() -> float:
    """The timeout from ``CADMCP_EXEC_TIMEOUT`` (seconds), or 60 when unset or invalid."""
    raw = os.environ.get(EXEC_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def run_code(
    code: str,
    namespace: dict[str, Any],
    *,
    timeout: float | None = None,
    begin: Callable[[], T] | None = None,
    commit: Callable[[T], str | None] | None = None,
    rollback: Callable[[T], str | None] | None = None,
    install_dependencies: bool = True,
) -> ExecResult:
    """Run ``code`` in ``namespace`` on the calling thread and report what happened.

    ``timeout`` defaults to :func:`default_timeout`. ``begin`` runs just before the code and
    its return value (a snapshot token) is passed to ``commit`` after a successful run or
    to ``rollback`` after an error or timeout; each may return a note for the output.
    Never raises for problems in the user's code.
    """
    started = time.perf_counter()
    limit = default_timeout() if timeout is None else timeout

    try:
        body, last_expr = _compile(code)
    except SyntaxError as exc:
        detail = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
        detail = detail.replace(f'File "{USER_FILENAME}", ', "")
        return ExecResult(
            "syntax_error",
            error=f"{PREFIX['syntax_error']} Nothing ran; fix the code and run it again.\n{detail}",
            duration=time.perf_counter() - started,
        )

    extra_paths: list[str] = []
    if install_dependencies:
        try:
            deps = parse_script_dependencies(code)
            if deps:
                extra_paths.append(str(ensure_dependencies(deps)))
        except DependencyError as exc:
            return ExecResult(
                "dependency_error",
                error=f"{PREFIX['dependency_error']} Nothing ran. {exc}",
                duration=time.perf_counter() - started,
            )

    _register_source(code)
    token = begin() if begin is not None else None
    buffer = _CaptureBuffer()
    result = ExecResult("ok")
    with prepended_to_sys_path(extra_paths), _capture_thread_output(buffer):
        outcome = _run_guarded(body, last_expr, namespace, limit)
    result.output = buffer.getvalue()
    result.status = outcome.status
    if outcome.status == "ok":
        result.value, result.has_value = outcome.value, outcome.has_value
        if commit is not None:
            try:
                note = commit(token)  # type: ignore[arg-type]
            except Exception as exc:
                result.status = "runtime_error"
                result.error = (
                    f"{PREFIX['runtime_error']} The code ran but its changes could not be recorded: {exc}"
                )
                _do_rollback(result, rollback, token)
            else:
                if note:
                    result.notes.append(note)
    else:
        result.error = outcome.error
        _do_rollback(result, rollback, token)
    result.duration = time.perf_counter() - started
    return result


def _do_rollback(result: ExecResult, rollback: Callable[[Any], str | None] | None, token: Any) -> None:
    if rollback is None:
        return
    try:
        note = rollback(token)
    except Exception as exc:
        result.notes.append(f"[ROLLBACK FAILED] The document may be partly changed: {exc}")
        return
    result.rolled_back = True
    result.notes.append(note or "[ROLLBACK] The document was restored to its state before the code ran.")


# --- parsing and execution -------------------------------------------------------------


def _compile(code: str) -> tuple[Any, Any | None]:
    """Compile ``code`` into a body and, if it ends with an expression, that expression."""
    tree = ast.parse(code, filename=USER_FILENAME, mode="exec")
    last_expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        expr = ast.Expression(tree.body.pop().value)
        last_expr = compile(expr, USER_FILENAME, "eval")
    body = compile(tree, USER_FILENAME, "exec")
    return body, last_expr


def _register_source(code: str) -> None:
    """Let tracebacks show the user's source lines."""
    lines = code.splitlines(keepends=True)
    linecache.cache[USER_FILENAME] = (len(code), None, lines, USER_FILENAME)


@dataclass
class _Outcome:
    status: Status
    value: Any = None
    has_value: bool = False
    error: str | None = None


def _run_guarded(body: Any, last_expr: Any | None, namespace: dict[str, Any], limit: float) -> _Outcome:
    namespace.setdefault("__name__", "__agent__")
    namespace.setdefault("__builtins__", __builtins__)
    namespace.setdefault("progress", report_progress)
    watchdog = _Watchdog(threading.get_ident(), limit, current_call())
    started = time.monotonic()
    try:
        try:
            watchdog.start()
            with _exits_refused():
                exec(body, namespace)
                value = None if last_expr is None else eval(last_expr, namespace)
        finally:
            watchdog.stop()
            _untrace()
        if (reason := watchdog.fired or _interrupts.fired) is not None:  # raised, and swallowed on the way
            return _stopped_outcome(reason, limit, time.monotonic() - started)
        return _Outcome("ok", value=value, has_value=value is not None)
    except (ExecTimeout, ExecCancelled) as exc:
        return _stopped_outcome(type(exc), limit, time.monotonic() - started)
    except BaseException as exc:
        if (reason := watchdog.fired or _interrupts.fired) is not None:
            return _stopped_outcome(reason, limit, time.monotonic() - started)
        return _Outcome("runtime_error", error=f"{PREFIX['runtime_error']} {_format_user_traceback(exc)}")


def _stopped_outcome(reason: type[BaseException], limit: float, took: float | None = None) -> _Outcome:
    if reason is ExecCancelled:
        return _Outcome(
            "cancelled",
            error=f"{PREFIX['cancelled']} The call was cancelled (or the host is stopping); the code was "
            "stopped before it finished.",
        )
    return _timeout_outcome(limit, took)


def _timeout_outcome(limit: float, took: float | None = None) -> _Outcome:
    late = took is not None and took > limit + LATE_STOP
    when = (
        f"after {took:.0f} s: its limit is {limit:g} s, and code it called kept catching the stop"
        if late
        else f"after {limit:g} s"
    )
    return _Outcome(
        "timeout",
        error=(
            f"{PREFIX['timeout']} The code was stopped {when}. Make it faster (work on "
            f"fewer elements, avoid endless loops) or raise the limit with the {EXEC_TIMEOUT_ENV} "
            "environment variable (seconds) of the host process."
        ),
    )


LATE_STOP = 2.0
"""Seconds past its limit after which a stopped script's answer says how long it really ran."""
_traced = threading.local()


def stop_at_script_line(stop: BaseException | type[BaseException]) -> None:
    """Raise ``stop`` (a script's :class:`ExecTimeout` or :class:`ExecCancelled`) again at the script's
    next line. For host code the application calls back while a script runs (FreeCAD's document
    observers, during a recompute): the stop, raised asynchronously, may land there, where the
    application would catch it and the script run on past its limit. Called from that code's
    ``except``, on the script's thread (and by the signal handlers that raise the stop)."""
    kind = stop if isinstance(stop, type) else type(stop)

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == USER_FILENAME:
            raise kind()
        return None  # the application's own frames: not traced

    frame = sys._getframe(1)
    found = False
    while frame is not None:
        if frame.f_code.co_filename == USER_FILENAME:
            frame.f_trace, frame.f_trace_lines, found = tracer, True, True
        frame = frame.f_back
    if found:
        if not hasattr(_traced, "previous"):
            _traced.previous = sys.gettrace()
        sys.settrace(tracer)  # again each time: a trace function that raised was turned off


def _untrace() -> None:
    """Put back the trace function :func:`stop_at_script_line` replaced (a debugger's, coverage's)."""
    if hasattr(_traced, "previous"):
        sys.settrace(_traced.previous)
        del _traced.previous


def shielded(slot: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a callback the application makes while a script may run (a document observer's slot):
    a script's stop landing in it is raised again in the script (:func:`stop_at_script_line`),
    after the callback ran once more whole, so what it records is not left half done."""

    @functools.wraps(slot)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return slot(*args, **kwargs)
        except (ExecTimeout, ExecCancelled) as stop:
            try:
                slot(*args, **kwargs)
            finally:
                stop_at_script_line(stop)
            return None

    return run


def _format_user_traceback(exc: BaseException) -> str:
    """Format ``exc`` with the frames before the first user frame dropped."""
    te = traceback.TracebackException.from_exception(exc)
    stack = te.stack
    for index, frame in enumerate(stack):
        if frame.filename == USER_FILENAME:
            del stack[:index]
            break
    lines = "".join(te.format()).rstrip()
    lines = lines.replace(f'File "{USER_FILENAME}"', "Your code")
    head = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return f"{head}\n{lines}"


class _Watchdog:
    """Stop the script in thread ``tid`` when its call is cancelled or after ``limit`` s.

    It raises :class:`ExecCancelled` / :class:`ExecTimeout` asynchronously in the script and
    re-raises every 0.2 s, giving code that swallowed one with a bare ``except:`` more chances to
    stop. A script blocked inside one C call (``time.sleep``, a long regex) on the process's main
    thread is interrupted by a signal as well. ``stop()`` clears anything still pending so it
    cannot leak into the caller.
    """

    POLL = 0.05
    REFIRE = 0.2

    def __init__(
        self, tid: int, limit: float, call: AppCall | None = None, scope: Callable[[Any], bool] | None = None
    ) -> None:
        self._tid = tid
        self._limit = limit
        self._call = call
        self._scope = scope or _in_script
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._running = False
        self.fired: type[BaseException] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._running = True
        _interrupts.arm(self._tid, self._limit, self._scope)
        self._thread = threading.Thread(target=self._watch, name="cadmcp-exec-watchdog", daemon=True)
        with sideeffects.unwatched():  # a preview refuses the script's threads, not this one
            self._thread.start()

    def _reason(self, started: float) -> type[BaseException] | None:
        if self._call is not None and self._call.cancel_requested:
            return ExecCancelled
        if time.monotonic() - started >= self._limit:
            return ExecTimeout
        return None

    def _watch(self) -> None:
        started = time.monotonic()
        while (reason := self._reason(started)) is None:
            if self._done.wait(self.POLL):
                return
        if self._call is not None:
            self._call.request_stop()
        rounds = 0
        while True:
            with self._lock:
                if not self._running:
                    return
                self.fired = reason
                _set_async_exc(self._tid, reason)
                if rounds >= 1:  # still there after one round: maybe blocked inside a C call
                    _interrupts.interrupt(self._tid, reason)
            rounds += 1
            if self._done.wait(self.REFIRE):
                return

    def stop(self) -> None:
        self._done.set()
        with self._lock:
            self._running = False
            _interrupts.disarm()
            if self.fired is not None:
                _set_async_exc(self._tid, None)


class _SignalInterrupts:
    """Stop a script on the process's main thread through signals, which need no other thread.

    A C call that holds the GIL (a catastrophic regex) starves the watchdog thread, but a
    kernel timer still fires: SIGALRM, armed for the timeout and repeating every 0.2 s, has a
    handler that raises :class:`ExecTimeout` (the regex engine and blocking calls check for
    signals). SIGUSR1 carries a cancellation the watchdog decided on. Installed only where
    those signals are unused; elsewhere the asynchronous exception alone applies.
    """

    def __init__(self) -> None:
        self._target: int | None = None
        self._pending: type[BaseException] | None = None
        self._installed = False
        self._scope: Callable[[Any], bool] = _in_script
        self.fired: type[BaseException] | None = None

    def _install(self) -> bool:
        if self._installed:
            return True
        try:
            for sig in (signal.SIGUSR1, signal.SIGALRM):
                if signal.getsignal(sig) not in (signal.SIG_DFL, None):
                    return False
            signal.signal(signal.SIGUSR1, self._handler)
            signal.signal(signal.SIGALRM, self._on_alarm)
        except (ValueError, AttributeError):  # not the main thread after all, or no such signals
            return False
        self._installed = True
        return True

    def arm(self, tid: int, limit: float, scope: Callable[[Any], bool] | None = None) -> None:
        self.fired = None
        self._scope = scope or _in_script
        if tid != threading.main_thread().ident or not hasattr(signal, "setitimer") or not self._install():
            return
        self._target = tid
        signal.setitimer(signal.ITIMER_REAL, max(limit, 0.001), _Watchdog.REFIRE)

    def interrupt(self, tid: int, reason: type[BaseException]) -> None:
        if self._installed and self._target == tid:
            self._pending = reason
            signal.pthread_kill(tid, signal.SIGUSR1)

    def disarm(self) -> None:
        if self._target is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        self._target = None
        self._pending = None

    def _handler(self, signum: int, frame: Any) -> None:
        pending = self._pending
        if pending is not None and self._target is not None and self._scope(frame):
            self.fired = pending
            stop_at_script_line(pending)  # should the code it lands in swallow it (an application's)
            raise pending()

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self._target is not None and self._scope(frame):
            self.fired = ExecTimeout
            stop_at_script_line(ExecTimeout)  # should the code it lands in swallow it (an application's)
            raise ExecTimeout()
        signal.setitimer(signal.ITIMER_REAL, 0)  # the script is over: nothing to stop


@contextmanager
def time_limit(limit: float, scope: Callable[[Any], bool]) -> Iterator[None]:
    """Stop the code run inside the block on this thread with :class:`ExecTimeout` after ``limit`` s,
    as a script's is stopped (a blocking call on the main thread too, where ``scope`` of the frame
    it is in holds): for code of others that must not wedge the host (a toolset's import)."""
    watchdog = _Watchdog(threading.get_ident(), limit, scope=scope)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.stop()


def _in_script(frame: Any) -> bool:
    """Whether the interrupted code runs inside the agent's script (its own frames or calls it made);
    a signal arriving just after the script ended must not raise in the host's own code."""
    while frame is not None:
        if frame.f_code.co_filename == USER_FILENAME:
            return True
        frame = frame.f_back
    return False


_interrupts = _SignalInterrupts()


@contextmanager
def _exits_refused() -> Iterator[None]:
    """While a script runs, ``os._exit``/``os.abort`` from its thread raise instead of ending the host."""
    script = threading.get_ident()
    real_exit, real_abort = os._exit, os.abort

    def refuse(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any) -> Any:
            if threading.get_ident() == script:
                raise HostExitRefused(
                    f"os.{name}() would end the host process and close its documents; it is not allowed "
                    "in host scripts (nothing exited). Raise an exception to stop a script early."
                )
            return real(*args)

        return guarded

    os._exit, os.abort = refuse("_exit", real_exit), refuse("abort", real_abort)  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit, os.abort = real_exit, real_abort  # type: ignore[assignment]


def _set_async_exc(tid: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(tid), ctypes.py_object(exc) if exc is not None else ctypes.c_void_p(0)
    )


# --- output capture --------------------------------------------------------------------


class _CaptureBuffer(io.StringIO):
    """A StringIO that stops growing at MAX_OUTPUT characters."""

    def __init__(self) -> None:
        super().__init__()
        self._size = 0
        self._dropped = 0

    def write(self, s: str) -> int:
        room = MAX_OUTPUT - self._size
        if room <= 0:
            self._dropped += len(s)
            return len(s)
        if len(s) > room:
            self._dropped += len(s) - room
            s_kept = s[:room]
        else:
            s_kept = s
        self._size += len(s_kept)
        super().write(s_kept)
        return len(s)

    def getvalue(self) -> str:
        text = super().getvalue()
        if self._dropped:
            text += f"\n… [{self._dropped} more characters of output dropped]\n"
        return text


class _ThreadRouter(io.TextIOBase):
    """Stand-in for sys.stdout/sys.stderr: writes from capturing threads go to their buffer,
    writes from any other thread go to the original stream."""

    def __init__(self, original: TextIO) -> None:
        self.original = original
        self.buffers: dict[int, io.StringIO] = {}

    def _target(self) -> TextIO | io.StringIO:
        return self.buffers.get(threading.get_ident(), self.original)

    def write(self, s: str) -> int:
        return self._target().write(s)

    def flush(self) -> None:
        target = self._target()
        if target is self.original:
            target.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.original, "encoding", "utf-8") or "utf-8"


_router_lock = threading.Lock()


@contextmanager
def _capture_thread_output(buffer: io.StringIO) -> Iterator[None]:
    """Capture this thread's stdout and stderr into ``buffer``; restore both afterwards."""
    tid = threading.get_ident()
    routers: list[tuple[str, _ThreadRouter, bool, io.StringIO | None]] = []
    with _router_lock:
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            # `type` rather than isinstance: some applications (FreeCAD's GUI) install stream
            # objects whose class lookup raises
            installed = type(current) is not _ThreadRouter
            router = _ThreadRouter(current) if installed else current
            if installed:
                setattr(sys, name, router)
            routers.append((name, router, installed, router.buffers.get(tid)))
            router.buffers[tid] = buffer
    try:
        yield
    finally:
        with _router_lock:
            for name, router, installed, previous in routers:
                if previous is not None:
                    router.buffers[tid] = previous
                else:
                    router.buffers.pop(tid, None)
                if installed and not router.buffers:
                    setattr(sys, name, router.original)
                elif installed and getattr(sys, name) is not router:
                    setattr(sys, name, router)  # user code replaced the stream: put ours back
