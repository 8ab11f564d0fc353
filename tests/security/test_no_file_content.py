"""Through a real daemon: read_file_info on a link to a secret answers a description, never the bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.helpers import call

pytestmark = pytest.mark.anyio

SECRET = "sk-cadmcp-test-9f3b27c1d4e8a6b5"


async def _error(session: Any, args: dict[str, Any]) -> dict[str, Any]:
    result = await call(session, "read_file_info", args)
    assert result.is_error, result
    return result.structured_content


async def test_a_link_to_the_daemons_environment_does_not_reveal_it(
    daemon_client: Any, tmp_path: Path
) -> None:
    for suffix in (".dxf", ".ifc", ".dwg", ".rvt"):
        (tmp_path / f"plan{suffix}").symlink_to("/proc/self/environ")
    async with daemon_client(env={"CADMCP_TEST_API_TOKEN": SECRET}) as session:
        for suffix in (".dxf", ".ifc", ".dwg", ".rvt"):
            error = await _error(session, {"filePath": str(tmp_path / f"plan{suffix}"), "detail": "full"})
            assert error["type"] == "corrupt_file"
            assert SECRET[:8] not in error["message"] and "HOME=" not in error["message"]
            assert "/proc" not in error["message"]


async def test_an_unknown_users_home_is_a_validation_error(daemon_client: Any) -> None:
    async with daemon_client() as session:
        error = await _error(session, {"filePath": "~nosuchuser/x.dxf"})
    assert error["type"] == "validation_error"
    assert "nosuchuser" in error["message"] and "absolute path" in error["message"]


async def test_a_huge_path_comes_back_clipped(daemon_client: Any) -> None:
    async with daemon_client() as session:
        error = await _error(session, {"filePath": "/tmp/" + "x" * 200_000 + ".dxf"})
        unknown = await _error(session, {"filePath": "/tmp/a.dxf", "y" * 50_000: 1})
    assert error["type"] == "validation_error" and len(error["message"]) < 400
    assert unknown["type"] == "validation_error" and len(unknown["message"]) < 400
