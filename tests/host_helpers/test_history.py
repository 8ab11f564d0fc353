"""History: bounded undo/redo stacks of named steps with the navigate_history shape."""

from __future__ import annotations

import pytest

from cadmcp.host.history import History, HistoryError, Step


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
