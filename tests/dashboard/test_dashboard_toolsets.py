"""The host panel's toolset report: a read that fails is asked for again, not given up on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.daemon.dashboard import service
from cadmcp.daemon.dashboard.service import Dashboard
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.policy import Policy
from cadmcp.daemon.policy.gate import Gate
from cadmcp.daemon.recentimages import RecentImages
from cadmcp.daemon.search import SearchIndex

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


class FailingFirstReads:
    """A real host link whose first toolset reads fail (the host busy when it appeared)."""

    def __init__(self, link: Any, failures: int) -> None:
        self.link, self.failures, self.reads = link, failures, 0
        self.lost_reason = None

    async def raw_request(
        self, method: str, params: Any, timeout: Any = None, on_progress: Any = None
    ) -> Any:
        if method == "resources/read" and params.get("uri") == service.TOOLSETS_URI:
            self.reads += 1
            if self.reads <= self.failures:
                raise TimeoutError("the host did not answer in time")
        return await self.link.raw_request(method, params, timeout, on_progress)


@dataclass
class Parts:
    directory: HostDirectory
    gate: Gate = field(default_factory=lambda: Gate(Policy()))
    gateway: Any = None
    images: RecentImages = field(default_factory=RecentImages)


async def test_a_toolset_report_that_failed_to_read_is_read_at_a_later_look(
    hosts: Any, runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "TOOLSETS_RETRY_START", 0.05)
    toolset = tmp_path / "mytools"
    toolset.mkdir()
    (toolset / "broken.py").write_text("def half_written(:\n")
    hosts.start("demo", "--toolset", str(toolset))
    directory = HostDirectory(SearchIndex(), directory=runtime_dir)
    async with anyio.create_task_group() as tg:
        await tg.start(directory.run)
        with anyio.fail_after(30):
            while not directory.local_entries():
                await anyio.sleep(0.05)
        key = next(iter(directory.local_entries()))
        flaky = FailingFirstReads(directory.links[key], failures=2)
        directory.links[key] = flaky  # type: ignore[assignment]
        dashboard = Dashboard(Parts(directory))
        await dashboard.tick()
        assert flaky.reads == 1 and dashboard.host_panel()["hosts"][0]["toolsets"] is None
        with anyio.fail_after(10):
            while dashboard.host_panel()["hosts"][0]["toolsets"] is None:
                await anyio.sleep(0.05)
                await dashboard.tick()
        assert flaky.reads == 3  # asked again until it answered, then no more
        report = dashboard.host_panel()["hosts"][0]["toolsets"]
        assert report["errors"] and "mytools" in report["errors"][0]["path"], report
        for _ in range(3):
            await dashboard.tick()
        assert flaky.reads == 3
        tg.cancel_scope.cancel()
