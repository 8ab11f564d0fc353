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
        "Starts a host application and waits until its tools are searchable and its documents open. "
        "Pass filePath alone to open it with the host for its extension (.dxf, "
        ".ifc, .fcstd...), or hostApp (DXF, IFC, FreeCAD, Demo or a configured host) with an optional "
        "version and filePath. Answers pid, hostApp, version, hostInstanceId, phase and documents; a "
        "document that did not open is an error "
        "(document_not_opened) saying why and the fix. A file already open answers that host "
        "(alreadyOpen), a configured MCP server already running answers it (alreadyRunning), unless "
        "newInstance. The host stops with the daemon unless detach (keeping unsaved changes as copies). "
        "restartHostInstanceId restarts a stuck host with its saved documents, listing unsaved changes lost."
    ),
    "execution": {"taskSupport": "optional"},
    "inputSchema": {
        "type": "object",
        "properties": {
            "hostApp": {"type": "string", "description": "Which host to start (DXF, IFC, Demo, ...)."},
            "version": {"type": "string", "description": "Host version, when several are configured."},
            "filePath": {
                "type": "string",
                "description": "A drawing or model to open (absolute, or relative to where cadmcp started).",
            },
            "timeoutSeconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 3600,
                "description": "Seconds to wait for the host (default 120).",
            },
            "detach": {
                "type": "boolean",
                "default": False,
                "description": "Keep the host running after the daemon exits.",
            },
            "newInstance": {
                "type": "boolean",
                "default": False,
                "description": "Start a second copy even if filePath is open in a host or the server runs.",
            },
            "restartHostInstanceId": {
                "type": "string",
                "description": "Restart this stuck host (from host_busy or list_host_instances).",
            },
            "machineId": {
                "type": "string",
                "description": "A machine from list_machines: filePath is a path there.",
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
