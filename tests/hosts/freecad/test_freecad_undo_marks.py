"""Which recompute marks an undo or redo gives back: the record of each step a script made is found
again by FreeCAD's undo names, also after older steps fell off the stack (no FreeCAD needed)."""

from __future__ import annotations

from cadmcp.hosts.freecad.undo import DocumentSteps, StepMarks


def steps_of(*names: str, depth: int = 3) -> tuple[DocumentSteps, list[str]]:
    """Record ``names`` as FreeCAD would stack them (newest first, ``depth`` kept); what fell off."""
    steps = DocumentSteps(depth)
    stack: tuple[str, ...] = ()
    fell = []
    for i, name in enumerate(names):
        after = (name, *stack)[:depth]
        fell.append(
            steps.record(StepMarks(name, stack, after, frozenset({f"before{i}"}), frozenset({f"after{i}"})))
        )
        stack = after
    return steps, fell


def test_undo_and_redo_find_the_marks_of_that_state() -> None:
    steps, fell = steps_of("a", "b")
    assert fell == ["", ""] and steps.dropped == 0
    assert steps.for_undo(("b", "a")).touched_before == {"before1"}
    assert steps.for_undo(("a",)).touched_before == {"before0"}
    assert steps.for_redo(("a",), "b").touched_after == {"after1"}
    assert steps.for_redo((), "a").touched_after == {"after0"}


def test_a_step_made_elsewhere_keeps_freecads_marks() -> None:
    steps, _ = steps_of("a")
    assert steps.for_undo(("Edit in the window", "a")) is None
    assert steps.for_redo(("a",), "Edit in the window") is None


def test_steps_fallen_off_the_bottom_do_not_hide_the_records_above() -> None:
    steps, fell = steps_of("a", "b", "c", "d", "e")
    assert fell == ["", "", "", "a", "b"] and steps.dropped == 2 and steps.depth == 3
    assert steps.for_undo(("e", "d", "c")).touched_before == {"before4"}
    assert steps.for_undo(("d", "c")).touched_before == {"before3"}  # recorded when 'b' was still below
    assert steps.for_redo(("d", "c"), "e").touched_after == {"after4"}


def test_the_newest_branch_wins_when_names_repeat() -> None:
    steps, _ = steps_of("a", "b")
    steps.record(StepMarks("b", ("a",), ("b", "a"), frozenset({"again"}), frozenset({"again after"})))
    assert steps.for_undo(("b", "a")).touched_before == {"again"}
    assert steps.for_redo(("a",), "b").touched_after == {"again after"}


def test_a_step_made_twice_under_one_name_is_told_apart_from_the_first() -> None:
    steps, _ = steps_of("a", "a")
    assert steps.for_undo(("a", "a")).touched_before == {"before1"}
    steps.moved(steps.for_undo(("a", "a")), True, ("a",))
    assert steps.for_undo(("a",)).touched_before == {"before0"}  # not the second, whose stack began so
    steps.moved(steps.for_undo(("a",)), True, ())
    assert steps.for_redo((), "a").touched_after == {"after0"}
    steps.moved(steps.for_redo((), "a"), False, ("a",))
    assert steps.for_redo(("a",), "a").touched_after == {"after1"}


def test_a_stack_moved_elsewhere_falls_back_to_the_names() -> None:
    steps, _ = steps_of("a", "a")
    # undone in FreeCAD's window: the stack is not as cadmcp left it, the names say which record
    assert steps.for_undo(("a",)).touched_before == {"before0"}
    steps.moved(None, True, ())  # a step that is not one of ours moved: nothing is known
    assert steps.for_undo(("a", "a")).touched_before == {"before1"}
