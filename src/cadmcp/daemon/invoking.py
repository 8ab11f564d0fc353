"""`invoke_dynamic`: resolve an opaque id and pass the call through to its host.

Tool results come back exactly as the host sent them. Resource reads come back as embedded
resources. Multi-round results (`input_required`) keep the protocol's own fields: the
host's `requestState` travels inside the daemon's state, which the SDK's request-state
boundary seals (tamper-proof, expiring, bound to the id and arguments).

The arguments reach the host exactly as the caller sent them. When the person's policy asks
for a confirmation of a change the host can preview, the daemon asks the host for the preview,
and then for exactly the previewed change, in the request's `_meta` (`cadmcp.wire.meta.PREVIEW`);
the previewed revisions wait between rounds inside the daemon's sealed state.

`CallHooks` let the caller follow a call while it runs: the host's progress notifications,
the moment the request reaches the host, and a channel of its own for the host's input
rounds (a task answers them through `tasks/update` instead of the original request).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.uri_template import UriTemplate
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from cadmcp.daemon import replay
from cadmcp.daemon.argcheck import ArgumentChecker
from cadmcp.daemon.catalog import ID_RE, Capability, HostEntry
from cadmcp.daemon.errors import DaemonError, invocation_failed, stale, validation_error
from cadmcp.daemon.hostlink import Describing, Link
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.limits import MAX_READS, MAX_STATE_CHARS, check_responses, check_text
from cadmcp.daemon.owncatalog import REVERT_TOOL
from cadmcp.daemon.policy.approvals import ApprovalQueue
from cadmcp.daemon.policy.gate import (
    APPROVAL_KEY,
    Gate,
    answer_of,
    audited,
    changes_nothing,
    elicitation,
    preview_summary,
    question,
)
from cadmcp.daemon.policy.rules import Decision
from cadmcp.wire.calllog import client_of
from cadmcp.wire.closure import connection_closed
from cadmcp.wire.echo import echo
from cadmcp.wire.jsonwire import dumps
from cadmcp.wire.masking import mask_text
from cadmcp.wire.meta import PREVIEW

READS_BUDGET_BYTES = 4 * 1024 * 1024
"""Total size of the contents one batch of reads may return."""
MAX_LEGACY_ROUNDS = 8
_STATE_VERSION = 2
RELATED_TASK_META = "io.modelcontextprotocol/related-task"

InputAnswerer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Answers one round of a host's `inputRequests` with the matching `inputResponses`."""


@dataclass(frozen=True, slots=True)
class CallHooks:
    """How a caller follows one call while it runs (all optional)."""

    progress: ProgressFnT | None = None
    """Receives the host's progress notifications for the call."""
    on_sent: Callable[[], None] | None = None
    """Told just before the request goes to the host (from then on it may have run)."""
    input_channel: Callable[[HostEntry, Link], InputAnswerer | None] | None = None
    """Asked when the host answers `input_required`: an answerer for the rounds (a task's own
    channel), or None to hand the rounds to the original request as usual."""
    confirm_channel: Callable[[HostEntry, Link], Awaitable[InputAnswerer | None]] | None = None
    """Asked when the person's policy wants a confirmation: the task's channel, the call becoming a
    task first if it may (the question waits in the task, answered with `tasks/update`), or None."""


NO_HOOKS = CallHooks()


class HostLost(DaemonError):
    """The host went away during the call (exited, closed its connection, stopped answering)."""


def _live(directory: HostDirectory, cap_id: str) -> tuple[HostEntry, Capability, Link] | None:
    for entry in directory.entries.values():
        cap = entry.by_id.get(cap_id)
        if cap is not None:
            link = directory.links.get(entry.key)
            return (entry, cap, link) if link is not None else None
    return None


def live(directory: HostDirectory, cap_id: Any) -> tuple[HostEntry, Capability] | None:
    """The connected host and capability an id names right now (no waiting, no errors)."""
    found = _live(directory, cap_id) if isinstance(cap_id, str) else None
    return (found[0], found[1]) if found is not None else None


async def resolve(directory: HostDirectory, cap_id: Any) -> tuple[HostEntry, Capability, Link]:
    """The live capability an id names, or a stale / validation error saying what to do.

    An id nobody has issued yet may belong to a host this daemon has not finished connecting to
    (a daemon started for this very call): it waits, bounded, for discovery to settle first.
    """
    if not isinstance(cap_id, str) or not ID_RE.fullmatch(cap_id):
        raise validation_error(
            f"{echo(cap_id)} is not a capability id. Ids come from search_dynamic (like 'cq3v...').",
            field="id",
        )
    found = _live(directory, cap_id)
    if found is None and directory.ledger.lookup(cap_id) is None and not directory.is_settled():
        await directory.settled()
        found = _live(directory, cap_id)
    if found is not None:
        return found
    issued = directory.ledger.lookup(cap_id)
    if issued is None:
        raise stale(
            "unknown", "This id is not known (the daemon may have restarted). Search again for a fresh id."
        )
    host, kind, target = issued
    entry = directory.entries.get(host)
    if entry is None:
        unreachable = directory.out_of_reach(host)
        if unreachable is not None:
            raise stale(
                "host_disconnected",
                f"The host (pid {host.pid}) that served this capability is on another machine that "
                f"cannot be reached now: {unreachable} Nothing ran. The host may still run there: this id "
                "works again once the machine is back (list_machines shows it); starting another host "
                "will not help.",
            )
        why = directory.not_connected(host)
        if why is not None:
            raise stale(
                "host_disconnected",
                f"The host (pid {host.pid}) that served this capability still runs but is not "
                f"connected ({why}); nothing ran. The daemon reconnects once it answers again: "
                "list_host_instances shows it back, and this id works again then.",
            )
        raise stale(
            "host_disconnected",
            f"The host (pid {host.pid}) that served this capability is gone; nothing ran. "
            "Search again to find a running host, or start one.",
        )
    if entry.find(kind, target) is not None:
        raise stale(
            "changed", f"{target} changed on the host since this id was issued; nothing ran. Search again."
        )
    failed = entry.state.get("toolsetLoadErrors")
    why = (
        f" Its toolset module(s) {', '.join(str(f) for f in failed[:5])} did not load (read "
        "cadmcp://toolsets on that host for the error); what they served is gone until they load again."
        if isinstance(failed, list) and failed
        else ""
    )
    raise stale("removed", f"The host no longer offers {target}; nothing ran.{why} Search again.")


def _expand(cap: Capability, arguments: dict[str, Any]) -> str:
    if cap.kind == "resource":
        return cap.target
    template = UriTemplate.parse(cap.target)
    values = {k: [str(i) for i in v] if isinstance(v, list) else str(v) for k, v in arguments.items()}
    return template.expand(values)


HOST_MESSAGE_CHARS = 2000
"""How much of a host's own error message is passed on."""
PASSED_ON_TYPES = frozenset({"result_too_large", "server_down", "server_timeout", "invalid_result"})
"""Error types a host gives in `data.type` that the daemon answers as they are."""


def _host_failure(exc: BaseException, entry: HostEntry, link: Link, *, started: bool) -> DaemonError:
    if isinstance(exc, MCPError) and not connection_closed(exc):
        data = exc.error.data
        if isinstance(data, dict) and data.get("type") == "host_busy":
            return host_busy(entry, data, exc.error.message)
        if isinstance(data, dict) and data.get("type") in PASSED_ON_TYPES:
            # a typed failure the host says in full (a foreign server down or timed out): its own
            # type and words, not wrapped in "the host answered an error"
            details = {k: v for k, v in data.items() if k != "type"}
            return DaemonError(str(data["type"]), exc.error.message[:HOST_MESSAGE_CHARS], details)
        message = exc.error.message
        if len(message) > HOST_MESSAGE_CHARS:
            message = message[:HOST_MESSAGE_CHARS] + "…"
        return DaemonError(
            "host_error",
            f"The {entry.host_app} host answered an error: {message}",
            {"code": exc.error.code, "data": data},
        )
    reason = link.lost_reason or f"the connection failed ({type(exc).__name__})"
    return host_lost(entry, reason, execution_started=started)


def host_lost(entry: HostEntry, reason: str, *, execution_started: bool) -> HostLost:
    """The `invocation_failed` answer for a call whose host went away."""
    failed = invocation_failed(
        f"The {entry.host_app} host (pid {entry.key.pid}) did not finish the call: {reason}. "
        "The call may have partly run; check the model state before retrying (list_host_instances "
        "shows whether the host is back).",
        execution_started=execution_started,
    )
    return HostLost(failed.type, failed.message, failed.details)


def host_busy(entry: HostEntry, report: dict[str, Any], message: str) -> DaemonError:
    """The host's application thread is wedged: say what runs, since when, and the way out."""
    instance = entry.key.instance_id
    details = {k: v for k, v in report.items() if k != "type"}
    details["hostInstanceId"] = instance
    details["recovery"] = {
        "tool": "launch_host",
        "arguments": {"restartHostInstanceId": instance},
        "effect": "stops this host and starts it again with its documents reopened from their last "
        "saved state; unsaved changes are lost (the answer lists them)",
    }
    return DaemonError(
        "host_busy",
        f"{message} Nothing ran. To get going again without waiting, call launch_host with "
        f"restartHostInstanceId={instance!r}.",
        details,
    )


async def _host_call(
    link: Link, entry: HostEntry, method: str, params: dict[str, Any], hooks: CallHooks = NO_HOOKS
) -> dict[str, Any]:
    if hooks.on_sent is not None:
        hooks.on_sent()
    try:
        return await link.raw_request(method, params, on_progress=hooks.progress)
    except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
        raise _host_failure(exc, entry, link, started=True) from exc


def _seal_state(cap: Capability, host_state: str | None, approval: str | None = None, **more: Any) -> str:
    """The daemon's state for the next round (the SDK boundary then encrypts it): single-use.

    `approval` is `asked` for the daemon's own confirmation round, `granted` once the person said
    yes (the host's later rounds of the same call are not asked again)."""
    expires = time.time() + replay.state_ttl()
    state = {"v": _STATE_VERSION, "id": cap.id, "hs": host_state, "n": replay.new_nonce(), "exp": expires}
    if approval is not None:
        state.update(ap=approval, **more)
    return dumps(state)


def _open_state(state: str | None, cap: Capability) -> dict[str, Any] | None:
    """The daemon's state inside a returned `requestState`, spending it so it cannot be replayed."""
    if state is None:
        return None
    try:
        data = json.loads(state)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("v") != _STATE_VERSION or data.get("id") != cap.id:
        raise validation_error(
            "requestState does not belong to this id; retry with the state the daemon returned."
        )
    nonce, expires = data.get("n"), data.get("exp")
    if not isinstance(nonce, str) or not isinstance(expires, int | float):
        raise validation_error("requestState is incomplete; start the call again without requestState.")
    if not replay.spent_states.spend(nonce, float(expires)):
        raise validation_error(
            "This requestState was already used: each round's state answers once, so a confirmed "
            "action cannot run twice. Start the call again without requestState to get a new round.",
            reason="request_state_used",
        )
    return data


def _arguments(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise validation_error(
            f"{field} must be an object with the capability's arguments (got {echo(value)}).", field=field
        )
    return value  # its size was bounded with the whole call's (`tools.base`)


async def invoke(
    directory: HostDirectory,
    ctx: ServerRequestContext[Any],
    args: dict[str, Any],
    input_responses: dict[str, Any] | None,
    request_state: str | None,
    checker: ArgumentChecker,
    hooks: CallHooks = NO_HOOKS,
    gate: Gate | None = None,
) -> dict[str, Any]:
    """The `invoke_dynamic` answer as a wire dict (the host's own result for tools).

    With a `gate`, the person's policy decides first: a deny or an unconfirmed call never
    reaches the host."""
    if "reads" in args and args.get("reads") is not None:
        if "id" in args or "arguments" in args:
            raise validation_error("Pass either id (with arguments) or reads, not both.")
        return await read_many(directory, args["reads"], checker, hooks, gate)
    if "id" not in args:
        raise validation_error(
            "Pass id (from search_dynamic) with its arguments, or reads=[{id, arguments}, ...]."
        )
    arguments = _arguments(args.get("arguments"), "arguments")
    check_text(request_state, "requestState", MAX_STATE_CHARS)
    if input_responses is not None:
        check_responses(input_responses)
    entry, cap, link = await resolve(directory, args["id"])
    checker.check(cap, arguments)
    state = _open_state(request_state, cap)
    host_state = state.get("hs") if state is not None else None
    approval = state.get("ap") if state is not None else None
    request_meta: dict[str, Any] | None = None
    queued: str | None = None
    if gate is not None:
        policed = await _police(
            gate, directory, ctx, hooks, entry, cap, link, arguments, state, input_responses
        )
        if policed.answer is not None:
            return policed.answer
        approval, queued = policed.approval, policed.queued
        if policed.previewed is not None:  # apply exactly what the person saw previewed
            request_meta = {PREVIEW: {"apply": policed.previewed}}
    if state is not None and state.get("ap") == "asked":
        host_state = input_responses = None  # the host never saw the daemon's round

    async def send() -> dict[str, Any]:
        if gate is not None and directory.entries.get(entry.key) is None:  # gone as the person said yes
            raise _went_away(directory, entry)
        directory.note_invoked(entry.key)
        if cap.kind != "tool":
            uri = _expand(cap, arguments)
            return _embedded(await _host_call(link, entry, "resources/read", {"uri": uri}, hooks))
        params: dict[str, Any] = {"name": cap.target, "arguments": arguments}
        if request_meta is not None:
            params["_meta"] = request_meta
        if input_responses is not None:
            params["inputResponses"] = input_responses
        if host_state is not None:
            params["requestState"] = host_state
        result = directory.take_state(entry.key, await _host_call(link, entry, "tools/call", params, hooks))
        if result.get("resultType") != "input_required":
            return _kept(gate, entry, cap, result, client_of(ctx))
        answer = hooks.input_channel(entry, link) if hooks.input_channel is not None else None
        if answer is None:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                granted = "granted" if approval == "granted" else None
                return {**result, "requestState": _seal_state(cap, result.get("requestState"), granted)}
            answer = client_elicitation(ctx)  # a 2025-11-25 client cannot receive input_required
        result = directory.take_state(
            entry.key, await _drive_rounds(answer, link, entry, params, result, hooks)
        )
        return _kept(gate, entry, cap, result, client_of(ctx))

    if gate is not None and queued is not None:
        return await told(gate.queue, queued, send())
    return await send()


async def told(queue: ApprovalQueue, approval_id: str, sending: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """The call a person confirmed in the approval queue, sent; they hear what it did."""
    try:
        result = await sending
    except DaemonError as exc:
        queue.settle(approval_id, f"failed: {exc.message}")
        raise
    except BaseException:
        queue.settle(approval_id, "stopped: the call was cancelled or the daemon stopped before it ended")
        raise
    if result.get("resultType") == "input_required":
        queue.settle(approval_id, "ran, and asks the agent a question before it ends")
    elif result.get("isError"):
        queue.settle(approval_id, f"failed: {_first_text(result)}")
    else:
        queue.settle(approval_id, f"ran: {_first_text(result)}")
    return result


def _first_text(result: dict[str, Any], limit: int = 300) -> str:
    """The first text of a result, on one line and clipped (what the host said it did)."""
    for item in result.get("content") or result.get("contents") or []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            text = mask_text(" ".join(item["text"][: limit * 4].split()))
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return "(no text)"


def _kept(
    gate: Gate | None, entry: HostEntry, cap: Capability, result: dict[str, Any], client: str
) -> dict[str, Any]:
    """The host's final result, untouched; a change it made (by `client`) is kept as a checkpoint first."""
    if gate is not None:
        gate.checkpoints.record(entry, cap.target, result, client)
    return result


@dataclass(frozen=True, slots=True)
class Policed:
    """What the policy made of a call: its approval (None: allowed, `granted`: confirmed), the
    preview to apply exactly, or an answer to give instead of running it (the daemon's input
    round, or a preview that failed)."""

    approval: str | None = None
    previewed: str | None = None
    answer: dict[str, Any] | None = None
    queued: str | None = None
    """The approval queue's id of a yes, told what the call did (`ApprovalQueue.settle`)."""


def previews(cap: Capability) -> bool:
    """Whether the tool declares `cadmcp.wire.meta.PREVIEW` (runs a change and rolls it back)."""
    meta = cap.raw.get("_meta")
    return cap.kind == "tool" and isinstance(meta, dict) and meta.get(PREVIEW) is True


def can_preview(gate: Gate, cap: Capability, arguments: dict[str, Any]) -> bool:
    """Whether a confirmation of this call first shows the host's preview of it: the tool previews,
    and the caller is not previewing itself (an agent applying its own preview, `previewed`, is
    shown to the person as the daemon previews it: the host applies it only if the two agree)."""
    return gate.policy.preview and not arguments.get("dryRun") and previews(cap)


def preview_request(cap: Capability, arguments: dict[str, Any]) -> dict[str, Any]:
    """The `tools/call` params asking the host for a preview of the call (its arguments but the
    agent's own `previewed`)."""
    shown = {k: v for k, v in arguments.items() if k != "previewed"}
    return {"name": cap.target, "arguments": shown, "_meta": {PREVIEW: {"dryRun": True}}}


async def _police(
    gate: Gate,
    directory: HostDirectory,
    ctx: ServerRequestContext[Any],
    hooks: CallHooks,
    entry: HostEntry,
    cap: Capability,
    link: Link,
    arguments: dict[str, Any],
    state: dict[str, Any] | None,
    input_responses: dict[str, Any] | None,
) -> Policed:
    """Apply the policy before anything reaches the host; a deny or a no raises and nothing runs.

    A confirmation of a change the host can preview shows the person the preview (the host runs
    it in its transaction and rolls back) and, on yes, applies exactly that change."""
    subject = gate.subject(entry, cap, arguments=arguments)
    decision = gate.decide(subject, arguments)
    if entry.key == directory.own and cap.target == REVERT_TOOL:
        decision = await _revert_decision(gate, directory, arguments, decision)
    if decision.verdict != "confirm" or (arguments.get("dryRun") is True and previews(cap)):
        return Policed()  # a preview changes nothing, as the daemon's own previews before asking
    approval = state.get("ap") if state is not None else None
    if approval == "granted":
        return Policed("granted")  # a later round of a call the person already confirmed
    if approval == "asked" and state is not None:
        answer = answer_of((input_responses or {}).get(APPROVAL_KEY))
        asked_at = float(state.get("at") or time.time())
        if time.time() > float(state.get("until") or 0):
            answer = "timeout"
        seen = state.get("pv")
        gate.settle(
            decision,
            subject,
            arguments,
            answer,
            by="client",
            how="input_required",
            asked_at=asked_at,
            preview={"previewed": seen} if isinstance(seen, str) else None,
        )
        return Policed("granted", seen if isinstance(seen, str) else None)
    preview = None
    if can_preview(gate, cap, arguments):
        tried = await _host_call(link, entry, "tools/call", preview_request(cap, arguments), hooks)
        preview = preview_summary(tried)
        if preview is None:  # the script failed in its preview: that answer, and nothing changed
            return Policed(answer=tried)
        if changes_nothing(preview):  # a question answered by the script itself: nothing to confirm
            gate.audit(
                decision, subject, arguments, outcome="allowed", how="its preview changes nothing",
                preview=audited(preview),
            )  # fmt: skip
            return Policed("granted", preview["previewed"])
    details = await link.describe(cap.target, arguments) if isinstance(link, Describing) else None
    asking = (decision, subject, arguments, preview, cap.raw, details)
    channel = await hooks.confirm_channel(entry, link) if hooks.confirm_channel is not None else None
    if channel is not None:
        await _ask_while_there(directory, entry, gate.ask(channel, "task input round", *asking))
    elif not _client_can_elicit(ctx):
        asked = gate.ask(None, "approval queue", *asking, reports=True)  # `told` settles it
        queued = await _ask_while_there(directory, entry, asked)
        return Policed("granted", preview.get("previewed") if preview is not None else None, queued=queued)
    elif ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return Policed(answer=_approval_round(gate, entry, cap, arguments, preview, details))
    else:
        await _ask_while_there(directory, entry, gate.ask(client_elicitation(ctx), "elicitation", *asking))
    return Policed("granted", preview.get("previewed") if preview is not None else None)


async def _revert_decision(
    gate: Gate, directory: HostDirectory, arguments: dict[str, Any], decision: Decision
) -> Decision:
    """A revert changes the documents of the hosts it goes back on: the policy for a change there
    (their `navigate_history` back) applies to it too. A deny there refuses it (nothing is undone);
    a confirmation there is asked for even where the revert itself is allowed."""
    wanted = await gate.checkpoints.hosts(str(arguments.get("callId")), bool(arguments.get("since")))
    for entry in [e for e in directory.entries.values() if e.key.instance_id in wanted]:
        back = entry.find("tool", "navigate_history")
        if back is None:
            continue
        there = gate.decide(gate.subject(entry, back), {"direction": "back"})
        if there.verdict == "confirm" and decision.verdict == "allow":
            decision = there
    return decision


HOST_WATCH_INTERVAL = 0.25
"""Seconds between looks at whether the host of a call waiting for the person is still there."""


async def _ask_while_there(
    directory: HostDirectory, entry: HostEntry, asking: Awaitable[str | None]
) -> str | None:
    """The person's answer (`Gate.ask`), the question withdrawn (from the approval queue, the
    client, the task) as soon as the call's host goes away: no answer could run the call any more."""
    answered: list[BaseException | None] = []
    approval_id: str | None = None

    async def ask(scope: anyio.CancelScope) -> None:
        nonlocal approval_id
        try:
            approval_id = await asking
            answered.append(None)
        except Exception as exc:  # a no: raised as it is, not in a group
            answered.append(exc)
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, tg.cancel_scope)
        while directory.entries.get(entry.key) is not None:
            await anyio.sleep(HOST_WATCH_INTERVAL)
        tg.cancel_scope.cancel()
    if not answered:
        raise _went_away(directory, entry)
    if answered[0] is not None:
        raise answered[0]
    return approval_id


def _went_away(directory: HostDirectory, entry: HostEntry) -> DaemonError:
    why = directory.out_of_reach(entry.key) or directory.not_connected(entry.key) or "it stopped"
    return stale(
        "host_disconnected",
        f"The {entry.host_app} host (pid {entry.key.pid}) went away before the call could be sent "
        f"({why}); nothing ran. Search again to find a running host, or start one.",
    )


def _client_can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities if ctx.session is not None else None
    return capabilities is not None and getattr(capabilities, "elicitation", None) is not None


def _approval_round(
    gate: Gate,
    entry: HostEntry,
    cap: Capability,
    arguments: dict[str, Any],
    preview: dict[str, Any] | None,
    details: list[str] | None = None,
) -> dict[str, Any]:
    """The daemon's own `input_required` round asking the person; its sealed state expires with the
    confirmation time, and only the same id and arguments can answer it."""
    subject = gate.subject(entry, cap, arguments=arguments)
    asked = question(gate.policy.decide(subject), subject, arguments, preview, cap.raw, details)
    asked.pop("pictures", None)  # an elicitation form carries text; the pictures are the queue's
    now = time.time()
    previewed = preview.get("previewed") if preview is not None else None
    state = _seal_state(cap, None, "asked", at=now, until=now + gate.policy.confirm_timeout, pv=previewed)
    return {
        "resultType": "input_required",
        "inputRequests": {APPROVAL_KEY: elicitation(asked)},
        "requestState": state,
    }


async def _drive_rounds(
    answer: InputAnswerer,
    link: Link,
    entry: HostEntry,
    params: dict[str, Any],
    result: dict[str, Any],
    hooks: CallHooks,
) -> dict[str, Any]:
    """Answer the host's input rounds ourselves and retry it until it gives a final result.

    The host's `requestState` is passed straight back to it between rounds and never leaves
    the daemon.
    """
    for _ in range(MAX_LEGACY_ROUNDS):
        responses = await answer(result.get("inputRequests") or {})
        retry = {**params, "inputResponses": responses}
        if result.get("requestState") is not None:
            retry["requestState"] = result["requestState"]
        else:
            retry.pop("requestState", None)
        result = await _host_call(link, entry, "tools/call", retry, hooks)
        if result.get("resultType") != "input_required":
            return result
    raise invocation_failed(
        "The host kept asking for input; gave up after several rounds.", execution_started=True
    )


_ANSWER_TYPES: dict[str, tuple[Any, Any]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}


def client_elicitation(ctx: ServerRequestContext[Any], related_task: str | None = None) -> InputAnswerer:
    """Answer input rounds by asking the client of `ctx` (server-to-client requests on its stream).

    With `related_task`, each request carries the task's `io.modelcontextprotocol/related-task`.
    """
    meta = ServerMessageMetadata(related_request_id=ctx.request_id)

    async def answer(requests: dict[str, Any]) -> dict[str, Any]:
        responses: dict[str, Any] = {}
        for key, request in requests.items():
            kinds = _ANSWER_TYPES.get(request.get("method", ""))
            if kinds is None:
                raise invocation_failed(
                    f"The host asked for unsupported input {request.get('method')!r}.", execution_started=True
                )
            request_type, result_type = kinds
            _require_client_capability(ctx, request.get("method", ""))
            if related_task is not None:
                request = _with_related_task(request, related_task)
            typed = request_type.model_validate(request, by_name=False)
            try:
                answer = await ctx.session.send_request(typed, result_type, metadata=meta)  # type: ignore[arg-type]
            except Exception as exc:
                raise validation_error(
                    f"The host needs input this client could not give ({type(exc).__name__}: {exc}). "
                    "Use a client that supports elicitation."
                ) from exc
            responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        return responses

    return answer


def _with_related_task(request: dict[str, Any], task_id: str) -> dict[str, Any]:
    params = dict(request.get("params") or {})
    params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK_META: {"taskId": task_id}}
    return {**request, "params": params}


_CAPABILITY_FOR = {
    "elicitation/create": ("elicitation", "answer questions (elicitation)"),
    "sampling/createMessage": ("sampling", "run model completions (sampling)"),
    "roots/list": ("roots", "list its roots"),
}


def _require_client_capability(ctx: ServerRequestContext[Any], method: str) -> None:
    """Refuse to send a request the client never said it can answer (it would hang or fail)."""
    name, what = _CAPABILITY_FOR[method]
    capabilities = ctx.session.client_capabilities if ctx.session is not None else None
    if capabilities is None or getattr(capabilities, name, None) is None:
        raise invocation_failed(
            f"The host needs this client to {what}, and the client did not declare the {name!r} "
            "capability, so the call cannot go on. Use a client that supports it (or a 2026-07-28 "
            "client, which receives the host's input_required itself).",
            execution_started=True,
            missingCapability=name,
        )


def _embedded(read_result: dict[str, Any]) -> dict[str, Any]:
    contents = read_result.get("contents") or []
    out: dict[str, Any] = {
        "content": [{"type": "resource", "resource": c} for c in contents],
        "isError": False,
        "resultType": "complete",
    }
    if read_result.get("_meta"):
        out["_meta"] = read_result["_meta"]
    return out


def _size(contents: list[dict[str, Any]]) -> int:
    return sum(len(c.get("text") or "") + len(c.get("blob") or "") for c in contents)


async def _read_target(
    directory: HostDirectory, read: dict[str, Any], n: int, checker: ArgumentChecker, gate: Gate | None
) -> tuple[HostEntry, Capability, Link, str]:
    """One read of a batch resolved and checked: its host, capability, link and URI."""
    entry, cap, link = await resolve(directory, read["id"])
    if cap.kind == "tool":
        raise validation_error(
            f"reads[{n}] names the tool {cap.target}; reads take resources and templates only."
        )
    arguments = _arguments(read.get("arguments"), f"reads[{n}].arguments")
    checker.check(cap, arguments)
    if gate is not None and gate.decide(gate.subject(entry, cap), arguments).verdict == "confirm":
        raise validation_error(
            f"reads[{n}] needs the person's confirmation under the policy; read it on its own "
            "(invoke_dynamic with its id) so they can be asked. It was not read."
        )
    return entry, cap, link, _expand(cap, arguments)


async def read_many(
    directory: HostDirectory,
    reads: Any,
    checker: ArgumentChecker,
    hooks: CallHooks = NO_HOOKS,
    gate: Gate | None = None,
) -> dict[str, Any]:
    """Read up to 16 resources/templates concurrently, within a total size budget."""
    if not isinstance(reads, list) or not reads:
        raise validation_error("reads must be a non-empty list of {id, arguments?} objects.")
    if len(reads) > MAX_READS:
        raise validation_error(
            f"At most {MAX_READS} reads per call (got {len(reads)}); split them into batches."
        )
    targets: list[tuple[HostEntry, Capability, Link, str] | tuple[str, DaemonError]] = []
    for n, read in enumerate(reads):
        if not isinstance(read, dict) or "id" not in read or set(read) - {"id", "arguments"}:
            raise validation_error(f"reads[{n}] must be an object {{id, arguments?}}.")
        try:  # one unknown, stale or ill-argued id fails its own row, not the batch
            targets.append(await _read_target(directory, read, n, checker, gate))
        except DaemonError as err:
            if len(reads) == 1:
                raise  # a batch of one is that read: its error is the answer
            targets.append((str(read["id"])[:200], err))

    outcomes: list[dict[str, Any] | DaemonError | None] = [None] * len(targets)

    async def one(n: int, entry: HostEntry, link: Link, uri: str) -> None:
        try:
            outcomes[n] = await _host_call(link, entry, "resources/read", {"uri": uri}, hooks)
        except DaemonError as err:
            outcomes[n] = err

    async with anyio.create_task_group() as tg:
        for n, target in enumerate(targets):
            if len(target) == 4:
                entry, _cap, link, uri = target
                tg.start_soon(one, n, entry, link, uri)
            else:
                outcomes[n] = target[1]

    content: list[dict[str, Any]] = []
    report: list[dict[str, Any]] = []
    budget = READS_BUDGET_BYTES
    for target, outcome in zip(targets, outcomes, strict=True):
        if len(target) == 4:
            _entry, cap, _link, uri = target
            row: dict[str, Any] = {"id": cap.id, "uri": uri}
        else:
            row = {"id": target[0]}
        if isinstance(outcome, DaemonError):
            row.update(ok=False, error=outcome.body())
        elif outcome is not None:
            contents = outcome.get("contents") or []
            size = _size(contents)
            if size > budget:
                row.update(
                    ok=False,
                    error={
                        "type": "result_too_large",
                        "message": f"{row['uri']} is {size} bytes, over the {budget} bytes left in this "
                        f"batch's {READS_BUDGET_BYTES}-byte budget; read it on its own or narrow it.",
                        "bytes": size,
                    },
                )
            else:
                budget -= size
                content.extend({"type": "resource", "resource": c} for c in contents)
                row.update(ok=True, bytes=size)
        report.append(row)
    summary = {"reads": report}
    if not any(row.get("ok") for row in report):
        errors = [row["error"] for row in report if isinstance(row.get("error"), dict)]
        first = errors[0].get("message", "") if errors else ""
        raise DaemonError(
            "reads_failed",
            f"None of the {len(report)} reads succeeded (each row of `reads` says why); the first: {first}",
            summary,
        )
    text = {"type": "text", "text": dumps(summary)}
    return {
        "content": [text, *content],
        "structuredContent": summary,
        "isError": False,
        "resultType": "complete",
    }
