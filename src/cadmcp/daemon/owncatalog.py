"""The daemon's own capabilities, served as a catalog of their own beside the hosts'.

What an agent may do about its own calls (list the checkpoints of the changes it made, revert one
call or everything since one) is not a seventh daemon tool: the agent's surface stays the six
tools. These capabilities are listed in the search index like a host's catalog, found with
`search_dynamic`, run with `invoke_dynamic` by id, and decided by the person's policy like any
other call. The link behind them is in-process (`OwnLink`), so nothing goes over a socket.
"""

from __future__ import annotations

import os
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from cadmcp import __version__
from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.checkpoints import Checkpoints
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.wire.jsonwire import dumps
from cadmcp.wire.meta import KEYWORDS

APP = "cadmcp"
"""The `hostApp` the daemon's own capabilities are listed under."""
CALL_ID = {"type": "string", "pattern": r"^[0-9]{1,10}-[0-9]{1,10}$", "maxLength": 24}
REVERT_TOOL = "revert_calls"
"""Undoes agents' calls on their hosts: the policy of each host it goes back on applies to it too."""
DEFAULT_LISTED = 50
MAX_LISTED = 200

TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_checkpoints",
        "title": "List the agent's checkpoints",
        "description": (
            "Lists the changes agents made on this machine (through this daemon or another client's), "
            "most recent last: each call's callId, the host and document it changed, its undo step, the "
            "client that made it, the daemon it went through and whether it was reverted. Use a callId "
            "with revert_calls to undo that call or everything since it. Calls on hosts no longer "
            "running cannot be reverted: they are only counted unless gone=true."
        ),
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
        "_meta": {KEYWORDS: ["checkpoints", "what did I change", "my calls", "call history", "changes"]},
        "inputSchema": {
            "type": "object",
            "properties": {
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LISTED,
                    "description": f"The most recent checkpoints to list (default {DEFAULT_LISTED}).",
                },
                "gone": {
                    "type": "boolean",
                    "description": "Also list the calls on hosts no longer running (default: only counted).",
                },
            },
            "additionalProperties": False,
        },
    },
    {
        "name": REVERT_TOOL,
        "title": "Revert the agent's calls",
        "description": (
            "Undoes one call (callId from list_checkpoints) or, with since=true, it and every later "
            "one made through the same daemon, on every host they changed (DXF, IFC, ...). It first "
            "checks each document is where those calls left it: where someone else changed it since, "
            "nothing is undone anywhere and the answer says which host and what changed."
        ),
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False},
        "_meta": {KEYWORDS: ["revert", "undo my changes", "roll back the agent", "undo everything since"]},
        "inputSchema": {
            "type": "object",
            "properties": {
                "callId": {**CALL_ID, "description": "A callId from list_checkpoints."},
                "since": {
                    "type": "boolean",
                    "description": "Also undo every later call (default: only this one).",
                },
            },
            "required": ["callId"],
            "additionalProperties": False,
        },
    },
]


class OwnLink:
    """The in-process `Link` to the daemon's own capabilities."""

    lost_reason: str | None = None

    def __init__(self, directory: HostDirectory, checkpoints: Checkpoints) -> None:
        self.directory = directory
        self.checkpoints = checkpoints

    async def describe(self, target: str, arguments: dict[str, Any]) -> list[str]:
        """Which agent calls a `revert_calls` would undo, for the person asked to allow it."""
        if target != REVERT_TOOL:
            return []
        return await self.checkpoints.planned(str(arguments.get("callId")), bool(arguments.get("since")))

    async def raw_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None = None,
        on_progress: Any = None,
    ) -> dict[str, Any]:
        """A `tools/call` of one of `TOOLS` (the arguments were checked against its schema)."""
        params = params or {}
        if method != "tools/call":
            raise MCPError(types.METHOD_NOT_FOUND, f"The daemon's own catalog has no {method}.")
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "list_checkpoints":
            return _result(await self._listing(arguments), error=False)
        if name == REVERT_TOOL:
            answer = await self.checkpoints.revert(
                self.directory, str(arguments.get("callId")), bool(arguments.get("since"))
            )
            return _result(answer, error=not answer.get("ok"))
        raise MCPError(types.INVALID_PARAMS, f"The daemon's own catalog has no tool {name!r}.")

    async def _listing(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The most recent checkpoints; those of hosts no longer running (which a revert cannot
        reach) only counted, unless `gone` asks for them."""
        listed = await self.checkpoints.listing(self.directory)
        answer: dict[str, Any] = {}
        if not arguments.get("gone"):
            gone = sum(1 for c in listed if not c["hostRunning"])
            listed = [c for c in listed if c["hostRunning"]]
            if gone:
                answer["notRunning"] = gone
                answer["note"] = (
                    f"{gone} more call(s) changed hosts that are no longer running; they cannot be "
                    "reverted from here (gone=true lists them)."
                )
        listed = listed[-int(arguments.get("limit") or DEFAULT_LISTED) :]
        return {"count": len(listed), "checkpoints": listed, **answer}


def _result(answer: dict[str, Any], *, error: bool) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": dumps(answer)}],
        "structuredContent": answer,
        "isError": error,
        "resultType": "complete",
    }


def install(directory: HostDirectory, checkpoints: Checkpoints) -> HostEntry:
    """List the daemon's own capabilities in `directory` (and its search index) like a host's."""
    key = HostKey(directory.machine_id, os.getpid())
    entry = HostEntry.build(
        key,
        host_app=APP,
        version=__version__,
        endpoint="",
        protocol_version="",
        server_name="cadmcp-daemon",
        tools=TOOLS,
        resources=[],
        templates=[],
    )
    directory.own = key
    directory.install(entry, OwnLink(directory, checkpoints), TOOLS, [], [])
    return entry
