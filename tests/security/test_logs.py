"""Call logs as another local user sees them: not at all. And what they hold is masked."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from cadmcp.userdirs import LOG_DIR_ENV
from tests.core.helpers import call
from tests.security.conftest import Stranger

pytestmark = pytest.mark.anyio


async def test_a_stranger_cannot_read_the_call_logs_and_secrets_in_them_are_masked(
    daemon_client: Any, stranger: Stranger, shared_tmp: Path
) -> None:
    state = shared_tmp / "state"
    secrets = {"pwd": "hunter2pwd", "session_id": "s3ss10n-abcdef", "note": "Bearer eyQ29tcGxleFRva2Vu"}
    old = os.umask(0o022)
    try:
        async with daemon_client(env={LOG_DIR_ENV: "", "XDG_STATE_HOME": str(state)}) as session:
            await call(session, "read_file_info", {"filePath": "/nowhere/plan.dxf", **secrets})
    finally:
        os.umask(old)
    folder = state / "cadmcp" / "log"
    files = list(folder.glob("log_*.log"))
    assert files, "the daemon wrote no call log"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    text = "".join(f.read_text() for f in files)
    assert "read_file_info" in text
    assert not [s for s in secrets.values() if s in text] and '"pwd":"***"' in text

    probe = stranger.run(["sh", "-c", f"ls {folder}; cat {files[0]}"])
    assert probe.returncode != 0 and "Permission denied" in probe.stderr
    assert "read_file_info" not in probe.stdout
