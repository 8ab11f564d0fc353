"""The runtime directory cannot be redirected, and a stranger cannot block or reach it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.userdirs import LOG_DIR_ENV
from cadmcp.wire import endpoints
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, RuntimeDirError, list_endpoints
from tests.core.helpers import wait_for_hosts
from tests.security.conftest import Stranger

UID = os.getuid()


@pytest.fixture
def defaults(tmp_path: Path, shared_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """No override: the default runtime directory lives in `shared_tmp`, the fallback in a temp home.

    The state folder is short: socket paths are limited to about 100 bytes.
    """
    state = Path(tempfile.mkdtemp(prefix="cms"))
    env = {"TMPDIR": str(shared_tmp), "XDG_STATE_HOME": str(state), LOG_DIR_ENV: str(tmp_path / "logs")}
    monkeypatch.delenv(RUNTIME_DIR_ENV, raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() reads TMPDIR again
    yield env
    shutil.rmtree(state, ignore_errors=True)


def test_a_symlinked_override_is_refused_naming_the_path_and_the_fix(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "chosen-by-someone"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    link = tmp_path / "run"
    link.symlink_to(target)
    monkeypatch.setenv(RUNTIME_DIR_ENV, str(link))
    with pytest.raises(RuntimeDirError) as err:
        endpoints.runtime_dir()
    message = str(err.value)
    assert str(link) in message and "symbolic link" in message and RUNTIME_DIR_ENV in message
    assert stat.S_IMODE(target.stat().st_mode) == 0o755  # the link's target was not touched
    assert list(target.iterdir()) == []


def test_a_file_in_place_of_the_override_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "run"
    path.write_text("not a folder")
    monkeypatch.setenv(RUNTIME_DIR_ENV, str(path))
    with pytest.raises(RuntimeDirError, match="not a directory"):
        endpoints.runtime_dir()


def test_a_symlinked_default_moves_to_a_per_user_folder(defaults: dict[str, str], shared_tmp: Path) -> None:
    planted = shared_tmp / "planted"
    planted.mkdir()
    (shared_tmp / f"cadmcp-{UID}").symlink_to(planted)
    chosen = endpoints.runtime_dir()
    assert chosen == Path(defaults["XDG_STATE_HOME"]) / "cadmcp" / "run"
    assert stat.S_IMODE(os.lstat(chosen).st_mode) == 0o700
    assert endpoints.runtime_dir(create=False) == chosen  # every process agrees on it
    assert list(planted.iterdir()) == []


def test_the_default_is_used_when_it_is_ours(defaults: dict[str, str], shared_tmp: Path) -> None:
    assert endpoints.runtime_dir() == shared_tmp / f"cadmcp-{UID}"


def test_a_foreign_xdg_runtime_dir_is_skipped(
    defaults: dict[str, str], shared_tmp: Path, monkeypatch, tmp_path: Path
) -> None:
    """`su` keeps the first user's XDG_RUNTIME_DIR; we never write into it."""
    foreign = tmp_path / "xdg"
    foreign.mkdir(mode=0o777)
    os.chmod(foreign, 0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(foreign))
    assert endpoints.runtime_dir() == shared_tmp / f"cadmcp-{UID}"
    assert not (foreign / "cadmcp").exists()


# -- as a second local user ---------------------------------------------------------------------
def _spawn_host(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "host", "demo", "--app", "Guarded"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def host_env(defaults: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (RUNTIME_DIR_ENV, "XDG_RUNTIME_DIR")}
    return {**env, **defaults, SEMANTIC_ENV: "off"}


@pytest.fixture
def guarded_host(host_env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A real demo host started with the default runtime directory (after the stranger acted)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> tuple[subprocess.Popen[bytes], Path]:
        proc = _spawn_host(host_env)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for candidate in endpoints._default_candidates():
                if candidate.is_dir() and not candidate.is_symlink():
                    for ep in list_endpoints(candidate):
                        if ep.pid == proc.pid:
                            return proc, ep.path
            if proc.poll() is not None:
                raise AssertionError(f"host exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.05)
        raise AssertionError("host did not create its endpoint")

    yield start  # type: ignore[misc]
    for proc in procs:
        proc.terminate()
        proc.wait(10)


async def _daemon_sees_one_host(env: dict[str, str]) -> dict[str, object]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cadmcp", "daemon", "--scan-interval", "0.3"], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        return await wait_for_hosts(session, 1)


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["symlink", "folder"])
def test_a_stranger_planting_the_default_directory_neither_redirects_nor_blocks_hosts(
    stranger: Stranger, shared_tmp: Path, guarded_host, host_env: dict[str, str], planted: str
) -> None:
    default = shared_tmp / f"cadmcp-{UID}"
    trap = stranger.home / "trap"
    if planted == "symlink":
        made = stranger.run(["sh", "-c", f"mkdir -m 777 {trap} && ln -s {trap} {default}"])
    else:
        made = stranger.run(["mkdir", "-m", "777", str(default)])
        trap = default
    assert made.returncode == 0, made.stderr
    proc, socket_path = guarded_host()
    assert socket_path.parent == Path(host_env["XDG_STATE_HOME"]) / "cadmcp" / "run"
    assert stat.S_IMODE(os.lstat(socket_path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(trap).st_mode) == 0o777  # the stranger's folder was not chmod-ed
    assert os.lstat(trap).st_uid == stranger.uid
    assert list(trap.iterdir()) == []  # and holds no socket of ours
    listing = anyio.run(_daemon_sees_one_host, host_env)
    assert listing["hosts"][0]["pid"] == proc.pid  # the daemon found the host in the same place


@pytest.mark.slow
def test_a_stranger_can_neither_list_the_runtime_directory_nor_connect_to_a_host(
    stranger: Stranger, guarded_host
) -> None:
    _, socket_path = guarded_host()
    probe = stranger.python(
        "import os, socket, sys\n"
        "d, s = sys.argv[1], sys.argv[2]\n"
        "try:\n    os.listdir(d); print('listed')\nexcept PermissionError: print('list-denied')\n"
        "c = socket.socket(socket.AF_UNIX)\n"
        "try:\n    c.connect(s); print('connected')\nexcept PermissionError: print('connect-denied')\n",
        str(socket_path.parent),
        str(socket_path),
    )
    assert probe.stdout.split() == ["list-denied", "connect-denied"], probe.stderr
    assert stat.S_IMODE(os.lstat(socket_path).st_mode) == 0o600


@pytest.mark.slow
def test_a_host_refuses_a_symlinked_override_with_a_message_not_a_traceback(
    tmp_path: Path, host_env: dict[str, str]
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "run"
    link.symlink_to(target)
    proc = _spawn_host({**host_env, RUNTIME_DIR_ENV: str(link)})
    _, err = proc.communicate(timeout=60)
    text = err.decode()
    assert proc.returncode != 0
    assert str(link) in text and RUNTIME_DIR_ENV in text and "Traceback" not in text
    assert list(target.iterdir()) == []
