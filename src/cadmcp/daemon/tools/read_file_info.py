"""`read_file_info`: metadata of a CAD/BIM file on disk, with no host running.

Glue over `cadmcp.fileinfo`, imported only when the tool is called so the daemon starts
fast. Reader errors become `{type: <code>, message}` results, never tracebacks.
"""

from __future__ import annotations

from typing import Any

import anyio

from cadmcp.daemon.errors import DaemonError, validation_error
from cadmcp.daemon.limits import MAX_PATH_CHARS
from cadmcp.daemon.tools.base import DaemonTool, ToolCall

NAME = "read_file_info"
_ARGUMENT_ERRORS = frozenset({"missing_path", "invalid_path", "invalid_detail"})
"""File-info codes that mean the arguments were wrong: answered as `validation_error`."""

DEFINITION: dict[str, Any] = {
    "name": NAME,
    "title": "Read CAD/BIM file metadata",
    "description": (
        "Reads metadata of a CAD/BIM file on disk with no application running: Revit "
        "(.rvt/.rfa/.rte/.rft: version, worksharing, central model, links), DWG (release), DXF "
        "(version, units, layers, blocks, counts), IFC (schema, header, counts), FreeCAD "
        "(version, objects). "
        "Use it to decide which host and version to launch. detail='full' lists everything found."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "filePath": {"type": "string", "description": "Absolute path of the file."},
            "detail": {
                "type": "string",
                "enum": ["summary", "full"],
                "default": "summary",
                "description": "'summary' stays small; 'full' lists every layer, class and stream.",
            },
        },
        "required": ["filePath"],
    },
}


async def _read(call: ToolCall) -> dict[str, Any]:
    """The answer (the reader runs on a worker thread: big files take a while)."""
    path = call.args["filePath"]
    if not path.strip():
        raise validation_error(
            "filePath is required: pass the absolute path of a .rvt, .rfa, .dwg, .dxf, .ifc or .FCStd file."
        )
    from cadmcp.fileinfo import FileInfoError
    from cadmcp.fileinfo import read_file_info as read

    try:
        return await anyio.to_thread.run_sync(read, path, call.args.get("detail", "summary"))
    except FileInfoError as err:
        kind = "validation_error" if err.code in _ARGUMENT_ERRORS else err.code
        raise DaemonError(kind, err.message) from None


TOOL = DaemonTool(DEFINITION, _read, text_limits={"filePath": MAX_PATH_CHARS})
