"""The official conformance suite's tasks-* scenarios (SEP-2663) against the daemon over HTTP.

Most of their checks call tools of the suite's reference server (`slow_compute`, `greet`,
`confirm_delete`...), which a fixed-surface server does not have; the tests above cover those
behaviours through `invoke_dynamic`. The checks that apply to any server must pass: the
extension advertised, removed methods refused, unknown task ids refused, task methods gated on
the extension, routing headers checked, and every message valid against the schema.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_component
from tests.security.test_http_auth import HttpDaemon
from tests.security.test_standard_clients import NODE, PRELOAD, TOOLS, http_daemon  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow

SUITE = TOOLS / "node_modules" / "conformance-tasks" / "dist" / "index.js"
SCENARIOS = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
]
APPLICABLE = {
    "tasks-extension-advertised",
    "sep-2663-tasks-methods-non-declaring",
    "sep-2663-tasks-result-removed-method-not-found",
    "tasks-removed-tasks-list",
    "sep-2663-tasks-get-invalid-task-id-32602",
    "tasks-headers-reject-mismatched-method",
}


@pytest.fixture
def suite() -> None:
    require_component(
        "mcp-tools", None if SUITE.exists() and NODE.exists() else "run bash .ci/deps/mcp-tools.sh"
    )


def test_the_tasks_conformance_scenarios_pass_every_check_that_applies(
    suite: None,
    http_daemon: HttpDaemon,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    env = {
        "PATH": f"{NODE.parent}:{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "CADMCP_BEARER": http_daemon.token,
        "NODE_OPTIONS": f"--require {PRELOAD}",
    }
    statuses: dict[str, str] = {}
    for scenario in SCENARIOS:
        out = tmp_path / scenario
        subprocess.run(
            [
                str(NODE),
                str(SUITE),
                "server",
                "--url",
                http_daemon.url,
                "--scenario",
                scenario,
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            check=False,
        )
        for checks in out.glob("**/checks.json"):
            for check in json.loads(checks.read_text()):
                key = check["id"] if check["id"] != "wire-schema-valid" else f"{scenario}:wire-schema-valid"
                statuses[key] = check["status"]
    assert set(statuses) >= APPLICABLE, sorted(statuses)
    failed = {
        c: s for c, s in statuses.items() if (c in APPLICABLE or "wire-schema-valid" in c) and s != "SUCCESS"
    }
    assert not failed, failed
    passed = sorted(c for c, s in statuses.items() if s == "SUCCESS")
    print(
        f"tasks conformance: {len(passed)} of {len(statuses)} checks pass; the rest need the reference tools"
    )
