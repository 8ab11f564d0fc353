"""Progress of the call running now: `report_progress(fraction, message)` from tool code.

A host tool's plain function runs on the application thread while the request it serves
lives on the I/O loop. `report_progress` hands the latest figure to the I/O loop, which sends
it as an MCP progress notification (`progress` = the fraction, `total` = 1) against the
caller's progress token; nothing is sent when the caller asked for no progress. Reports are
coalesced: while one notification is being written, a newer report replaces the pending one,
so a tight loop cannot flood the connection, and reporting never blocks the calling code.

Adapters call it from application-thread code (a long screenshot, a tessellation); scripts
run by `execute_python_code` get it as `progress(fraction, message)` in their namespace.
"""

from __future__ import annotations

import math

from cadmcp.host.appthread import AppCallCancelled, current_call
from cadmcp.host.relay import MAX_MESSAGE_CHARS, current_relay
from cadmcp.wire.echo import echo

__all__ = ["report_progress"]


def report_progress(fraction: float, message: str | None = None) -> None:
    """Say how far the current call is: `fraction` from 0 to 1, with a short `message`.

    Call it from tool code (on the application thread, or async code serving the request);
    outside a call it does nothing. Values outside 0..1 are clamped and never go backwards.
    Raises `AppCallCancelled` once the call was cancelled, so a loop that reports also stops.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise TypeError(
            "progress fraction must be a number from 0 to 1, like progress(0.5, 'half way') "
            f"(got {echo(fraction, 40)})"
        )
    if message is not None and not isinstance(message, str):
        raise TypeError(f"progress message must be text or None (got {type(message).__name__})")
    call = current_call()
    if call is not None and call.cancel_requested:  # every loop that reports can be cancelled
        raise AppCallCancelled("The call was stopped while it ran (cancelled, or the host is stopping).")
    if math.isnan(fraction):
        return
    relay = call.progress if call is not None else current_relay()
    if relay is None:
        return
    if message is not None and len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    relay.report(min(1.0, max(0.0, float(fraction))), message)
