"""The refresh queue: tables take turns, each table's runs in order, a bounded line per table."""

from __future__ import annotations

import pytest

from catalogd.dynamic.refresh_queue import FairQueue
from catalogd.errors import ConflictError, RefreshQueueFullError


def test_tables_take_turns_whatever_one_of_them_queued() -> None:
    queue: FairQueue[str] = FairQueue(per_table=1000)
    for n in range(200):
        queue.put("a", f"a{n}")
    queue.put("b", "b0")
    queue.put("c", "c0")
    queue.put("b", "b1")
    taken = [queue.take() for _ in range(6)]
    assert taken == ["a0", "b0", "c0", "a1", "b1", "a2"]
    assert queue.waiting() == 197 and queue.waiting("a") == 197 and queue.waiting("b") == 0


def test_a_full_line_is_refused_with_when_to_retry_and_other_tables_are_not() -> None:
    queue: FairQueue[str] = FairQueue(per_table=2, retry_after=lambda table: 42.0)
    for n in range(2):
        queue.check("a")
        queue.put("a", f"a{n}")
    with pytest.raises(RefreshQueueFullError, match="a has 2 refreshes waiting already") as refused:
        queue.check("a")
    assert isinstance(refused.value, ConflictError) and refused.value.retry_after == 42.0
    assert "retry in about 42s" in refused.value.message
    queue.check("b")  # another table's line has room
    assert queue.refused == 1
    queue.take()
    queue.check("a")  # one started: room again


def test_removing_a_table_takes_its_items_out_and_the_others_keep_their_turns() -> None:
    queue: FairQueue[str] = FairQueue(per_table=10)
    for item in ("a0", "a1"):
        queue.put("a", item)
    queue.put("b", "b0")
    assert queue.remove("a") == ["a0", "a1"]
    assert queue.take() == "b0" and queue.take() is None
    queue.put("c", "c0")
    assert queue.drain() == ["c0"] and queue.waiting() == 0
