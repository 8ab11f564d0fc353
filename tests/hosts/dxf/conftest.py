"""Fixtures for the DXF host: a copy of the sample drawing and an in-memory MCP client."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from dxf_helpers import SAMPLE
from mcp import Client

from cadmcp.hosts.dxf import create_server


@pytest.fixture
def sample_path(tmp_path: Path) -> Path:
    target = tmp_path / "floorplan.dxf"
    shutil.copy(SAMPLE, target)
    return target


@pytest.fixture
async def client(sample_path: Path) -> AsyncIterator[Client]:
    server = create_server([str(sample_path)], exec_timeout=5)
    async with Client(server.server) as connected:
        yield connected
