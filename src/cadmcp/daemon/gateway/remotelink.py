"""`RemoteLink`: a host on another machine, reached through that machine's daemon.

It implements the `Link` invoking depends on (`raw_request`, progress included), so `invoke_dynamic`,
batch reads, sealed `input_required` rounds and stale rules work for remote hosts
unchanged. What it adds is telling the ways a remote call can fail apart: the machine is
gone (stale, nothing ran), it never accepted the call (nothing ran), it went silent or
timed out after starting (the call may have run). A call cancelled here is cancelled there.
"""

from __future__ import annotations

import secrets
from typing import Any

import anyio
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate

from cadmcp.daemon.catalog import Capability, HostEntry
from cadmcp.daemon.errors import DaemonError, invocation_failed, stale, validation_error
from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.responder import KEEPALIVE
from cadmcp.daemon.gateway.rpc import Deadlines, Inbox, RequestFailed
from cadmcp.daemon.gateway.settings import Settings
from cadmcp.daemon.gateway.subjects import Subjects
from cadmcp.daemon.hostlink import Link

ACCEPT_SECONDS = 5.0
"""How long a machine has to accept a call before the caller says nothing ran."""


class RemoteLink(Link):
    """Calls one host of another machine (`entry`, as mirrored here) through the gateway."""

    lost_reason: str | None = None
    """Never set: a lost machine answers typed errors of its own (see `_failure`)."""

    def __init__(self, inbox: Inbox, settings: Settings, subjects: Subjects, entry: HostEntry) -> None:
        self.inbox = inbox
        self.settings = settings
        self.subjects = subjects
        self.entry = entry

    @property
    def machine(self) -> str:
        return self.entry.machine or self.entry.key.machine_id

    def _capability(self, method: str, params: dict[str, Any]) -> Capability | None:
        """The capability a request is for, so the other machine can check it is unchanged."""
        if method == "tools/call":
            return self.entry.find("tool", str(params.get("name")))
        uri = str(params.get("uri"))
        exact = self.entry.find("resource", uri)
        if exact is not None:
            return exact
        matches = []
        for cap in self.entry.capabilities:
            if cap.kind == "resource_template":
                try:
                    if UriTemplate.parse(cap.target).match(uri) is not None:
                        matches.append(cap)
                except Exception:  # a template the SDK cannot parse matches nothing
                    continue
        return matches[0] if len(matches) == 1 else None

    async def raw_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None = None,
        on_progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """The remote host's result; `on_progress` receives the progress the host reports there."""
        params = dict(params or {})
        cap = self._capability(method, params)
        call_id = secrets.token_hex(8)
        limit = timeout if timeout else self.settings.call_timeout
        body = {
            "v": frames.VERSION,
            "callId": call_id,
            "from": {"machineId": self.settings.machine_id, "name": self.settings.machine_name},
            "pid": self.entry.key.pid,
            "id": cap.id if cap is not None else None,
            "method": method,
            "params": params,
            "timeout": limit,
            "progress": on_progress is not None,
        }
        deadlines = Deadlines(accept=ACCEPT_SECONDS, silence=3 * KEEPALIVE, total=limit + ACCEPT_SECONDS)
        subject = self.subjects.machine(self.entry.key.machine_id, "call")
        try:
            answer = await self.inbox.request(subject, body, deadlines, on_progress)
        except RequestFailed as failed:
            if failed.started:
                await self._cancel(call_id)
            raise self._failure(failed, limit) from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                await self._cancel(call_id)
            raise
        return self._unwrap(answer)

    async def _cancel(self, call_id: str) -> None:
        try:
            client = self.inbox.connection.client
            await client.publish(
                self.subjects.machine(self.entry.key.machine_id, "cancel"), frames.encode({"callId": call_id})
            )
        except Exception:  # the gateway is down: the call ends on its own deadline there
            return

    def _failure(self, failed: RequestFailed, limit: float) -> DaemonError:
        where = f"the machine {self.machine!r}"
        if failed.reason == "no_responders":
            return stale(
                "host_disconnected",
                f"Nothing answers for {where} on the gateway any more; nothing ran. Search again, or call "
                "list_machines to see whether it is online.",
                machineId=self.entry.key.machine_id,
            )
        if failed.reason == "too_large":
            if failed.started:
                return DaemonError("result_too_large", f"{failed.message} Ask {where} for less.")
            return validation_error(f"{failed.message} ({where})")
        if failed.reason == "timeout":
            message = (
                f"The call to {where} did not finish within {limit:g} s and was cancelled there"
                if failed.started
                else f"The call to {where} was not accepted within the time allowed"
            )
        elif failed.reason == "disconnected":
            message = f"The gateway is not connected, so {where} cannot be reached ({failed.message})"
        else:
            message = f"Calling {where}: {failed.message.rstrip('.')}"
        tail = (
            " The call may have partly run; check the model state before retrying."
            if failed.started
            else " Nothing ran; retry when list_machines shows the machine online."
        )
        return invocation_failed(
            message.rstrip(".") + "." + tail,
            execution_started=failed.started,
            machineId=self.entry.key.machine_id,
        )

    def _where(self, message: str) -> str:
        """`message` saying which machine it comes from (paths in it are that machine's)."""
        if repr(self.machine) in message:  # it says already ("The machine 'bravo' takes only reads")
            return message
        return f"On the machine {self.machine!r}: {message}"

    def _unwrap(self, answer: dict[str, Any]) -> dict[str, Any]:
        if isinstance(answer.get("ok"), dict):
            result = answer["ok"]
            content = result.get("content")
            if (
                result.get("isError")
                and isinstance(content, list)
                and content
                and isinstance(content[0], dict)
            ):
                first = content[0]  # a host tool's own error: its paths and processes are that machine's
                if first.get("type") == "text" and isinstance(first.get("text"), str):
                    result = {
                        **result,
                        "content": [{**first, "text": self._where(first["text"])}, *content[1:]],
                    }
            return result
        if isinstance(answer.get("error"), dict):
            error = dict(answer["error"])
            kind = str(error.pop("type", "remote_error"))
            message = self._where(str(error.pop("message", "")))
            return_error = DaemonError(kind, message, {**error, "machineId": self.entry.key.machine_id})
            raise return_error
        if isinstance(answer.get("mcpError"), dict):
            err = answer["mcpError"]
            code = err.get("code") if isinstance(err.get("code"), int) else -32603
            raise MCPError(code, self._where(str(err.get("message") or "")), err.get("data"))
        failed = answer.get("failed") if isinstance(answer.get("failed"), dict) else {}
        raise invocation_failed(
            self._where(str(failed.get("message") or "the call failed.")),
            execution_started=bool(failed.get("executionStarted", True)),
            machineId=self.entry.key.machine_id,
        )
