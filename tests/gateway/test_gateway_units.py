"""The gateway's parts on their own: settings, frames, reply collection, the registration lock,
machine-scoped search."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from cadmcp.daemon.catalog import HostKey, short_machine_id
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.registration import RegistrationLock
from cadmcp.daemon.gateway.rpc import Deadlines, Pending, RequestFailed
from cadmcp.daemon.gateway.settings import load
from cadmcp.daemon.gateway.subjects import Subjects
from cadmcp.daemon.search import SearchIndex, capability_docs

# -- settings ---------------------------------------------------------------------------------


def _config(tmp_path: Path, section: dict[str, Any]) -> Path:
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"gateway": section}))
    return path


def test_the_command_line_beats_the_environment_which_beats_the_config_file(tmp_path: Path) -> None:
    path = _config(tmp_path, {"url": "nats://file:4222", "space": "file", "machineName": "from-file"})
    env = {"CADMCP_GATEWAY": "nats://env:4222", "CADMCP_GATEWAY_SPACE": "env"}
    settings = load({"gateway": "nats://cli:4222"}, env, path)
    assert settings.url == "nats://cli:4222"
    assert settings.space == "env"
    assert settings.machine_name == "from-file"
    assert settings.configured
    assert not load({}, {}, tmp_path / "missing.json").configured


def test_secrets_never_show_in_urls_or_messages(tmp_path: Path) -> None:
    env = {"CADMCP_GATEWAY": "nats://alice:s3cret-pw@gw.example:4222,tls://tok-123@gw2.example:4443"}
    settings = load({"token": "tok-abc"}, env, tmp_path / "none.json")
    assert settings.display_url == "nats://gw.example:4222,tls://gw2.example:4443"
    assert "s3cret-pw" not in repr(settings) and "tok-abc" not in repr(settings)
    message = settings.redact("failed: nats://alice:s3cret-pw@gw.example with tok-abc and tok-123")
    assert "s3cret-pw" not in message and "tok-abc" not in message and "tok-123" not in message


@pytest.mark.parametrize(
    ("cli", "env", "section", "problem"),
    [
        ({"gateway": "http://x:80"}, {}, {}, "not a server URL"),
        ({"gateway": "nats://x:4222", "space": "a.b"}, {}, {}, "space"),
        ({"gateway": "nats://x:4222", "machine_id": "has space"}, {}, {}, "machine id"),
        ({}, {"CADMCP_GATEWAY_READ_ONLY": "perhaps"}, {}, "true or false"),
        ({}, {}, {"heartbeatSeconds": "often"}, "number of seconds"),
        ({"heartbeat": 5.0, "ttl": 4.0}, {}, {}, "longer than heartbeatSeconds"),
        ({"creds": "/nonexistent/alice.creds"}, {}, {}, "does not exist"),
        ({}, {}, {"passwd": "x"}, "unknown key"),
        ({}, {}, {"usr": "alice"}, "did you mean 'user' for 'usr'?"),
    ],
)
def test_bad_settings_are_config_errors_that_say_what_to_fix(
    tmp_path: Path, cli: dict[str, Any], env: dict[str, str], section: dict[str, Any], problem: str
) -> None:
    with pytest.raises(DaemonError) as caught:
        load(cli, env, _config(tmp_path, section))
    assert caught.value.type == "config_error"
    assert problem in caught.value.message


def test_booleans_and_defaults(tmp_path: Path) -> None:
    settings = load({"remote_python": False}, {"CADMCP_GATEWAY_READ_ONLY": "yes"}, tmp_path / "none.json")
    assert settings.read_only is True and settings.remote_python is False
    assert settings.offline_after == 15.0  # three heartbeats
    assert settings.space  # the user's name by default


# -- ids, subjects --------------------------------------------------------------------------


def test_configured_machine_ids_do_not_collide_in_host_instance_ids() -> None:
    system = "3d1219c7c4c5404aaa1f6d2a48adfda4"
    assert short_machine_id(system) == "3d1219c7"
    assert HostKey("render-1", 10).instance_id != HostKey("render-2", 10).instance_id
    assert len(HostKey("render-1", 10).instance_id.split("-")[0]) == 8


def test_every_subject_of_a_space_is_under_its_one_prefix() -> None:
    subjects = Subjects("alice")
    names = [
        subjects.discover,
        subjects.all_presence,
        subjects.presence("m1"),
        subjects.machine("m1", "call"),
        subjects.inbox("m1", "n1"),
    ]
    assert all(name.startswith("cadmcp.alice.") for name in names)
    assert subjects.everything == "cadmcp.alice.>"


# -- frames and replies -------------------------------------------------------------------


@dataclass
class Msg:
    data: bytes = b""
    headers: dict[str, str] | None = None


def test_a_large_answer_is_chunked_under_the_max_payload_and_joins_back() -> None:
    body = {"ok": {"content": [{"type": "image", "data": "A" * 50_000}]}}
    parts = frames.chunks(frames.encode(body), 16 * 1024)
    assert len(parts) == 5 and all(len(p) <= 16 * 1024 - frames.HEADROOM for _, p in parts)
    assert [frames.chunk_position(h) for h, _ in parts] == [(i, 5) for i in range(1, 6)]
    assert frames.decode(b"".join(p for _, p in parts)) == body


async def _answer(messages: list[Msg], deadlines: Deadlines, on_progress: Any = None) -> dict[str, Any]:
    pending = Pending(deadlines, on_progress)
    for message in messages:
        await pending.feed(message)
    return await pending.answer()


QUICK = Deadlines(accept=0.2, silence=0.2, total=1.0)


@pytest.mark.anyio
async def test_reply_frames_tell_what_happened() -> None:
    ack = Msg(headers={frames.FRAME: frames.ACK})
    body = frames.encode({"ok": {"n": 1, "text": "x" * 3000}})
    parts = frames.chunks(body, frames.HEADROOM + 1024)
    assert len(parts) == 3
    answered = await _answer([ack, *[Msg(p, h) for h, p in reversed(parts)]], QUICK)  # any order
    assert answered["ok"]["n"] == 1

    cases = [
        ([], "not_started", False),
        ([ack], "silent", True),
        ([Msg(headers={"Status": "503"})], "no_responders", False),
        ([ack, Msg(b"not json")], "garbled", True),
    ]
    for messages, reason, started in cases:
        with pytest.raises(RequestFailed) as failed:
            await _answer(messages, QUICK)
        assert (failed.value.reason, failed.value.started) == (reason, started)


@pytest.mark.anyio
async def test_progress_frames_reach_the_caller_in_order_and_keep_the_call_alive() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    reports = [
        Msg(
            frames.encode({"progress": p / 4, "total": 1.0, "message": f"step {p}"}),
            {frames.FRAME: frames.PROGRESS},
        )
        for p in range(4)
    ]
    garbled = Msg(b"{", {frames.FRAME: frames.PROGRESS})
    final = Msg(frames.encode({"ok": {"done": True}}), {frames.FRAME: frames.FINAL})
    answered = await _answer([*reports, garbled, final], QUICK, on_progress)
    assert answered == {"ok": {"done": True}}
    assert seen == [(p / 4, 1.0, f"step {p}") for p in range(4)]


@pytest.mark.anyio
async def test_a_call_that_keeps_running_past_its_total_time_times_out_as_started() -> None:
    pending = Pending(Deadlines(accept=0.2, silence=0.2, total=0.5))

    async def keep_alive() -> None:
        await pending.feed(Msg(headers={frames.FRAME: frames.ACK}))
        for _ in range(20):
            await anyio.sleep(0.05)
            await pending.feed(Msg(headers={frames.FRAME: frames.ALIVE}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(keep_alive)
        with pytest.raises(RequestFailed) as failed:
            await pending.answer()
        tg.cancel_scope.cancel()
    assert (failed.value.reason, failed.value.started) == ("timeout", True)


# -- registration lock ----------------------------------------------------------------------


def test_one_daemon_per_machine_holds_the_registration(tmp_path: Path) -> None:
    settings = load({"gateway": "nats://x:4222", "machine_id": "m1"}, {}, tmp_path / "none.json")
    first, second = RegistrationLock(tmp_path, settings), RegistrationLock(tmp_path, settings)
    assert first.acquire()
    assert not second.acquire()
    assert second.holder() is not None
    first.release()
    assert second.acquire()
    second.release()


# -- machine-scoped search ------------------------------------------------------------------


def test_search_can_be_limited_to_the_hosts_of_one_machine() -> None:
    index = SearchIndex()
    tools = [{"name": "count_walls", "description": "Count the walls of the model."}]
    for host in ("aaaa-1", "aaaa-2", "bbbb-1"):
        index.replace_host(
            host, capability_docs(host_app="IFC", host_version="1", host_key=host, tools=tools)
        )
    everywhere = index.search("count walls")
    assert sorted(d.host_key for d in everywhere.hits) == ["aaaa-1", "aaaa-2", "bbbb-1"]
    on_a = index.search("count walls", host_keys=["aaaa-1", "aaaa-2"])
    assert sorted(d.host_key for d in on_a.hits) == ["aaaa-1", "aaaa-2"] and on_a.total == 2
    assert [d.host_key for d in index.search(None, host_keys=["bbbb-1"]).hits] == ["bbbb-1"]
    assert index.search("count walls", host_keys=[]).hits == []
    both = index.search("count walls", host_key="aaaa-2", host_keys=["aaaa-1", "aaaa-2"])
    assert [d.host_key for d in both.hits] == ["aaaa-2"]


@pytest.mark.anyio
async def test_restarting_another_machines_host_never_signals_a_local_process(tmp_path: Path) -> None:
    """A remote host's pid means nothing here: the local process that has it must be left alone."""
    import dataclasses
    import subprocess
    import sys

    from cadmcp.daemon.catalog import HostEntry
    from cadmcp.daemon.hosts import HostDirectory
    from cadmcp.daemon.launching import HostLauncher

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        directory = HostDirectory(SearchIndex(), directory=tmp_path)
        key = HostKey("another-machine-id", bystander.pid)
        entry = HostEntry.build(
            key,
            host_app="DXF",
            version="1.4",
            endpoint="gateway:bravo",
            protocol_version="2025-11-25",
            server_name="DXF",
            tools=[],
            resources=[],
            templates=[],
            state={"documents": [{"title": "plan.dxf", "path": "/srv/plan.dxf"}]},
        )
        directory.install(dataclasses.replace(entry, machine="bravo"), object(), [], [], [])  # type: ignore[arg-type]
        directory.remove(key)  # it stopped answering: only remembered as seen lately
        assert key not in directory.local_entries()
        with pytest.raises(DaemonError, match="another machine") as refused:
            await HostLauncher(directory).restart({"restartHostInstanceId": key.instance_id})
        assert refused.value.type == "cannot_restart"
        assert bystander.poll() is None  # not signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_every_setting_the_machines_guide_lists_is_a_flag_the_daemon_takes() -> None:
    """docs/machines.md listed `--call-timeout S`; `cadmcp daemon` answered "unrecognized arguments"."""
    import re

    from cadmcp.cli import _parser

    guide = (Path(__file__).resolve().parents[2] / "docs" / "machines.md").read_text(encoding="utf-8")
    rows = [line for line in guide.splitlines() if line.startswith("| `--")]
    flags = [f for row in rows for f in re.findall(r"`(--[a-z-]+)(?: [A-Z]+)?`", row.split("|")[1])]
    assert "--call-timeout" in flags and len(flags) > 15, flags
    parser = _parser()
    for flag in flags:
        takes_value = parser.parse_known_args(["daemon", flag, "1"])[1] == []
        args = ["daemon", flag, "1"] if takes_value else ["daemon", flag]
        parser.parse_args(args)  # exits (SystemExit) on a flag it does not know


def test_serve_with_a_config_file_it_cannot_read_says_so_not_only_that_a_gateway_is_missing(
    tmp_path: Path,
) -> None:
    """`cadmcp daemon --serve` with a JSON error in the file holding the gateway section answered only
    "--serve needs a gateway (... or the config file)", though the file had one."""
    import os
    import subprocess
    import sys

    broken = tmp_path / "hosts.json"
    broken.write_text('{"gateway": {"url": "nats://127.0.0.1:4222",}}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADMCP_GATEWAY")}
    env["CADMCP_HOSTS_CONFIG"] = str(broken)
    command = [sys.executable, "-m", "cadmcp", "daemon", "--serve"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--serve needs a gateway" in done.stderr, done.stderr
    assert f"the config file {broken} cannot be read" in done.stderr, done.stderr
