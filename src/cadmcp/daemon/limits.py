"""Bounds on everything a client sends the daemon, checked before any work starts.

A request over a bound is refused at once with a `validation_error` that names the field,
the bound and what to do instead; the check itself costs time proportional to the number
of JSON values, never to the length of a string.
"""

from __future__ import annotations

from typing import Any

from cadmcp.daemon.errors import validation_error

MAX_LIMIT = 32
"""Items one `search_dynamic` answers at most."""
DEFAULT_LIMIT = 12
MAX_READS = 16
"""Reads in one `invoke_dynamic` call."""
MAX_QUERY_CHARS = 1000
"""`search_dynamic` query length (a request in words; longer text is not a search)."""
MAX_ID_CHARS = 64
"""Any id or instance id field."""
MAX_PATH_CHARS = 4096
"""A file path argument."""
MAX_ARGUMENTS_BYTES = 4 * 1024 * 1024
"""A host call's `arguments` (or one read's template arguments), measured as JSON text."""
MAX_REQUEST_BYTES = MAX_ARGUMENTS_BYTES + 256 * 1024
"""One whole request as it arrives (arguments plus envelope): longer ones are refused unread, so
a 10 MB argument costs the daemon no parsing at all."""
MAX_STATE_CHARS = 256 * 1024
"""A multi-round `requestState` as the daemon issued it is far smaller."""
MAX_RESPONSES_BYTES = 1024 * 1024
"""`inputResponses` of one round."""
MAX_RESPONSES = 64
"""Answers in one round's `inputResponses` (one per input request the round asked)."""
MAX_RESPONSE_KEY_CHARS = 256
"""The key of one answer (it names the input request it answers)."""
MAX_DEPTH = 32
"""Nesting of objects and arrays inside arguments."""
MAX_VALUES = 100_000
"""JSON values (objects, arrays, strings, numbers...) inside one request's arguments."""


def check_text(value: Any, field: str, limit: int) -> None:
    """A string field no longer than `limit` characters (other types are checked elsewhere)."""
    if isinstance(value, str) and len(value) > limit:
        raise validation_error(
            f"{field} is {len(value):,} characters; at most {limit:,} are accepted. Send a shorter {field}.",
            field=field,
            limit=limit,
        )


def json_size(value: Any, field: str, limit: int = MAX_ARGUMENTS_BYTES) -> int:
    """The approximate JSON size of `value` in bytes; refuses values too big, deep or numerous.

    Iterative (a deeply nested value cannot exhaust the stack) and stops at the first bound
    crossed, so even a huge argument costs little to refuse.
    """
    size = 0
    values = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        values += 1
        if values > MAX_VALUES:
            raise validation_error(
                f"{field} holds more than {MAX_VALUES:,} values; send fewer items per call.", field=field
            )
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise validation_error(
                    f"{field} nests deeper than {MAX_DEPTH} levels; send flatter data.", field=field
                )
            size += 2
            if isinstance(item, dict):
                for key, child in item.items():
                    size += len(key) + 3
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            size += 8
        if size > limit:
            raise validation_error(
                f"{field} is over {limit // 1024:,} KiB; send less (a file path instead of file "
                "content, fewer items per call).",
                field=field,
                limit=limit,
            )
    return size


def check_responses(value: Any, field: str = "inputResponses") -> dict[str, dict[str, Any]]:
    """One round's answers (`invoke_dynamic`'s `inputResponses`, `tasks/update`'s): an object of at
    most `MAX_RESPONSES` answers, each an object under a key of at most `MAX_RESPONSE_KEY_CHARS`
    characters, `MAX_RESPONSES_BYTES` in all; a `validation_error` naming the bound otherwise."""
    if not isinstance(value, dict):
        raise validation_error(
            f"{field} must be an object of answers keyed by the input request they answer.", field=field
        )
    if len(value) > MAX_RESPONSES:
        raise validation_error(
            f"{field} holds {len(value):,} answers; at most {MAX_RESPONSES} are accepted (one per "
            "input request of the round).",
            field=field,
            limit=MAX_RESPONSES,
        )
    for key, answer in value.items():
        if not isinstance(key, str) or len(key) > MAX_RESPONSE_KEY_CHARS:
            raise validation_error(
                f"{field} has a key over {MAX_RESPONSE_KEY_CHARS} characters; use the keys of the round's "
                "inputRequests.",
                field=field,
                limit=MAX_RESPONSE_KEY_CHARS,
            )
        if not isinstance(answer, dict):
            raise validation_error(
                f"{field}[{key[:40]!r}] must be an object (an elicitation, sampling or roots answer).",
                field=field,
            )
    json_size(value, field, MAX_RESPONSES_BYTES)
    return value


# -- what a host lists (its bounds are the wire's: cadmcp.wire.catalogbounds) --------------------
MAX_DESCRIPTION_CHARS = 2000
"""Longer descriptions are clipped when listed (search answers show 200 characters)."""


def clip_descriptions(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items with descriptions over `MAX_DESCRIPTION_CHARS` clipped (others as they are)."""
    out = []
    for item in items:
        text = item.get("description")
        if isinstance(text, str) and len(text) > MAX_DESCRIPTION_CHARS:
            item = {**item, "description": text[:MAX_DESCRIPTION_CHARS] + "…"}
        out.append(item)
    return out
