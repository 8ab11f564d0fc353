"""Exact comparison of canonical dumps: what differs is named, down to the first differing value."""

from __future__ import annotations

from cadmcp.corpus.compare import compare


def test_identical_dumps_are_equal_whatever_their_summary() -> None:
    a = {"entities": {"1A": {"tags": [[10, 1.0]]}}, "summary": {"entities": 1}}
    b = {"entities": {"1A": {"tags": [[10, 1.0]]}}, "summary": {"entities": 99}}
    diff = compare(a, b)
    assert diff.equal
    assert diff.describe() == "identical"


def test_added_removed_and_changed_records_are_named_with_the_first_differing_value() -> None:
    before = {"objects": {"Pad": {"shape": {"volume": 100.0}}, "Sketch": {"props": {"X": 1}}}}
    after = {"objects": {"Pad": {"shape": {"volume": 110.0}}, "Pocket": {"props": {}}}}
    diff = compare(before, after)
    assert not diff.equal
    assert diff.added == ["objects:Pocket"]
    assert diff.removed == ["objects:Sketch"]
    assert diff.changed == ["objects:Pad"]
    assert "objects:Pad.shape.volume: 100.0 != 110.0" in diff.describe()


def test_a_list_that_grew_says_how_long_each_side_is() -> None:
    diff = compare(
        {"entities": {"E": {"tags": [[1, "a"]]}}}, {"entities": {"E": {"tags": [[1, "a"], [2, "b"]]}}}
    )
    assert "entities:E.tags: 1 items != 2 items" in diff.describe()


def test_a_float_that_differs_in_the_last_kept_digit_is_a_difference() -> None:
    diff = compare({"objects": {"A": [1.00000001]}}, {"objects": {"A": [1.00000002]}})
    assert diff.changed == ["objects:A"]
    assert "[0]" in diff.describe()
