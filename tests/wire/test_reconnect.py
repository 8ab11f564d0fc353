"""The reconnection pieces the daemon's host links and the foreign-host proxy share."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from cadmcp.wire.reconnect import PENDING_CHANGES, ListChanges, describe, retry_delay


def test_the_wait_doubles_from_the_first_and_stops_at_the_most() -> None:
    assert [retry_delay(n, 1.0, 30.0) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert retry_delay(0, 2.0, 30.0) == 2.0
    assert retry_delay(10_000, 0.5, 8.0) == 8.0  # no overflow after a long run of failures


def test_an_error_is_described_through_single_exception_groups() -> None:
    error = BaseExceptionGroup("tg", [ExceptionGroup("inner", [ConnectionError("gone")])])
    assert describe(error) == "ConnectionError: gone"
    assert describe(TimeoutError()) == "TimeoutError"
    assert describe(ValueError("x" * 50), limit=10) == "ValueError"


@pytest.mark.anyio
async def test_list_changes_are_received_and_a_burst_is_bounded() -> None:
    changes = ListChanges()
    note = types.ToolListChangedNotification()
    await changes.on_message(
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="info", data="x")
        )
    )
    for _ in range(PENDING_CHANGES * 3):
        await changes.on_message(note)
    got = []
    with anyio.move_on_after(0.2):
        async for method in changes.received:
            got.append(method)
    assert got == ["notifications/tools/list_changed"] * PENDING_CHANGES
