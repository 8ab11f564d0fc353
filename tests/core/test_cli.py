"""The `cadmcp` command line: every command's help works, and a wrong argument is said plainly."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cadmcp", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    "command",
    [["toolset", "--help"], ["policy", "-h"], ["eval", "search", "--help"], ["-v", "toolset", "--help"]],
)
def test_a_command_with_its_own_parser_answers_help(command: list[str]) -> None:
    run = _run(*command)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage:"), run.stdout


def test_wrong_arguments_are_said_plainly() -> None:
    port = _run("daemon", "--http", "--port", "99999")
    assert port.returncode == 2 and "99999 is not a port" in port.stderr and "Traceback" not in port.stderr
    host = _run("host")
    assert host.returncode == 2 and "required: kind\n" in host.stderr  # files are optional
    ev = _run("eval")
    assert ev.returncode == 2 and "required: what\n" in ev.stderr
