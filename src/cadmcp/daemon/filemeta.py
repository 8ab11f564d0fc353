"""`read_file_info` on this machine: glue over `cadmcp.fileinfo`, for the daemon's tool and for
the same call from another machine through the gateway.

`cadmcp.fileinfo` is imported only when a file is read, so the daemon starts fast. Reader
errors become typed `DaemonError`s (`{type: <code>, message}` results), never tracebacks.
"""

from __future__ import annotations

from typing import Any

import anyio

from cadmcp.daemon.errors import DaemonError, validation_error

DETAILS = ("summary", "full")
_ARGUMENT_ERRORS = frozenset({"missing_path", "invalid_path", "invalid_detail"})
"""File-info codes that mean the arguments were wrong: answered as `validation_error`."""


async def read_here(path: str, detail: str = "summary") -> dict[str, Any]:
    """The metadata of the file at `path` on this machine (the reader runs on a worker thread: big
    files take a while)."""
    if not path.strip():
        raise validation_error(
            "filePath is required: pass the absolute path of a .rvt, .rfa, .dwg, .dxf, .ifc or .FCStd file."
        )
    from cadmcp.fileinfo import FileInfoError
    from cadmcp.fileinfo import read_file_info as read

    try:
        return await anyio.to_thread.run_sync(read, path, detail)
    except FileInfoError as err:
        kind = "validation_error" if err.code in _ARGUMENT_ERRORS else err.code
        raise DaemonError(kind, err.message) from None
