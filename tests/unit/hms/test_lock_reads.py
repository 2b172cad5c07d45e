"""Objects locked through the endpoint lately are read past the metadata cache, for a while."""

from __future__ import annotations

from catalogd.hms.lock_reads import LockedReads


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_locked_table_or_database_is_guarded_for_the_window() -> None:
    clock = Clock()
    reads = LockedReads(lambda: 10.0, clock)
    reads.asked([("main", "db", "t")])
    assert reads.guarded(("main", "db", "t"))
    assert not reads.guarded(("main", "db", "u"))
    assert not reads.guarded(("main", "db", ""))  # a read of the whole database is not the table's
    reads.asked([("main", "db2", "")])
    assert reads.guarded(("main", "db2", "any"))
    clock.now = 10.5
    assert not reads.guarded(("main", "db", "t"))


def test_a_waiting_lock_guards_again_when_granted() -> None:
    clock = Clock()
    reads = LockedReads(lambda: 10.0, clock)
    reads.asked([("main", "db", "t")], lockid=7, waiting=True)
    clock.now = 20.0
    assert not reads.guarded(("main", "db", "t"))
    reads.granted(7)
    assert reads.guarded(("main", "db", "t"))
    reads.released(7)
    reads.granted(7)  # nothing left to grant: no error


def test_memory_is_bounded() -> None:
    reads = LockedReads(lambda: 1e9, Clock(), limit=3)
    for i in range(10):
        reads.asked([("main", "db", f"t{i}")], lockid=i, waiting=True)
    assert [reads.guarded(("main", "db", f"t{i}")) for i in range(10)] == [False] * 7 + [True] * 3
    assert len(reads._waiting) == 3
