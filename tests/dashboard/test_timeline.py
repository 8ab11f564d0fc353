"""The timeline reads every process's call log: calls come in the order they happened."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cadmcp.daemon.dashboard.timeline import Timeline


def _log(folder: Path, pid: int, times: list[str], mtime: float) -> None:
    hour = time.strftime("%Y%m%d%H")
    path = folder / f"log_{pid}_{hour}_0.log"
    path.write_text("".join(f"{t} tools/call ok target=call_{pid}_{t[-9:-6]} durationMs=1\n" for t in times))
    os.utime(path, (mtime, mtime))


def test_calls_of_several_logs_read_at_once_are_in_the_order_they_happened(tmp_path: Path) -> None:
    """A daemon's and a host's logs are read one file after the other; their calls interleave."""
    day = time.strftime("%Y-%m-%dT%H:%M")
    now = time.time()
    _log(tmp_path, 100, [f"{day}:01.000+00:00", f"{day}:03.000+00:00"], now - 5)
    _log(tmp_path, 200, [f"{day}:02.000+00:00", f"{day}:04.000+00:00"], now - 1)
    timeline = Timeline(tmp_path)
    calls = timeline.poll()
    assert [(c.pid, c.line["time"][-12:-6]) for c in calls] == [
        (100, "01.000"),
        (200, "02.000"),
        (100, "03.000"),
        (200, "04.000"),
    ]
    assert [c.id for c in calls] == [1, 2, 3, 4] and timeline.find(3) is calls[2]
    newest_first = [item["pid"] for item in timeline.listing(set(), sides="all")]
    assert newest_first == [200, 100, 200, 100]


def test_a_hosts_calls_stay_the_hosts_after_it_exits(tmp_path: Path) -> None:
    """The page told a host's calls from a daemon's by the pids of the hosts running now: once a
    host exited, its calls were shown as `daemon <pid>`."""
    from types import SimpleNamespace

    from cadmcp.daemon.dashboard.service import Dashboard

    endpoints: dict[str, object] = {"a": SimpleNamespace(endpoint=SimpleNamespace(pid=4242))}
    directory = SimpleNamespace(states=endpoints, local_entries=lambda: {})
    dashboard = Dashboard.__new__(Dashboard)  # only its host bookkeeping, without a daemon
    dashboard.directory, dashboard._hosts_seen = directory, set()
    assert dashboard._host_pids() == {4242}
    endpoints.clear()  # the host exited
    assert dashboard._host_pids() == {4242}


def test_a_call_from_another_machine_says_who_sent_it(tmp_path: Path) -> None:
    """A call another machine sent through the gateway showed "machine": null, "client": null on
    the serving machine's page, though its log line names the caller."""
    day = time.strftime("%Y-%m-%dT%H:%M")
    path = tmp_path / f"log_300_{time.strftime('%Y%m%d%H')}_0.log"
    path.write_text(
        f"{day}:01.000+00:00 tools/call ok target=save_document via=gateway callerMachine=machine-a "
        'caller="modelling PC A" durationMs=3\n'
    )
    timeline = Timeline(tmp_path)
    timeline.poll()
    (row,) = timeline.listing(set(), sides="all")
    assert row["client"] == "modelling PC A on machine-a" and row["callerMachine"] == "machine-a", row
