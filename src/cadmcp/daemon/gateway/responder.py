"""Answering other machines: calls into this machine's hosts, catalogs, launches, file reads, pings.

Only the daemon that holds this machine's registration answers (`registration.py`). A
call is checked the way a local one is (`invoking.resolve`: ids are the same on every
machine, so a host gone or a capability changed here is a stale error, and nothing runs),
then against this machine's remote settings (read-only, no remote `execute_python_code`)
and the person's policy here (`cadmcp.daemon.policy`: a deny answers `policy_denied`, a
confirm waits for this machine's approval queue), then acknowledged and passed through to
the host untouched. Each one leaves a call-log line
naming the caller's machine.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import anyio.abc
from mcp.shared.exceptions import MCPError

from cadmcp.daemon import filemeta, invoking
from cadmcp.daemon.catalog import Capability, HostEntry, HostKey
from cadmcp.daemon.errors import DaemonError, stale, validation_error
from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.context import GatewayContext, GatewayPart
from cadmcp.daemon.gateway.rpc import Reply
from cadmcp.daemon.hostlink import Link
from cadmcp.daemon.launching import HostLauncher
from cadmcp.daemon.limits import MAX_PATH_CHARS
from cadmcp.daemon.policy.explain import MAX_PATTERN, show
from cadmcp.daemon.policy.gate import Gate, preview_summary
from cadmcp.daemon.policy.rules import declared
from cadmcp.wire.calllog import clip, compact_result, format_line, mask_secrets, outcome_of, shared_log
from cadmcp.wire.echo import echo
from cadmcp.wire.meta import PREVIEW

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""How a call that came through the gateway reports progress to its caller (`Reply.progress`)."""

log = logging.getLogger("cadmcp.daemon.gateway")

KEEPALIVE = 5.0
"""Seconds between `alive` frames while a call runs (callers give up after three missed)."""
PYTHON_TOOL = "execute_python_code"
MAX_TIMEOUT = 86400.0
MAX_CALLS = 64
"""Calls from other machines one machine runs at once; more are refused (nothing runs)."""


def _text(value: Any, limit: int = 64) -> str:
    return str(value)[:limit] if isinstance(value, str | int) else ""


class Responder(GatewayPart):
    """Serves `cadmcp.<space>.m.<this machine>.*` for the registration holder."""

    def __init__(
        self, context: GatewayContext, launcher: HostLauncher | None, gate: Gate | None = None
    ) -> None:
        super().__init__(context)
        self.launcher = launcher
        self.gate = gate
        self.machine_id = context.settings.machine_id
        self._running: dict[str, anyio.CancelScope] = {}
        self._alive: dict[int, Reply] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    async def subscribe(self, tg: anyio.abc.TaskGroup) -> list[Any]:
        """Subscribe this machine's request subjects; handlers run in `tg`."""
        if self._tg is None:
            tg.start_soon(self._keep_alive_loop)
        self._tg = tg
        client = self.connection.client
        handlers = {
            "call": self._call,
            "catalog": self._catalog,
            "launch": self._launch,
            "fileinfo": self._file_info,
            "ping": self._ping,
            "cancel": self._cancel,
            "policy": self._policy,
        }
        subs = []
        for operation, handler in handlers.items():

            async def on_message(msg: Any, handler: Any = handler) -> None:
                assert self._tg is not None
                self._tg.start_soon(self._guarded, handler, msg)

            subs.append(
                await client.subscribe(self.subjects.machine(self.machine_id, operation), cb=on_message)
            )
        return subs

    @contextlib.contextmanager
    def _keeping_alive(self, reply: Reply) -> Iterator[None]:
        """While the body runs, the caller gets `alive` frames (from one loop for every call)."""
        self._alive[id(reply)] = reply
        try:
            yield
        finally:
            self._alive.pop(id(reply), None)

    async def _keep_alive_loop(self) -> None:
        while True:
            await anyio.sleep(KEEPALIVE)
            for reply in list(self._alive.values()):
                await reply.alive()

    async def _guarded(self, handler: Any, msg: Any) -> None:
        try:
            await handler(msg)
        except Exception:  # a bad request never takes the daemon down
            log.exception("gateway request on %s failed", msg.subject)

    # -- calls -------------------------------------------------------------------------------
    async def _local(self, cap_id: Any, pid: Any) -> tuple[HostEntry, Capability | None, Link]:
        """The host (and capability) a call names, on this machine, or a stale error."""
        if cap_id is not None:
            entry, cap, link = await invoking.resolve(self.directory, cap_id)
            if entry.machine is not None:
                raise validation_error(f"{echo(cap_id)} names a host of another machine; call that machine.")
            if entry.key == self.directory.own:  # the daemon's own catalog serves its own clients only
                raise validation_error(f"{echo(cap_id)} is not offered to other machines.")
            return entry, cap, link
        key = HostKey(self.machine_id, pid) if isinstance(pid, int) else None
        entry = self.directory.entries.get(key) if key else None
        link = self.directory.links.get(key) if key else None
        if entry is None or link is None or entry.machine is not None:
            raise stale(
                "host_disconnected",
                f"The host (pid {echo(pid)}) is no longer running on {self.settings.machine_name}; "
                "nothing ran. Search again.",
            )
        return entry, None, link

    def _check_policy(
        self, method: str, entry: HostEntry, cap: Capability | None, params: dict[str, Any]
    ) -> None:
        if method != "tools/call":
            return
        if cap is None:
            cap = entry.find("tool", str(params.get("name")))
        name = cap.target if cap else str(params.get("name"))
        where = f"The machine {self.settings.machine_name!r}"
        if not self.settings.remote_python and name == PYTHON_TOOL:
            raise DaemonError(
                "remote_refused",
                f"{where} does not run {PYTHON_TOOL} for other machines (its remotePython setting is off). "
                "Use its other tools, or run the code on that machine itself.",
                {"machineId": self.machine_id},
            )
        read_only = cap is not None and declared(cap.kind, cap.raw)[0]
        if self.settings.read_only and not read_only:
            raise DaemonError(
                "remote_refused",
                f"{where} takes only reads from other machines (its readOnly setting is on), and {name} is "
                "not marked read-only. Read resources instead, or ask the machine's owner.",
                {"machineId": self.machine_id},
            )

    def _decide(
        self, method: str, entry: HostEntry, cap: Capability | None, params: dict[str, Any], caller: str
    ) -> Any:
        """The policy here for a call from another machine: raises `policy_denied`, or answers None
        (allowed) or the confirmation to await once the call is acknowledged."""
        if self.gate is None:
            return None
        if cap is None:
            kind, target = (
                ("tool", params.get("name")) if method == "tools/call" else ("resource", params.get("uri"))
            )
            cap = entry.find(kind, str(target)) or Capability(
                "",
                kind,
                str(target),
                str(target),
                None,
                "",
                {},
                entry.key,  # type: ignore[arg-type]
            )
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        subject = self.gate.subject(entry, cap, caller="remote", caller_machine=caller, arguments=arguments)
        decision = self.gate.decide(subject, arguments)
        if decision.verdict != "confirm" or (arguments.get("dryRun") is True and invoking.previews(cap)):
            return None  # a preview changes nothing
        gate = self.gate
        previewable = invoking.can_preview(gate, cap, arguments)

        async def confirm(
            link: Link, progress: Progress | None = None
        ) -> tuple[dict[str, Any] | None, str | None]:
            """Ask this machine's person (with the host's preview where it can): (None, their approval's
            id) to go on with `params` (then exactly the previewed change; the approval hears what the
            call did), or (the answer to give instead, None). A caller that asked for progress hears
            that the call waits for that answer (it may wait minutes)."""
            if progress is not None:
                await progress(
                    0,
                    None,
                    f"Waiting for the person at {self.settings.machine_name!r} to approve {cap.name}: "
                    "they answer with `cadmcp policy approvals` there, or on its dashboard (no answer within "
                    f"{gate.policy.confirm_timeout:g} s counts as no).",
                )
            preview = None
            if previewable:
                tried = await link.raw_request("tools/call", invoking.preview_request(cap, arguments))
                preview = preview_summary(tried)
                if preview is None:
                    return tried, None  # the script failed in its preview; nothing changed
            approved = await gate.ask(
                None, "approval queue", decision, subject, arguments, preview, cap.raw, reports=True
            )
            if preview is not None and preview.get("previewed"):  # exactly the previewed change
                params["_meta"] = {**(params.get("_meta") or {}), PREVIEW: {"apply": preview["previewed"]}}
            return None, approved

        return confirm

    async def _call(self, msg: Any) -> None:
        reply = Reply(self.connection, msg.reply)
        started = time.perf_counter()
        try:
            body = frames.decode(msg.data)
        except ValueError:
            await reply.final({"error": validation_error("The request was not a JSON object.").body()})
            return
        caller = body.get("from") if isinstance(body.get("from"), dict) else {}
        method, params = body.get("method"), body.get("params")
        call_id = _text(body.get("callId")) or f"anon-{id(msg)}"
        fields: dict[str, Any] = {
            "target": None,
            "via": "gateway",
            "callerMachine": _text(caller.get("machineId")),
            "caller": _text(caller.get("name"), 120),
        }
        acked = False
        scope: anyio.CancelScope | None = None
        answer: dict[str, Any]
        try:
            if method not in ("tools/call", "resources/read") or not isinstance(params, dict):
                raise validation_error("A remote call is tools/call or resources/read with params.")
            fields["target"] = params.get("name") if method == "tools/call" else params.get("uri")
            entry, cap, link = await self._local(body.get("id"), body.get("pid"))
            fields["host"] = f"{entry.host_app}/{entry.version}/{entry.key.pid}"
            self._check_policy(method, entry, cap, params)
            decision = self._decide(method, entry, cap, params, fields["callerMachine"])
            if len(self._running) >= MAX_CALLS:
                raise DaemonError(
                    "machine_busy",
                    f"The machine {self.settings.machine_name!r} is running {MAX_CALLS} calls for other "
                    "machines already; nothing ran. Retry in a moment.",
                    {"machineId": self.machine_id},
                )
            if call_id in self._running:
                raise validation_error("Another call with this callId is running here; use a new callId.")
            scope = self._running[call_id] = anyio.CancelScope()  # counted from here, before any wait
            timeout = body.get("timeout")
            if (
                not isinstance(timeout, int | float)
                or isinstance(timeout, bool)
                or not 0 < timeout <= MAX_TIMEOUT
            ):
                timeout = None
            await reply.ack()
            acked = True
            answer = {
                "failed": {
                    "message": "The call was cancelled by its caller.",
                    "executionStarted": True,
                    "cancelled": True,
                }
            }
            progress = reply.progress if body.get("progress") else None  # only when the caller asked
            with scope, self._keeping_alive(reply), anyio.fail_after(timeout or MAX_TIMEOUT):
                instead, approved = await decision(link, progress) if decision is not None else (None, None)
                if instead is not None:
                    answer = {"ok": instead}
                else:
                    sending = link.raw_request(method, params, on_progress=progress)
                    if approved is not None and self.gate is not None:  # the person hears what it did
                        answer = {"ok": await invoking.told(self.gate.queue, approved, sending)}
                    else:
                        answer = {"ok": await sending}
                    if method == "tools/call":  # this machine's person sees the change too
                        self._keep_checkpoint(entry, fields, answer["ok"])
        except TimeoutError:
            answer = {
                "failed": {
                    "message": f"The call did not finish within {timeout or MAX_TIMEOUT:g} s and was "
                    "cancelled. It may have partly run; check the model state before retrying.",
                    "executionStarted": True,
                    "timedOut": True,
                }
            }
        except DaemonError as err:
            answer = {"error": err.body()}
        except MCPError as exc:
            answer = {
                "mcpError": {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
            }
        except Exception as exc:
            answer = {
                "failed": {
                    "message": f"The host failed during the call ({type(exc).__name__}). The call may have "
                    "partly run; check the model state before retrying.",
                    "executionStarted": acked,
                }
            }
        finally:
            if scope is not None:
                self._running.pop(call_id, None)
        await reply.final(answer)
        args = params.get("arguments") if method == "tools/call" and isinstance(params, dict) else None
        self._log(method if isinstance(method, str) else "tools/call", answer, fields, started, args)

    def _keep_checkpoint(self, entry: HostEntry, fields: dict[str, Any], result: dict[str, Any]) -> None:
        """Keep a change another machine's agent made here as this machine's checkpoint too: its person
        lists and reverts it here (`cadmcp policy checkpoints`), as the caller's machine can."""
        if self.gate is None:
            return
        who = f"{fields['caller'] or 'a client'} on {fields['callerMachine'] or 'another machine'}"
        with contextlib.suppress(Exception):  # keeping it never breaks the call
            self.gate.checkpoints.record(entry, str(fields["target"]), result, who)

    def _log(
        self, method: str, answer: dict[str, Any], fields: dict[str, Any], started: float, args: Any
    ) -> None:
        if "ok" in answer:
            outcome, result = outcome_of(answer["ok"]), compact_result(answer["ok"])
        elif "error" in answer:
            outcome, result = "error", {"error": answer["error"].get("type")}
        else:
            failed = answer.get("failed") or {}
            outcome = (
                "timeout" if failed.get("timedOut") else "cancelled" if failed.get("cancelled") else "error"
            )
            result = clip(answer)
        line = {
            **fields,
            "durationMs": round((time.perf_counter() - started) * 1000),
            "args": clip(mask_secrets(args)) if isinstance(args, dict) else None,
            "result": result,
        }
        with contextlib.suppress(Exception):  # logging never breaks a call
            shared_log().write(format_line(method, outcome, line))

    async def _cancel(self, msg: Any) -> None:
        with contextlib.suppress(ValueError):
            scope = self._running.get(_text(frames.decode(msg.data).get("callId")))
            if scope is not None:
                scope.cancel()

    # -- catalogs, launches, pings -----------------------------------------------------------
    async def _catalog(self, msg: Any) -> None:
        reply = Reply(self.connection, msg.reply)
        try:
            pid = frames.decode(msg.data).get("pid")
            entry, _, _ = await self._local(None, pid)
        except DaemonError as err:
            await reply.final({"error": err.body()})
            return
        except ValueError:
            await reply.final({"error": validation_error("The request was not a JSON object.").body()})
            return
        by_kind: dict[str, list[dict[str, Any]]] = {"tool": [], "resource": [], "resource_template": []}
        for cap in entry.capabilities:
            by_kind[cap.kind].append(cap.raw)
        await reply.final(
            {
                "ok": {
                    "hostApp": entry.host_app,
                    "version": entry.version,
                    "protocolVersion": entry.protocol_version,
                    "serverName": entry.server_name,
                    "digest": entry.digest(),
                    "tools": by_kind["tool"],
                    "resources": by_kind["resource"],
                    "templates": by_kind["resource_template"],
                    "domain": entry.domain,
                }
            }
        )

    async def _tool_request(
        self,
        msg: Any,
        target: str,
        check: Callable[[Any], Any],
        work: Callable[[Any], Awaitable[dict[str, Any]]],
    ) -> None:
        """A daemon tool asked from another machine: `check` takes its arguments apart (a DaemonError
        says what is wrong), then it is acknowledged and `work` answers, kept alive while it runs.
        Each leaves a call-log line naming the caller's machine."""
        reply = Reply(self.connection, msg.reply)
        started = time.perf_counter()
        fields: dict[str, Any] = {"target": target, "via": "gateway"}
        args: Any = None
        try:
            body = frames.decode(msg.data)
            caller = body.get("from") if isinstance(body.get("from"), dict) else {}
            fields.update(callerMachine=_text(caller.get("machineId")), caller=_text(caller.get("name"), 120))
            args = body.get("args")
            checked = check(args)
            await reply.ack()
            with self._keeping_alive(reply):
                answer: dict[str, Any] = {"ok": await work(checked)}
        except DaemonError as err:
            answer = {"error": err.body()}
        except ValueError:
            answer = {"error": validation_error("The request was not a JSON object.").body()}
        await reply.final(answer)
        self._log("tools/call", answer, fields, started, args)

    async def _launch(self, msg: Any) -> None:
        def check(args: Any) -> dict[str, Any]:
            if not isinstance(args, dict):
                raise validation_error("launch_host arguments must be an object.")
            if self.settings.read_only:
                raise DaemonError(
                    "remote_refused",
                    f"The machine {self.settings.machine_name!r} takes only reads from other machines "
                    "(its readOnly setting is on); it does not start hosts for them.",
                    {"machineId": self.machine_id},
                )
            if self.launcher is None:
                raise DaemonError("remote_refused", "This machine's daemon does not launch hosts.")
            return args

        async def work(args: dict[str, Any]) -> dict[str, Any]:
            assert self.launcher is not None  # checked
            return await self.launcher.launch(args)

        await self._tool_request(msg, "launch_host", check, work)

    async def _file_info(self, msg: Any) -> None:
        """`read_file_info` asked from another machine: a file of this one, read here (a read, so a
        read-only machine answers it too)."""

        def check(args: Any) -> tuple[str, str]:
            path = args.get("filePath") if isinstance(args, dict) else None
            detail = args.get("detail", "summary") if isinstance(args, dict) else None
            if not isinstance(path, str) or len(path) > MAX_PATH_CHARS or detail not in filemeta.DETAILS:
                raise validation_error(
                    f"read_file_info takes filePath (a path of at most {MAX_PATH_CHARS} characters) and "
                    f"detail (one of {list(filemeta.DETAILS)})."
                )
            return path, detail

        await self._tool_request(msg, "read_file_info", check, lambda asked: filemeta.read_here(*asked))

    async def _policy(self, msg: Any) -> None:
        """`cadmcp policy show` asked from another machine: this machine's decisions for its hosts'
        capabilities, as for a remote caller."""
        reply = Reply(self.connection, msg.reply)
        try:
            pattern = frames.decode(msg.data).get("pattern", "*")
        except ValueError:
            pattern = None
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN:
            await reply.final(
                {"error": validation_error(f"pattern: a glob of at most {MAX_PATTERN} characters").body()}
            )
            return
        if self.gate is None:
            await reply.final({"ok": {"lines": ["no policy: every call from another machine runs"]}})
            return
        entries = sorted(self.directory.local_entries().values(), key=lambda e: (e.host_app, e.key.pid))
        lines = show(self.gate.policy, pattern, entries, caller="remote")
        await reply.final({"ok": {"machine": self.settings.machine_name, "lines": lines}})

    async def _ping(self, msg: Any) -> None:
        await Reply(self.connection, msg.reply).final({"ok": {"machineId": self.machine_id}})
