"""`search_dynamic`'s answer: query the index, shape items for agents (`tools.search_dynamic`)."""

from __future__ import annotations

import re
from typing import Any

from cadmcp.daemon.argcheck import resolve_ref
from cadmcp.daemon.catalog import KINDS, Capability
from cadmcp.daemon.errors import DaemonError, validation_error
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.launching import builtin_hosts, configured_hosts
from cadmcp.daemon.limits import DEFAULT_LIMIT, MAX_LIMIT
from cadmcp.daemon.screening import flag, visible
from cadmcp.wire.echo import echo

_DESCRIPTION_CHARS = 200


def _short(text: str) -> str:
    text = " ".join(visible(text).split())
    if len(text) <= _DESCRIPTION_CHARS:
        return text
    cut = text[:_DESCRIPTION_CHARS]
    stop = cut.rfind(". ")
    return cut[: stop + 1] if stop > 60 else cut.rstrip() + "…"


def _type_hint(spec: Any, root: Any = None) -> str:
    ref = spec.get("$ref") if isinstance(spec, dict) else None
    if isinstance(ref, str):  # a pydantic model's argument: `order: Order (object)`
        resolved = resolve_ref(spec, root)
        shown = (
            _type_hint({k: v for k, v in resolved.items() if k != "$ref"}) if resolved is not spec else "any"
        )
        return f"{ref.rsplit('/', 1)[-1][:40]} ({shown})"
    if not isinstance(spec, dict):
        return "any"
    if "enum" in spec and isinstance(spec["enum"], list):
        return "|".join(str(v) for v in spec["enum"][:6])
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind if k != "null")
    if kind is None and isinstance(spec.get("anyOf"), list):
        kind = "|".join(
            str(s.get("type")) for s in spec["anyOf"] if isinstance(s, dict) and s.get("type") != "null"
        )
    return str(kind or "any")


def args_hint(cap: Capability) -> str:
    """A one-line reminder of the arguments: `filePath: string, steps?: integer`."""
    if cap.kind == "resource_template":
        names, optional = cap.template_args
        return ", ".join(f"{name}{'?' if name in optional else ''}: string" for name in names)
    if cap.kind != "tool":
        return ""
    schema = cap.raw.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    return ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_hint(spec, schema)}" for name, spec in props.items()
    )


def active_document(entry: Any) -> str | None:
    """The title of the host's active document, from the state it publishes (when it does)."""
    state = getattr(entry, "state", None)
    title = state.get("activeDocument") if isinstance(state, dict) else None
    return title if isinstance(title, str) and title else None


def item(
    cap: Capability,
    routing: dict[str, Any],
    detail: str,
    document: str | None = None,
    why: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": cap.id,
        "kind": cap.kind,
        "target": cap.target,
        **routing,
        "description": _short(cap.description or cap.title or cap.name),
        "requiredArgs": cap.required_args,
        "argsHint": args_hint(cap),
    }
    if document:
        out["document"] = document
    if why:
        out["why"] = why
    if cap.title:
        out["title"] = visible(cap.title)
    if (warning := flag(cap.raw)) is not None:
        out["flag"] = warning
    if detail == "schema" and cap.kind == "tool":
        out["inputSchema"] = cap.raw.get("inputSchema") or {"type": "object"}
    return out


def parse_request(args: dict[str, Any]) -> tuple[str | None, str | None, list[str] | None, int, str]:
    """The request's parts, defaults filled in (the types were checked against the tool's schema)."""
    kinds = args.get("kinds")
    if kinds is not None and not kinds:
        raise validation_error(f"kinds must be a non-empty list drawn from {list(KINDS)}.")
    limit = args.get("limit", DEFAULT_LIMIT)
    return args.get("query"), args.get("hostInstanceId"), kinds, limit, args.get("detail", "summary")


def search(directory: HostDirectory, args: dict[str, Any], machine: str | None = None) -> dict[str, Any]:
    """The `search_dynamic` answer: `{count, hasMore, items[]}` plus guidance when nothing matched.

    `machine`: the machine id `machineId` was resolved to (`machines.resolve_machine`): only its hosts.
    """
    query, host, kinds, limit, detail = parse_request(args)
    by_instance = {entry.key.instance_id: entry for entry in directory.entries.values()}
    if host is not None and host not in by_instance:
        known = ", ".join(sorted(f"{e.key.instance_id} ({e.host_app})" for e in directory.hosts().values()))
        raise validation_error(
            f"No connected host has hostInstanceId {echo(host, 40)}. Connected: {known or 'none'}; "
            "call list_host_instances to see them."
        )
    machine_hosts = (
        None
        if machine is None
        else [key.instance_id for key in directory.entries if key.machine_id == machine]
    )
    result = directory.index.search(
        query,
        host_key=host,
        kinds=kinds,
        limit=limit,
        host_keys=machine_hosts,
        recent=directory.recent_hosts(),  # most recently invoked first: breaks ties between twins
    )
    items = []
    for doc, why in zip(result.hits, result.reasons or [None] * len(result.hits), strict=True):
        entry = by_instance.get(doc.host_key)
        cap = entry.by_id.get(doc.key) if entry else None
        if entry is not None and cap is not None:
            items.append(item(cap, entry.routing(), detail, active_document(entry), why))
    answer: dict[str, Any] = {"count": len(items), "hasMore": result.total > len(items), "items": items}
    if not re.search(r"\w", query or "") and result.total > len(items):  # nothing asked: a listing
        ways = [f"raise limit (up to {MAX_LIMIT})"] if limit < MAX_LIMIT else []
        ways += [] if host is not None else ["list one host at a time with hostInstanceId"]
        ways += ["narrow with kinds or words"]
        said = ", ".join(ways[:-1]) + (" or " if len(ways) > 1 else "") + ways[-1]
        answer["more"] = f"{result.total - len(items)} more are not listed: {said}."
    if query and (pending := directory.index.meaning_pending()):
        answer["ranking"] = (
            f"by words only so far: the meaning model is still reading {pending} capabilities; the same "
            "search ranks by meaning too within seconds, and may then order them otherwise"
        )
    if idle := _not_serving(directory, query, items, host, machine):
        answer["notServing"] = idle
    unreached = (
        directory.remote.unreached(machine)
        if machine is not None and not machine_hosts and directory.remote is not None
        else None
    )
    if unreached is not None:  # not the words: that machine's hosts cannot be listed now
        message = f"No host of that machine is listed now: {unreached}."
        answer["guidance"] = {"message": message, "suggestions": [], "kindsAvailable": result.kinds_available}
    elif not directory.hosts():  # what matched, if anything, is the daemon's own (checkpoints)
        message = (
            "No host is connected, so no drawing or model can answer this. Start one with launch_host "
            f"(hostApp one of {', '.join(_launchable())}, or filePath of a drawing or model to open) "
            "or call list_host_instances to see what was discovered."
        )
        down = directory.remote.down() if directory.remote is not None else None
        if down:
            message += f" Hosts of your other machines are not listed either: {down}"
        answer["guidance"] = {"message": message, "suggestions": [], "kindsAvailable": result.kinds_available}
    elif not items:
        message = (
            "Nothing matched. Try other words, one of the suggested names, or an empty query to list all."
        )
        if machine is not None and not machine_hosts:
            message = "That machine runs no host now: launch_host with its machineId starts one."
        answer["guidance"] = {
            "message": message,
            "suggestions": result.suggestions,
            "kindsAvailable": result.kinds_available,
        }
    return answer


def _not_serving(
    directory: HostDirectory,
    query: str | None,
    items: list[dict[str, Any]],
    host: str | None,
    machine: str | None,
) -> list[str]:
    """Hosts whose MCP server is down or refused (their capabilities are not listed until it is back),
    said when the request names their app or no host's capability matched it."""
    named = set(re.findall(r"\w+", (query or "").casefold()))
    own = directory.own.instance_id if directory.own is not None else None
    only_own = all(i.get("hostInstanceId") == own for i in items)
    said = []
    for entry in directory.hosts().values():
        state = entry.shown_state()
        phase = state.get("phase")
        if phase not in ("down", "refused") or (host is not None and entry.key.instance_id != host):
            continue
        if machine is not None and entry.key.machine_id != machine:
            continue
        if not (only_own or set(re.findall(r"\w+", entry.host_app.casefold())) <= named):
            continue
        retry = state.get("retryInSeconds")
        again = f"; tried again in {retry:g} s" if isinstance(retry, int | float) else ""
        reason = echo(str(state.get("error") or "no reason given"), 200)
        said.append(
            f"The {entry.host_app} host ({entry.key.instance_id}) is {phase}, so its capabilities are not "
            f"listed: {reason}{again}. list_host_instances shows when it is back."
        )
    return said[:5]


def _launchable() -> list[str]:
    """The apps launch_host can start: the configured ones (other MCP servers too), then the built-ins."""
    try:
        configured = configured_hosts()
    except DaemonError:  # an unreadable configuration is launch_host's to report
        configured = []
    names = [app.name for app in configured]
    taken = {n.casefold() for n in names}
    return names + [app.name for app in builtin_hosts() if app.name.casefold() not in taken]
