"""How an error message mentions a caller's value: short, on one line, never whole.

Errors describe; they do not echo. A 10 MB id, a path to a secret file or a huge argument
comes back as a clipped, printable prefix with its full length, so a message stays small
and a transcript never carries more of the input than a reader needs to recognise it.
"""

from __future__ import annotations

from typing import Any

DEFAULT_LIMIT = 60
"""Characters of a value an error message shows."""


def echo(value: Any, limit: int = DEFAULT_LIMIT) -> str:
    """`repr`-like text of `value`, at most about `limit` characters, control characters escaped.

    Strings longer than `limit` end with `…(N chars)`; containers and other objects are
    summarised by type and size instead of being rendered.
    """
    if isinstance(value, str):
        head = value[:limit]
        text = repr(head)
        if len(value) > limit:
            text = f"{text[:-1]}…{text[-1]} ({len(value)} chars)"
        return text
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"<integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, dict | list | tuple | set):
        return f"<{type(value).__name__} of {len(value)} items>"
    return f"<{type(value).__name__}>"
