"""The daemon's call log: the shared writer plus what only the daemon knows.

Every line names the client as it introduced itself (`client=NAME/VERSION`); `invoke_dynamic`
lines name the host and target the id resolved to; `search_dynamic`
lines carry the hit count and compact hits (id/target), not the whole answer. Catalog
refresh lines from the `cadmcp.daemon` logger land in the same file.
"""

from __future__ import annotations

from typing import Any

from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.tools.invoke_dynamic import NAME as INVOKE_DYNAMIC
from cadmcp.daemon.tools.search_dynamic import NAME as SEARCH_DYNAMIC
from cadmcp.wire.calllog import CallLogFile, CallLogger, client_of


def _resolved(directory: HostDirectory, cap_id: Any) -> dict[str, Any] | None:
    if not isinstance(cap_id, str):
        return None
    for entry in directory.entries.values():
        cap = entry.by_id.get(cap_id)
        if cap is not None:
            found = {
                "host": f"{entry.host_app}/{entry.version}/{entry.key.pid}",
                "kind": cap.kind,
                "target": cap.target,
            }
            if entry.machine is not None:  # a host of another machine, reached through the gateway
                found["machine"] = entry.key.machine_id
            return found
    issued = directory.ledger.lookup(cap_id)
    if issued is None:
        return None
    host, kind, target = issued
    return {"host": f"gone/{host.pid}", "kind": kind, "target": target}


def _annotate(directory: HostDirectory) -> Any:
    def annotate(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool != INVOKE_DYNAMIC:
            return {}
        reads = args.get("reads")
        if isinstance(reads, list):
            return {"hostTargets": [_resolved(directory, r.get("id")) for r in reads if isinstance(r, dict)]}
        found = _resolved(directory, args.get("id"))
        if found is None:
            return {"hostTarget": "unresolved"}
        return {"host": found["host"], "hostTarget": found["target"], "machine": found.get("machine")}

    return annotate


def _search_hits(result: dict[str, Any]) -> dict[str, Any]:
    answer = result.get("structuredContent") or {}
    return {
        "count": answer.get("count"),
        "hasMore": answer.get("hasMore"),
        "hits": [{"id": i.get("id"), "target": i.get("target")} for i in answer.get("items") or []],
    }


def _client(ctx: Any) -> dict[str, Any]:
    """The calling client as it introduced itself (`client=claude-code/2.1`)."""
    said = client_of(ctx)
    return {"client": said} if said else {}


def daemon_call_log(directory: HostDirectory, log: CallLogFile | None = None) -> CallLogger:
    """The daemon's call-log middleware; also routes the `cadmcp.daemon` logger into the file."""
    return CallLogger(
        log,
        route="cadmcp.daemon",
        annotate=_annotate(directory),
        summaries={SEARCH_DYNAMIC: _search_hits},
        caller=_client,
    )
