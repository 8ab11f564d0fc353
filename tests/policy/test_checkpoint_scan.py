"""Reading the machine's checkpoints back from the shared log folder: incremental and bounded."""

from __future__ import annotations

from pathlib import Path

import anyio

from cadmcp.daemon.checkpoints import (
    CHECKPOINT_LINE,
    MAX_CHECKPOINTS,
    REVERT_LINE,
    Checkpoint,
    Checkpoints,
    LogScan,
)
from cadmcp.wire.calllog import format_line

DAEMON = 4242


def _checkpoint(n: int) -> Checkpoint:
    return Checkpoint(
        f"{DAEMON}-{n}", "host-1", "DXF 1.4.5 pid 7", "plan.dxf", 1, (f"d{n}",), f"step {n}", 1000.0 + n
    )


def _write(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in lines)


def test_a_long_log_keeps_only_the_newest_checkpoints_and_reverts_and_still_reads_what_it_gains(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log_4242_2026120210_1.log"
    total = 3 * MAX_CHECKPOINTS
    lines = []
    for n in range(1, total + 1):
        lines.append(_checkpoint(n).line())
        lines.append(
            format_line(REVERT_LINE, "ok", {"callId": f"{DAEMON}-{n}", "reverted": [f"{DAEMON}-{n}"]})
        )
        lines.append(format_line("tools/call", "ok", {"target": "echo"}))  # not read back
    _write(log, lines)

    scan = LogScan(tmp_path)
    found = scan.lines()
    checkpoints = [line for line in found if line["method"] == CHECKPOINT_LINE]
    reverts = [line for line in found if line["method"] == REVERT_LINE]
    assert len(checkpoints) == len(reverts) == MAX_CHECKPOINTS
    assert checkpoints[0]["callId"] == f"{DAEMON}-{total - MAX_CHECKPOINTS + 1}"
    assert checkpoints[-1]["callId"] == f"{DAEMON}-{total}"

    _write(log, [_checkpoint(total + 1).line()])  # a line added later is read on the next look
    again = [line for line in scan.lines() if line["method"] == CHECKPOINT_LINE]
    assert len(again) == MAX_CHECKPOINTS
    assert again[-1]["callId"] == f"{DAEMON}-{total + 1}"


def test_the_listing_of_a_long_log_is_its_newest_checkpoints_with_their_reverts(tmp_path: Path) -> None:
    total = MAX_CHECKPOINTS + 200
    lines = [_checkpoint(n).line() for n in range(1, total + 1)]
    lines.append(
        format_line(REVERT_LINE, "ok", {"callId": f"{DAEMON}-{total}", "reverted": [f"{DAEMON}-{total}"]})
    )
    _write(tmp_path / "log_4242_2026120210_1.log", lines)
    _write(tmp_path / "log_4243_2026120210_1.log", [])  # another daemon's, empty

    listed = anyio.run(Checkpoints(tmp_path).listing)
    assert [item["callId"] for item in listed] == [f"{DAEMON}-{n}" for n in range(201, total + 1)]
    assert [item["reverted"] for item in listed[-2:]] == [False, True]


def test_a_call_counts_as_redone_only_when_the_stack_ends_as_it_left_it() -> None:
    """Steps of one name (the same script run three times): after a revert the stack is one
    shorter, and its shifted names are not taken for the reverted call's own."""
    from cadmcp.daemon.checkpoints import Checkpoint, _on_stack, step_digest

    x, y = step_digest("add a circle"), step_digest("add a line")
    call = Checkpoint("1-3", "h", "DXF 1 pid 1", "plan.dxf", 1, (x, x, x), "add a circle", 0.0)
    assert _on_stack((x, x, x), call)  # as the call left it
    assert _on_stack((y, x, x, x), call)  # a later step on top
    assert not _on_stack((x, x), call)  # reverted: one shorter, though the names match
    assert not _on_stack((y, x, x), call)  # reverted, then another change
