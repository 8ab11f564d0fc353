"""Recording tools that crash, so a failing toolset shows up in the log and the toolsets report.

The MCP SDK turns an unexpected exception in a tool into an error result without its text
("Error executing tool X"). So each tool function of a toolset's `MCPServer` is wrapped: a
crash is logged with its traceback, the last few are kept per module for `cadmcp://toolsets`,
and the caller gets the reason (exception type and clipped message) and where the traceback
is. Deliberate errors (`ToolError`, `MCPError`) are answers, not crashes, and pass unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared._callable_inspection import is_async_callable
from mcp.shared.exceptions import MCPError, NoBackChannelError
from pydantic_core import to_jsonable_python

from cadmcp.host.toolsets.loader import MAX_TRACEBACK, ModuleError

log = logging.getLogger("cadmcp.host.toolsets")

MAX_FAILURES = 5
ASK_BY_ROUNDS = (
    "A host's connection carries no request back to the client: a toolset asks the person by returning "
    "an InputRequiredResult, answered in a later round (samples/toolsets/dxf/cleanup.py; docs/toolsets.md)."
)
_EXPECTED = (ToolError, ResourceError, MCPError)
_WATCHED = "__cadmcp_toolset_watched__"


class FailureLog:
    """The most recent tool crashes of one toolset module."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.items: deque[ModuleError] = deque(maxlen=MAX_FAILURES)

    def record(self, tool: str, exc: BaseException, kind: str = "tool") -> str:
        """Keep and log the crash; what the caller is told instead (reason, where to look)."""
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # skip the wrapper
        text = "".join(traceback.format_exception(type(exc), exc, tb))[-MAX_TRACEBACK:]
        self.items.append(ModuleError(kind, f"{tool}: {type(exc).__name__}: {exc}", text, tool=tool))
        name = type(exc).__name__
        log.error("toolset %s: %s %s failed: %s: %s\n%s", self.label, kind, tool, name, exc, text)
        where = _last_frame(exc)
        reason = " ".join(str(exc).split())
        reason = reason if len(reason) <= 300 else reason[:299] + "…"
        return (
            f"{tool} (toolset {self.label}) failed: {type(exc).__name__}: {reason}"
            f"{where}. The traceback is in the host log and in the cadmcp://toolsets resource (toolErrors "
            f"of this module); fix the toolset (it reloads when saved) or use another {kind}."
        )


def _last_frame(exc: BaseException) -> str:
    """` at walls.py:12 in count_walls`: the innermost frame of the crash."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" at {Path(last.filename).name}:{last.lineno} in {last.name}"


MAX_CHECKED = 100_000
"""Values of a structured answer looked at for a number JSON cannot carry (the rest pass unchecked)."""


def non_finite(plain: Any) -> str | None:
    """Where a NaN or an infinity sits in `plain` (a result made JSON-able: `result['area']`), or
    None. JSON has neither: the SDK writes null, and a client checking the tool's output schema
    refuses the whole answer."""
    stack: list[tuple[str, Any]] = [("result", plain)]
    for _ in range(MAX_CHECKED):
        if not stack:
            return None
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where
        if isinstance(item, dict):
            stack.extend((f"{where}[{k!r}]", v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
    return None


def _checked(result: Any, what: str, failures: FailureLog, structured: bool) -> Any:
    """`result`, or a ToolError saying what in it no client can be sent: bytes that are no text
    (the SDK answered only "Error executing tool X"), a NaN where an output schema wants a number."""
    try:
        plain = to_jsonable_python(result, fallback=str)
    except Exception as exc:
        reason = " ".join(str(exc).split())[:200]
        problem = ValueError(
            f"returned a value no JSON can carry ({reason}): return text (bytes decoded, or base64 for "
            "binary data) or numbers"
        )
        raise ToolError(failures.record(what, problem)) from None
    where = non_finite(plain) if structured else None
    if where is None:
        return result
    problem = ValueError(
        f"returned {where} = NaN or infinity, which JSON cannot carry (a client checking the output schema "
        "refuses the answer): return None (typed Optional) or a string there"
    )
    raise ToolError(failures.record(what, problem))


def _wrap(
    fn: Callable[..., Any], what: str, failures: FailureLog, kind: str = "tool", structured: bool = False
) -> Callable[..., Any]:
    error = ToolError if kind == "tool" else ResourceError  # the SDK passes their text on

    def check(result: Any, what: str, failures: FailureLog) -> Any:
        return _checked(result, what, failures, structured) if kind == "tool" else result

    if is_async_callable(fn):

        @functools.wraps(fn)
        async def watched_async(*args: Any, **kwargs: Any) -> Any:
            try:
                result = await fn(*args, **kwargs)
            except NoBackChannelError as exc:  # ctx.elicit / ctx.session.create_message in a toolset
                raise error(
                    f"{what} (toolset {failures.label}): {exc.error.message} {ASK_BY_ROUNDS}"
                ) from exc
            except _EXPECTED:
                raise
            except Exception as exc:
                raise error(failures.record(what, exc, kind)) from exc
            return check(result, what, failures)

        setattr(watched_async, _WATCHED, True)
        return watched_async

    @functools.wraps(fn)
    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except _EXPECTED:
            raise
        except Exception as exc:
            raise error(failures.record(what, exc, kind)) from exc
        return check(result, what, failures)

    setattr(watched, _WATCHED, True)
    return watched


def watch_tools(server: MCPServer[Any] | Server[Any], failures: FailureLog) -> None:
    """Wrap every tool, resource and template function of an MCPServer (before the runtime binds it
    to the app thread)."""
    if not isinstance(server, MCPServer):
        return  # a low-level server's handler answers for itself
    for tool in server._tool_manager.list_tools():
        if not getattr(tool.fn, _WATCHED, False):
            tool.fn = _wrap(tool.fn, tool.name, failures, structured=tool.output_schema is not None)
    resources = server._resource_manager  # their crashes said only "Error reading resource X"
    for item in [*resources.list_resources(), *resources.list_templates()]:
        fn = getattr(item, "fn", None)
        if callable(fn) and not getattr(fn, _WATCHED, False):
            label = str(getattr(item, "uri_template", None) or getattr(item, "uri", item))
            with contextlib.suppress(Exception):  # a resource kind whose function cannot be replaced
                item.fn = _wrap(fn, label, failures, "resource")
