"""`read_file_info`: metadata of a CAD/BIM file on disk, with no host running.

On this machine through `cadmcp.daemon.filemeta`, or on another one (`machineId`) through
the gateway.
"""

from __future__ import annotations

from typing import Any

from cadmcp.daemon import machines
from cadmcp.daemon.limits import MAX_ID_CHARS, MAX_PATH_CHARS
from cadmcp.daemon.tools.base import DaemonTool, ToolCall

NAME = "read_file_info"

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "Read CAD/BIM file metadata",
    "description": (
        "Reads a CAD/BIM file's metadata with no application running: Revit "
        "(.rvt/.rfa/.rte/.rft: version, worksharing, central model, links), DWG (release), DXF "
        "(version, units, layers, blocks, counts), IFC (schema, header, counts), FreeCAD "
        "(version, objects). "
        "Use it to decide which host and version to launch. detail='full' lists everything found."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "filePath": {"type": "string", "description": "Absolute path."},
            "detail": {
                "type": "string",
                "enum": ["summary", "full"],
                "default": "summary",
                "description": "'summary' stays small; 'full' lists every layer, class and stream.",
            },
            "machineId": {
                "type": "string",
                "description": "A machine from list_machines: filePath is a path there.",
            },
        },
        "required": ["filePath"],
    },
}


async def _read(call: ToolCall) -> dict[str, Any]:
    s = call.services
    return await machines.read_file_info(s.directory, s.gateway, call.args)


TOOL = DaemonTool(DEFINITION, _read, text_limits={"filePath": MAX_PATH_CHARS, "machineId": MAX_ID_CHARS})
