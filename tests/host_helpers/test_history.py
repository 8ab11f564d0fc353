"""History: bounded undo/redo stacks of named steps with the navigate_history shape."""

from __future__ import annotations

import pytest

from cadmcp.host.history import DEFAULT_MAX_DEPTH, UNDO_DEPTH_ENV, History, HistoryError, Step, undo_depth


def _counter_history(n: int, depth: int = 100) -> tuple[History, list[int]]:
    state = [0]
    history = History(max_depth=depth)
    for i in range(1, n + 1):
        state[0] += i

        def undo(i: int = i) -> None:
            state[0] -= i

        def redo(i: int = i) -> None:
            state[0] += i

        history.record(Step(f"add {i}", undo, redo))
    return history, state


def test_undo_and_redo_report_operations_and_counts() -> None:
    history, state = _counter_history(3)
    result = history.navigate("back", 2)
    assert result["operations"] == ["add 3", "add 2"]
    assert result["navigated"] == 2 and result["back_remaining"] == 1 and result["forward_available"] == 2
    assert state == [1]
    result = history.navigate("forward")
    assert result["operations"] == ["add 2"] and state == [3]


def test_steps_beyond_stack_are_bounded_and_empty_is_not_error() -> None:
    history, state = _counter_history(2)
    assert history.navigate("back", 10)["navigated"] == 2
    assert state == [0]
    empty = history.navigate("back")
    assert empty["navigated"] == 0 and empty["message"].startswith("Nothing to undo")
    history.navigate("forward", 5)
    assert history.navigate("forward")["message"].startswith("Nothing to redo")


def test_new_step_clears_redo_and_depth_is_bounded() -> None:
    history, _ = _counter_history(5, depth=3)
    assert history.back_remaining == 3
    history.navigate("back")
    history.record(Step("new", lambda: None, lambda: None))
    assert history.forward_available == 0 and history.undo_names()[0] == "new"


def test_bad_arguments_and_failing_step() -> None:
    history, _ = _counter_history(1)
    with pytest.raises(HistoryError):
        history.navigate("sideways")
    with pytest.raises(HistoryError):
        history.navigate("back", 0)

    def boom() -> None:
        raise RuntimeError("broken")

    history.record(Step("bad", boom, boom))
    with pytest.raises(HistoryError, match="bad"):
        history.navigate("back")
    assert history.back_remaining == 2  # the failed step stays


def test_the_oldest_step_falling_off_is_said_when_recorded_and_when_undoing_reaches_it() -> None:
    history, state = _counter_history(3, depth=3)
    assert history.dropped == 0
    assert history.record(Step("add 4", lambda: None, lambda: None)) == "add 1"
    assert history.dropped == 1 and history.undo_names()[-1] == "add 2"
    partway = history.navigate("back")
    assert partway["depth"] == 3 and partway["dropped"] == 1
    assert partway["message"].endswith("Now 2 steps can be undone, 1 redone.")
    to_the_end = history.navigate("back", 5)
    assert to_the_end["back_remaining"] == 0
    assert "1 step older than these fell off the history (it keeps 3)" in to_the_end["message"]
    assert state == [1]  # 'add 1' was never undone: it fell off


def test_undo_depth_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UNDO_DEPTH_ENV, "5")
    assert undo_depth() == 5 and History().max_depth == 5
    for bad in ("0", "ten", "100000"):
        monkeypatch.setenv(UNDO_DEPTH_ENV, bad)
        assert undo_depth(7) == 7  # out of range or no number: the default stays
    monkeypatch.delenv(UNDO_DEPTH_ENV)
    assert History().max_depth == DEFAULT_MAX_DEPTH


def _step(name: str) -> Step:
    return Step(name, lambda: None, lambda: None)


def test_the_position_says_whether_the_document_is_back_where_it_was_saved() -> None:
    """The demo undid its own change, and stopping the host wrote a recovery copy of a drawing
    that was as opened: "modified" stayed true after any undo."""
    history, _ = _counter_history(0, depth=2)
    opened = history.position()
    assert opened == 0
    history.record(_step("a"))
    assert history.position() != opened
    history.navigate("back")
    assert history.position() == opened  # undone back to the file: unmodified
    history.record(_step("b"))
    saved = history.position()
    history.record(_step("c"))
    history.record(_step("d"))  # "b" falls off the bottom: it stays applied
    history.navigate("back", 5)
    assert history.position() == saved  # back to the save, not to the opened file
    history.navigate("forward")
    assert history.position() != saved
