"""Fixtures for the IFC host: a private copy of the sample house and an in-memory MCP client."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from cadmcp.hosts.ifc import create_server

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "house.ifc"


@pytest.fixture
def house(tmp_path: Path) -> Path:
    """A writable copy of samples/house.ifc."""
    target = tmp_path / "house.ifc"
    shutil.copyfile(SAMPLE, target)
    return target


@pytest.fixture
def server(house: Path):  # type: ignore[no-untyped-def]
    return create_server([str(house)], exec_timeout=5)


@pytest.fixture
async def client(server) -> AsyncIterator[Client]:  # type: ignore[no-untyped-def]
    async with Client(server.server) as c:
        yield c
