"""What travels between daemons: JSON bodies, and reply frames that may be chunked.

A request's reply subject receives frames whose `Cadmcp-Frame` header says what they are:
`ack` (the machine accepted the call and is running it), `alive` (still running),
`progress` (the host reported progress: `{progress, total, message}`; also counts as alive)
and `final` (the answer). A final answer larger than the server's max payload is split into
numbered chunks (`Cadmcp-Chunk: i/n`) that the caller joins before decoding.
"""

from __future__ import annotations

import json
from typing import Any

from cadmcp.wire.jsonwire import dumps

FRAME = "Cadmcp-Frame"
CHUNK = "Cadmcp-Chunk"
ACK, ALIVE, PROGRESS, FINAL = "ack", "alive", "progress", "final"
HEADROOM = 4096
"""Bytes of a message left for subject, reply subject and headers."""
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The largest answer one request may bring back (over several chunks)."""
VERSION = 1
MAX_STATE_BYTES = 8192
"""The largest host state (phase, documents) announced with a host."""
MAX_HOSTS = 1000
MAX_APPS = 64
"""Host applications a machine announces it can launch."""
"""Hosts one machine announces (a presence naming more is cut)."""


def encode(value: Any) -> bytes:
    return dumps(value).encode()


def decode(data: bytes) -> dict[str, Any]:
    """A JSON object from a message (ValueError for anything else)."""
    value = json.loads(data)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def chunks(payload: bytes, max_payload: int) -> list[tuple[dict[str, str], bytes]]:
    """(headers, bytes) messages of a final answer, split to fit `max_payload`."""
    size = max(1024, max_payload - HEADROOM)
    parts = [payload[i : i + size] for i in range(0, len(payload), size)] or [b""]
    n = len(parts)
    return [({FRAME: FINAL, CHUNK: f"{i + 1}/{n}"}, part) for i, part in enumerate(parts)]


def chunk_position(headers: dict[str, str] | None) -> tuple[int, int]:
    """(index from 1, count) of a final frame; (1, 1) when it is not chunked."""
    raw = (headers or {}).get(CHUNK, "1/1")
    try:
        i, n = (int(x) for x in raw.split("/", 1))
    except ValueError:
        return 1, 1
    return i, n


def bounded_state(state: dict[str, Any]) -> dict[str, Any]:
    """A host's self-description (phase, documents) as announced: small, or only its phase."""
    if len(encode(state)) <= MAX_STATE_BYTES:
        return state
    return {"phase": state.get("phase"), "truncated": True}
