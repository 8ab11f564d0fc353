"""`read_file_info`: metadata of a CAD/BIM file on disk, with no host running.

Glue over `cadmcp.fileinfo`, imported only when the tool is called so the daemon starts
fast. Reader errors become `{type: <code>, message}` results, never tracebacks.
"""

from __future__ import annotations

from typing import Any

import anyio

from cadmcp.daemon.errors import DaemonError, validation_error
from cadmcp.wire.echo import echo

_ARGS = ("filePath", "detail")
_ARGUMENT_ERRORS = frozenset({"missing_path", "invalid_path", "invalid_detail"})
"""File-info codes that mean the arguments were wrong: answered as `validation_error`."""


async def read_file_info(args: dict[str, Any]) -> dict[str, Any]:
    """The `read_file_info` answer (the reader runs on a worker thread: big files take a while)."""
    unknown = sorted(set(args) - set(_ARGS))
    if unknown:
        named = ", ".join(echo(k, 40) for k in unknown[:5])
        raise validation_error(f"Unknown argument(s) {named}; read_file_info takes {list(_ARGS)}.")
    path = args.get("filePath")
    if path is None or not isinstance(path, str) or not path.strip():
        raise validation_error(
            "filePath is required: pass the absolute path of a .rvt, .rfa, .dwg, .dxf or .ifc file."
        )
    detail = args.get("detail", "summary")
    if detail not in ("summary", "full"):
        raise validation_error(
            f"detail must be 'summary' or 'full' (got {echo(detail)}); "
            "'full' lists every layer, class and stream."
        )
    from cadmcp.fileinfo import FileInfoError
    from cadmcp.fileinfo import read_file_info as read

    try:
        return await anyio.to_thread.run_sync(read, path, detail)
    except FileInfoError as err:
        kind = "validation_error" if err.code in _ARGUMENT_ERRORS else err.code
        raise DaemonError(kind, err.message) from None
