"""Which undo steps a saved file holds that its document no longer has (an undo past a save)."""

from __future__ import annotations

from pathlib import Path

from cadmcp.host.builtins.ondisk import DiskStamps


def test_steps_undone_past_a_save_are_named_and_steps_made_since_are_not(tmp_path: Path) -> None:
    path = tmp_path / "plan.dxf"
    path.write_text("x")
    disk = DiskStamps()
    assert disk.undone_in_file(path, ["b", "a"]) == []  # never written here: unknown, nothing said
    disk.note(path, steps=["b", "a"])  # saved after a, then b (most recent first)
    assert disk.undone_in_file(path, ["b", "a"]) == []
    assert disk.undone_in_file(path, ["c", "b", "a"]) == []  # a step made since: the file lacks it
    assert disk.undone_in_file(path, ["a"]) == ["b"]
    assert disk.undone_in_file(path, []) == ["b", "a"]
    assert disk.undone_in_file(path, ["x", "a"]) == ["b"]  # b undone, another step made instead
    disk.note(path, read=True)  # read again: the file is the document as it opens
    assert disk.undone_in_file(path, []) == []


def test_steps_falling_off_the_history_after_the_save_are_no_difference(tmp_path: Path) -> None:
    """Saved with 64 steps; four more since, so the history (64 deep) dropped the four oldest."""
    path = tmp_path / "plan.dxf"
    path.write_text("x")
    disk = DiskStamps()
    saved = [f"s{i}" for i in range(64, 0, -1)]  # s64 .. s1, most recent first
    disk.note(path, steps=saved, dropped=0)
    now = [f"s{i}" for i in range(68, 4, -1)]  # s68 .. s5: s1 .. s4 fell off
    assert disk.undone_in_file(path, now, dropped=4) == []
    back = [f"s{i}" for i in range(62, 4, -1)]  # undone back to s62: s63 and s64 are the file's
    assert disk.undone_in_file(path, back, dropped=4) == ["s64", "s63"]
