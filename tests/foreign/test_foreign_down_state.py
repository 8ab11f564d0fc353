"""A server that is down says when it is tried again; the daemon counts that down when it lists
it, rather than repeating the delay it had when the server went down."""

from __future__ import annotations

from cadmcp.daemon.catalog import HostEntry, HostKey


def _entry(state: dict[str, object]) -> HostEntry:
    return HostEntry.build(
        HostKey("m1", 4242),
        host_app="Time",
        version="1",
        endpoint="/run/x.sock",
        protocol_version="2025-11-25",
        server_name="Time",
        tools=[],
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
