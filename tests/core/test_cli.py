"""The `cadmcp` command line: every command's help works, and a wrong argument is said plainly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    stdio = _run("daemon", "--port", "9000")
    assert stdio.returncode == 2 and "--port is for --http" in stdio.stderr
    host = _run("host")
    assert host.returncode == 2 and "required: kind\n" in host.stderr  # files are optional
    ev = _run("eval")
    assert ev.returncode == 2 and "required: what\n" in ev.stderr


def _in_a_terminal(*files: Path, host_args: tuple[str, ...] = ("dxf",)) -> str:
    """What `cadmcp host dxf FILES` (or another host) writes to a terminal until it says how it stops."""
    import os
    import pty
    import select
    import time

    leader, follower = pty.openpty()
    host = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", *host_args, *map(str, files)],
        stderr=follower,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    os.close(follower)
    said = b""
    try:
        deadline = time.monotonic() + 60
        while b"Ctrl-C" not in said and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                try:
                    said += os.read(leader, 4096)
                except OSError:  # the host ended: all it said is read
                    break
    finally:
        host.terminate()
        host.wait(10)
        os.close(leader)
    return said.decode()


def test_a_host_run_in_a_terminal_says_when_it_is_ready(runtime_dir: object) -> None:
    """`cadmcp host dxf FILE` in a terminal says it serves, where, and how it stops (started by a
    daemon, with no terminal, it says nothing)."""
    text = _in_a_terminal(Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf")
    assert "cadmcp host dxf: ready with floorplan.dxf, at " in text and "Ctrl-C stops it" in text, text


def test_a_foreign_server_run_in_a_terminal_says_when_it_is_ready(
    runtime_dir: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cadmcp host NAME` of an MCP server entry said nothing at all while it served."""
    import json

    from cadmcp.applications import CONFIG_ENV

    config = tmp_path / "hosts.json"
    server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    config.write_text(json.dumps({"hosts": {"Time": {"server": server}}}))
    monkeypatch.setenv(CONFIG_ENV, str(config))
    text = _in_a_terminal(host_args=("Time",))
    assert "cadmcp host Time: ready, 2 tools of " in text and "Ctrl-C stops it" in text, text


def test_a_host_run_in_a_terminal_says_which_files_did_not_open_and_why(
    runtime_dir: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the host could not open, or opened with a warning, is said there too: the host
    serves on, and only list_host_instances told it."""
    sample = Path(__file__).resolve().parents[2] / "samples" / "floorplan.dxf"
    lines = sample.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.dxf"
    cut.write_text("".join(lines[: len(lines) // 2 // 2 * 2]))
    from tests.hosts.dxf.dwg_helpers import READER_ENV, require_reader, write_pair

    monkeypatch.setenv(READER_ENV, str(require_reader()))
    dwg, _ = write_pair(tmp_path)
    half = tmp_path / "half.dwg"  # read once the host serves (a converter's work), and refused
    half.write_bytes(dwg.read_bytes()[: dwg.stat().st_size // 2])
    text = _in_a_terminal(half, cut)
    said = f"cadmcp host dxf: {half} was not opened: 'half.dwg' is a DWG drawing (R2000, AC1015) cut short"
    assert said in text, text
    assert "cadmcp host dxf: cut.dxf: 'cut.dxf' looks cut short" in text, text
    assert "ready with cut.dxf" in text and "Ctrl-C stops it" in text, text


def test_output_piped_to_a_reader_that_stopped_ends_without_a_traceback(runtime_dir: object) -> None:
    """`cadmcp policy show | head -1`: the reader is gone before the output is written."""
    import os

    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE
    try:
        run = subprocess.run(
            [sys.executable, "-m", "cadmcp", "policy", "show"],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write)
    assert run.returncode == 141 and b"Traceback" not in run.stderr, run.stderr.decode()
