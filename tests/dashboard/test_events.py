"""Live updates never wait for a page: a page that does not read loses events, then is told to reload."""

from __future__ import annotations

import anyio
import pytest

from cadmcp.daemon.dashboard.events import QUEUE_EVENTS, EventHub

pytestmark = pytest.mark.anyio


async def test_a_page_that_does_not_read_costs_publish_nothing_and_is_told_to_resync() -> None:
    hub = EventHub()
    stream = hub.subscribe()
    assert (await anext(stream)).startswith("retry:")  # the hello
    with anyio.fail_after(1):  # publishing is a non-blocking put: 10x the queue goes by at once
        for n in range(QUEUE_EVENTS * 10):
            hub.publish("call", {"n": n})
    assert hub.dropped == QUEUE_EVENTS * 9
    kept = [await anext(stream) for _ in range(QUEUE_EVENTS)]
    assert '"n":0' in kept[0] and f'"n":{QUEUE_EVENTS - 1}' in kept[-1]
    hub.publish("call", {"n": "after"})
    assert (await anext(stream)).startswith("event: resync")
    assert '"n":"after"' in await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]
    assert hub.watching == 0
    hub.publish("call", {"n": "nobody"})  # no page: nothing is even formatted


async def test_pages_past_the_bound_are_refused_rather_than_served_slowly() -> None:
    from cadmcp.daemon.dashboard.events import MAX_SUBSCRIBERS, TooManyPages

    hub = EventHub()
    streams = [hub.subscribe() for _ in range(MAX_SUBSCRIBERS)]
    with pytest.raises(TooManyPages):
        hub.subscribe()
    for stream in streams:
        await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
    assert hub.watching == 0
