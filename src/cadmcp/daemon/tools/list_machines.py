"""`list_machines`: this workstation and, through a gateway, the other machines of the space."""

from __future__ import annotations

from typing import Any

from cadmcp.daemon import machines
from cadmcp.daemon.tools.base import DaemonTool, ToolCall

NAME = "list_machines"

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "List machines",
    "description": (
        "Lists the workstations this daemon reaches: this one and, through a NATS gateway, the other "
        "machines of your space (machineId, name, online/lastSeen, connectedHosts, hostApps, latencyMs). "
        "Their hosts are searched and invoked like local ones; pass machineId to search_dynamic, "
        "list_host_instances or launch_host to pick one. `gateway` says whether it is connected."
    ),
    "inputSchema": {"type": "object", "properties": {}},
}


async def _list(call: ToolCall) -> dict[str, Any]:
    return machines.list_machines(call.services.directory, call.services.gateway)


TOOL = DaemonTool(DEFINITION, _list, waits_for_catalog=True)
