"""The daemon's store of recent answers' pictures: bounded by count and bytes, raster images only."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest

from cadmcp.daemon.recentimages import RecentImages
from cadmcp.wire import calllog

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 100).decode()


def answer(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "a view"}, *blocks]}


def image(data: str = PNG, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "mimeType": mime, "data": data}


def test_an_answers_pictures_come_back_by_their_key_as_bytes() -> None:
    store = RecentImages()
    key = store.keep(answer(image(), image(mime="image/jpeg")))
    assert key is not None and key.startswith(store.prefix)
    assert store.get(key, 0) == ("image/png", base64.b64decode(PNG))
    assert store.get(key, 1) == ("image/jpeg", base64.b64decode(PNG))
    assert store.get(key, 2) is None and store.get("nope", 0) is None


def test_answers_without_raster_pictures_are_not_kept() -> None:
    store = RecentImages()
    assert store.keep(answer()) is None
    assert store.keep(answer(image(mime="image/svg+xml"))) is None  # an SVG can carry script
    assert store.keep({"isError": True}) is None and store.keep("text") is None
    assert store.size == (0, 0)


def test_the_store_forgets_the_oldest_answers_past_its_count_and_its_bytes() -> None:
    store = RecentImages(max_answers=5, max_bytes=10_000)
    keys = [store.keep(answer(image())) for _ in range(8)]
    assert store.size[0] == 5 and [store.get(str(k), 0) is not None for k in keys] == [False] * 3 + [True] * 5
    big = "A" * 2400  # a quarter of the bytes at most per picture: 4 of these fill it
    keys = [store.keep(answer(image(big))) for _ in range(6)]
    answers, size = store.size
    assert size <= 10_000 and store.get(str(keys[-1]), 0) is not None and store.get(str(keys[0]), 0) is None
    assert store.keep(answer(image("A" * 2504))) is None  # more than a quarter: not kept at all
    assert answers <= 5


@pytest.mark.anyio
async def test_as_middleware_it_notes_the_key_on_the_calls_log_line() -> None:
    store = RecentImages()
    fields: dict[str, Any] = {}
    token = calllog._line_fields.set(fields)

    class Ctx:
        method = "tools/call"

    async def call_next(_ctx: Any) -> dict[str, Any]:
        await anyio.sleep(0)
        return answer(image())

    try:
        result = await store(Ctx(), call_next)
    finally:
        calllog._line_fields.reset(token)
    assert result["content"][1]["data"] == PNG  # the answer goes on untouched
    assert fields == {"images": f"{store.prefix}1"}
