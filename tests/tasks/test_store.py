"""The task store's rules on their own: bounds, lifetime, owners, input rounds, settings."""

from __future__ import annotations

import pytest

from cadmcp.daemon.tasks.owner import Owner
from cadmcp.daemon.tasks.settings import TaskSettings
from cadmcp.daemon.tasks.store import TaskNotFound, TaskStore

ALICE = Owner("http", "alice", "session-1")
BOB = Owner("http", "alice", "session-2")  # the same principal, another session


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def finish(store: TaskStore, record, text: str = "done") -> None:  # type: ignore[no-untyped-def]
    record.status = "completed"
    record.result = {"content": [{"type": "text", "text": text}], "isError": False}
    store.finished(record)


def test_a_task_is_found_only_by_its_owner_in_its_era() -> None:
    store = TaskStore(TaskSettings())
    record = store.create(ALICE, "legacy", "slow")
    assert record is not None and len(record.task_id) == 32
    assert store.lookup(ALICE, record.task_id, "legacy") is record
    for owner, era in ((BOB, "legacy"), (ALICE, "extension")):
        with pytest.raises(TaskNotFound) as missing:
            store.lookup(owner, record.task_id, era)  # type: ignore[arg-type]
        assert missing.value.expired is False
    with pytest.raises(TaskNotFound):
        store.lookup(ALICE, "x" * 65, "legacy")
    assert store.owned(ALICE, "legacy") == [record] and store.owned(BOB, "legacy") == []


def test_the_store_is_bounded_and_makes_room_from_the_oldest_finished_task() -> None:
    store = TaskStore(TaskSettings(max_tasks=2))
    first, second = store.create(ALICE, "extension", "a"), store.create(ALICE, "extension", "b")
    assert first is not None and second is not None
    assert store.create(ALICE, "extension", "c") is None  # all running: no task, the call goes on as usual
    finish(store, first)
    third = store.create(ALICE, "extension", "c")
    assert third is not None and len(store) == 2
    with pytest.raises(TaskNotFound) as dropped:
        store.lookup(ALICE, first.task_id, "extension")
    assert dropped.value.expired is True  # its owner is told it expired...
    with pytest.raises(TaskNotFound) as other:
        store.lookup(BOB, first.task_id, "extension")
    assert other.value.expired is False  # ...anyone else that it does not exist


def test_finished_results_are_kept_within_a_byte_budget() -> None:
    store = TaskStore(TaskSettings(result_bytes=10_000))
    old, new = store.create(ALICE, "extension", "a"), store.create(ALICE, "extension", "b")
    assert old is not None and new is not None
    finish(store, old, "x" * 6000)
    finish(store, new, "y" * 6000)
    assert store.result_bytes < 10_000
    with pytest.raises(TaskNotFound):
        store.lookup(ALICE, old.task_id, "extension")
    assert store.lookup(ALICE, new.task_id, "extension") is new


def test_tasks_fall_due_after_their_ttl_and_a_shorter_ttl_asked_for_is_kept() -> None:
    clock = Clock()
    store = TaskStore(TaskSettings(ttl=60), clock=clock)
    standard = store.create(ALICE, "legacy", "a")
    short = store.create(ALICE, "legacy", "b", ttl=5)
    greedy = store.create(ALICE, "legacy", "c", ttl=10_000)
    assert standard is not None and short is not None and greedy is not None
    assert (standard.ttl, short.ttl, greedy.ttl) == (60, 5, 60)
    clock.now += 6
    assert store.due() == [short]
    clock.now += 60
    assert set(store.due()) == {standard, short, greedy}


def test_input_round_keys_are_unique_over_a_task_and_answers_map_back() -> None:
    store = TaskStore(TaskSettings())
    record = store.create(ALICE, "extension", "delete")
    assert record is not None
    first = record.open_round({"confirm": {"method": "elicitation/create"}})
    first.offer({"confirm": {"action": "accept"}, "unknown": {}})
    assert first.answered.is_set() and first.responses == {"confirm": {"action": "accept"}}
    second = record.open_round(
        {"confirm": {"method": "elicitation/create"}, "why": {"method": "elicitation/create"}}
    )
    assert list(second.requests) == ["confirm#2", "why"]
    second.offer({"confirm": {"action": "decline"}})  # an answered key from the last round: ignored
    assert not second.answered.is_set()
    second.offer({"confirm#2": {"action": "decline"}})
    assert not second.answered.is_set()  # partial answers wait for the rest
    second.offer({"why": {"action": "accept"}})
    assert second.answered.is_set() and second.responses == {
        "confirm": {"action": "decline"},
        "why": {"action": "accept"},
    }


def test_settings_come_from_the_environment_within_bounds() -> None:
    settings = TaskSettings.from_env(
        {
            "CADMCP_TASK_AFTER": "0",
            "CADMCP_TASK_TTL": "120",
            "CADMCP_TASK_MAX": "50",
            "CADMCP_TASK_POLL_MS": "500",
        }
    )
    assert (settings.after, settings.ttl, settings.max_tasks, settings.poll_ms) == (0, 120, 50, 500)
    bad = TaskSettings.from_env(
        {"CADMCP_TASK_AFTER": "soon", "CADMCP_TASK_TTL": "-1", "CADMCP_TASK_MAX": "1e9"}
    )
    assert (bad.after, bad.ttl, bad.max_tasks) == (3.0, 3600.0, 1000)
    assert TaskSettings.from_env({"CADMCP_TASK_RESULTS_MB": "64"}).result_bytes == 64 * 2**20
