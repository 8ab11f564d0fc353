"""`launch_host`: start a host (by application or by a file's extension) and wait until it is connected."""

from __future__ import annotations

from typing import Any

from cadmcp.daemon import machines
from cadmcp.daemon.limits import MAX_ID_CHARS, MAX_PATH_CHARS
from cadmcp.daemon.tools.base import DaemonTool, Services, ToolCall
from cadmcp.wire.echo import echo

NAME = "launch_host"

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "Start a CAD/BIM host",
    "description": (
        "Starts a host application and waits until the daemon is connected to it, so its tools are "
        "searchable right away. Pass filePath alone to open a drawing or model with the host for its "
        "extension (.dxf -> DXF, .ifc -> IFC), or hostApp (DXF, IFC, Demo or a configured host) with an "
        "optional version and filePath. Answers pid, hostApp, version, hostInstanceId, "
        "bridgeConnected, phase and documents (it waits while the host opens its documents, and says "
        "so if it is still loading at the timeout); a document that did not open is an error "
        "(document_not_opened) naming why, what the host opens and the fix. A file already open in a "
        "running host answers that host (alreadyOpen) unless newInstance asks for a second copy. "
        "The host stops when the daemon exits unless detach is true. "
        "restartHostInstanceId restarts a host that is stuck (host_busy) or stopped answering: it is "
        "stopped and started again with its saved documents; the answer lists unsaved changes lost."
    ),
    "execution": {"taskSupport": "optional"},
    "inputSchema": {
        "type": "object",
        "properties": {
            "hostApp": {"type": "string", "description": "Which host to start (DXF, IFC, Demo, ...)."},
            "version": {"type": "string", "description": "Host version, when several are configured."},
            "filePath": {"type": "string", "description": "A drawing or model to open (absolute path)."},
            "timeoutSeconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 3600,
                "description": "How long to wait for the host to connect (default 120).",
            },
            "detach": {
                "type": "boolean",
                "default": False,
                "description": "Keep the host running after the daemon exits.",
            },
            "newInstance": {
                "type": "boolean",
                "default": False,
                "description": "Start another host even if filePath is already open in one (a second "
                "copy; by default that host is answered instead).",
            },
            "restartHostInstanceId": {
                "type": "string",
                "description": "Restart this stuck host (from a host_busy error or list_host_instances) "
                "instead of starting a new one.",
            },
            "machineId": {
                "type": "string",
                "description": "Start it on this machine (from list_machines), with that machine's "
                "launch configuration; filePath is a path there.",
            },
        },
    },
}


async def _launch(call: ToolCall) -> dict[str, Any]:
    s = call.services
    progress = s.tasks.hooks(call.ctx).progress
    return await machines.launch_host(s.launcher, s.directory, s.gateway, call.args, progress)


def _task_policy(services: Services, arguments: dict[str, Any], refine: bool) -> tuple[Any, str]:
    what = arguments.get("hostApp") or arguments.get("filePath")
    return "optional", f"launch_host {echo(what, 60)}" if isinstance(what, str) else "launch_host"


TOOL = DaemonTool(
    DEFINITION,
    _launch,
    text_limits={
        "hostApp": MAX_ID_CHARS,
        "version": MAX_ID_CHARS,
        "machineId": MAX_ID_CHARS,
        "restartHostInstanceId": MAX_ID_CHARS,
        "filePath": MAX_PATH_CHARS,
    },
    task_policy=_task_policy,
)
