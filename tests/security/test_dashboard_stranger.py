"""Another local user reaching the dashboard's loopback port is refused, valid link or not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.core.helpers import wait_for_hosts
from tests.dashboard.test_dashboard_stdio import _get
from tests.security.conftest import Stranger

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]

FETCH = """
import sys, urllib.request, urllib.error
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kw):
        return None
try:
    urllib.request.build_opener(NoRedirect).open(sys.argv[1], timeout=20)
    print("status 200")
except urllib.error.HTTPError as err:
    print("status", err.code, err.read().decode(errors="replace"))
"""


async def test_another_user_with_the_link_is_refused_and_the_link_still_works_for_its_owner(
    hosts: Any, daemon_client: Any, runtime_dir: Path, stranger: Stranger
) -> None:
    hosts.start("demo")
    async with daemon_client() as session:
        await wait_for_hosts(session, 1)
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [sys.executable, "-m", "cadmcp", "dashboard", "--no-open"],
                capture_output=True,
                text=True,
                timeout=60,
                env=os.environ,
            )
        )
        link = done.stdout.split("open ", 1)[1].split()[0]
        theirs = await anyio.to_thread.run_sync(stranger.python, FETCH, link)
        assert "status 403" in theirs.stdout and "only the user" in theirs.stdout, theirs
        ours = await anyio.to_thread.run_sync(_get, link)
        assert ours[0] == 303  # the refused stranger did not even spend the code
