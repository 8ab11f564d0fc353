"""A server that is down says when it is tried again; the daemon counts that down when it lists
it, rather than repeating the delay it had when the server went down."""

from __future__ import annotations

from pathlib import Path

from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.search import SearchIndex
from cadmcp.daemon.searching import search

TIME_HOST = HostKey("m1", 4242)


def _entry(
    state: dict[str, object], key: HostKey = TIME_HOST, app: str = "Time", tools: list | None = None
) -> HostEntry:
    return HostEntry.build(
        key,
        host_app=app,
        version="1",
        endpoint=f"/run/{app.lower()}.sock",
        protocol_version="2025-11-25",
        server_name=app,
        tools=tools or [],
        resources=[],
        templates=[],
        state=state,
    )


def test_retry_in_seconds_counts_down_from_the_time_the_proxy_sent() -> None:
    entry = _entry({"phase": "down", "error": "exited", "retryInSeconds": 30.0, "retryAt": 1000.0})

    assert entry.shown_state(now=970.0) == {"phase": "down", "error": "exited", "retryInSeconds": 30.0}
    assert entry.shown_state(now=988.5)["retryInSeconds"] == 11.5
    assert entry.shown_state(now=1003.0)["retryInSeconds"] == 0.0  # due: being tried now
    assert entry.state["retryAt"] == 1000.0  # the entry itself is not changed


def test_a_state_without_a_retry_time_is_shown_as_sent() -> None:
    state = {"phase": "ready", "documents": []}
    assert _entry(state).shown_state(now=5.0) == state


def _directory(tmp_path: Path) -> HostDirectory:
    """A DXF host serving a tool, and a foreign server (mcp-server-sqlite's shape) that is down."""
    directory = HostDirectory(SearchIndex(), directory=tmp_path)
    tool = {"name": "list_documents", "description": "List the open drawings.", "inputSchema": {}}
    dxf = _entry({"phase": "ready"}, HostKey(directory.machine_id, 101), "DXF", [tool])
    stopped = {"phase": "down", "error": "the server's process ended (exit code 1)", "retryAt": 1e12}
    down = _entry(stopped, HostKey(directory.machine_id, 102), "Sqlite")
    for entry, tools in ((dxf, [tool]), (down, [])):
        directory.install(entry, object(), tools, [], [])  # type: ignore[arg-type]
    return directory


def test_a_search_naming_a_host_that_is_down_says_so(tmp_path: Path) -> None:
    """With mcp-server-sqlite down, "list the tables in the sqlite database" listed the daemon's own
    checkpoints and nothing said why the server's tools were missing."""
    directory = _directory(tmp_path)
    (said,) = search(directory, {"query": "list the tables in the sqlite database"})["notServing"]
    assert said.startswith("The Sqlite host (") and "is down" in said and "process ended" in said, said
    assert "tried again in" in said and "list_host_instances" in said
    assert "notServing" not in search(directory, {"query": "list the open drawings"})  # DXF answers it


def test_a_search_no_host_answers_names_the_hosts_that_are_down(tmp_path: Path) -> None:
    answer = search(_directory(tmp_path), {"query": "run an SQL query on the orders"})
    assert answer["items"] == [] and "Sqlite" in answer["notServing"][0], answer
