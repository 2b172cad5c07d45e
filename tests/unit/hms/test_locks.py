"""LockManager: HMS lock semantics (conflicts, overlap, FIFO waiting, expiry, show_locks) on a fake clock."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from catalogd.errors import InvalidArgumentError
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.locks import LockManager

SR = hms.LockType.SHARED_READ
SW = hms.LockType.SHARED_WRITE
EX = hms.LockType.EXCLUSIVE
ACQUIRED = hms.LockState.ACQUIRED
WAITING = hms.LockState.WAITING
TIMEOUT = 300.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def locks(clock: Clock) -> LockManager:
    return LockManager(TIMEOUT, clock, wall=lambda: clock.now + 1.7e9)


def comp(kind: int, db: str, table: str | None = None, part: str | None = None) -> hms.LockComponent:
    level = hms.LockLevel.PARTITION if part else hms.LockLevel.TABLE if table else hms.LockLevel.DB
    return hms.LockComponent(type=kind, level=level, dbname=db, tablename=table, partitionname=part)


def request(*components: hms.LockComponent, txnid: int = 0) -> hms.LockRequest:
    return hms.LockRequest(component=list(components), txnid=txnid, user="alice", hostname="h1", agentInfo="test")


def take(locks: LockManager, *components: hms.LockComponent) -> hms.LockResponse:
    return locks.lock(request(*components))


def check(locks: LockManager, lockid: int) -> int:
    return locks.check_lock(hms.CheckLockRequest(lockid=lockid)).state


def unlock(locks: LockManager, lockid: int) -> None:
    locks.unlock(hms.UnlockRequest(lockid=lockid))


def shown(locks: LockManager, **kwargs: Any) -> list[hms.ShowLocksResponseElement]:
    return locks.show_locks(hms.ShowLocksRequest(**kwargs)).locks


# ---------------------------------------------------------------- conflicts

CONFLICT = {
    (SR, SR): False, (SR, SW): False, (SR, EX): True,
    (SW, SR): False, (SW, SW): True, (SW, EX): True,
    (EX, SR): True, (EX, SW): True, (EX, EX): True,
}


@pytest.mark.parametrize(("held", "wanted"), list(itertools.product([SR, SW, EX], repeat=2)))
def test_every_conflict_pair_on_one_table(locks: LockManager, held: int, wanted: int) -> None:
    first = take(locks, comp(held, "db", "t"))
    assert first.state == ACQUIRED
    second = take(locks, comp(wanted, "db", "t"))
    assert second.state == (WAITING if CONFLICT[(wanted, held)] else ACQUIRED)
    assert second.lockid != first.lockid


@pytest.mark.parametrize(("held", "wanted"), list(itertools.product([SR, SW, EX], repeat=2)))
def test_no_conflict_on_another_table_or_database(locks: LockManager, held: int, wanted: int) -> None:
    take(locks, comp(held, "db", "t"))
    assert take(locks, comp(wanted, "db", "u")).state == ACQUIRED
    assert take(locks, comp(wanted, "other", "t")).state == ACQUIRED
    assert take(locks, comp(wanted, "third")).state == ACQUIRED


@pytest.mark.parametrize(("a", "b", "overlap"), [
    (("db",), ("db", "t"), True),
    (("db",), ("db", "t", "p=1"), True),
    (("db", "t"), ("db", "t", "p=1"), True),
    (("db", "t", "p=1"), ("db", "t", "p=1"), True),
    (("db", "t", "p=1"), ("db", "t", "p=2"), False),
    (("db", "t", "p=1"), ("db", "u", "p=1"), False),
    (("db", "t"), ("db", "u", "p=1"), False),
    (("db",), ("db2", "t"), False),
    (("db",), ("db",), True),
])
def test_database_table_partition_overlap(locks: LockManager, a: tuple[str, ...], b: tuple[str, ...],
                                          overlap: bool) -> None:
    take(locks, comp(EX, *a))
    assert take(locks, comp(EX, *b)).state == (WAITING if overlap else ACQUIRED)
    # And the other way round.
    fresh = LockManager(TIMEOUT, Clock())
    take(fresh, comp(EX, *b))
    assert take(fresh, comp(EX, *a)).state == (WAITING if overlap else ACQUIRED)


def test_names_compare_case_insensitively(locks: LockManager) -> None:
    take(locks, comp(EX, "DB", "Tbl"))
    assert take(locks, comp(SR, "db", "tbl")).state == WAITING
    assert [(e.dbname, e.tablename) for e in shown(locks, dbname="Db", tablename="TBL")] == [("db", "tbl")] * 2


def test_a_request_is_all_or_nothing(locks: LockManager) -> None:
    blocker = take(locks, comp(EX, "db", "b"))
    both = take(locks, comp(SR, "db", "a"), comp(SR, "db", "b"))
    assert both.state == WAITING
    # Its free component "a" is not held meanwhile.
    assert [e.state for e in shown(locks, dbname="db", tablename="a")] == [WAITING]
    unlock(locks, blocker.lockid)
    assert check(locks, both.lockid) == ACQUIRED
    assert [e.state for e in shown(locks)] == [ACQUIRED, ACQUIRED]
    # Both are held now: a writer of either waits.
    assert take(locks, comp(EX, "db", "a")).state == WAITING
    assert take(locks, comp(SW, "db", "b")).state == ACQUIRED


def test_a_waiting_request_holds_nothing_against_older_ones(locks: LockManager) -> None:
    reader = take(locks, comp(SR, "db", "a"))
    blocker = take(locks, comp(EX, "db", "b"))
    both = take(locks, comp(EX, "db", "a"), comp(EX, "db", "b"))
    assert both.state == WAITING
    unlock(locks, blocker.lockid)
    # "b" is free, "a" is not: nothing of the request is granted, so "b" stays free to the holders.
    assert check(locks, both.lockid) == WAITING
    assert all(e.state == WAITING for e in shown(locks) if e.lockid == both.lockid)
    unlock(locks, reader.lockid)
    assert check(locks, both.lockid) == ACQUIRED


def test_waiting_granted_on_check_lock_after_unlock(locks: LockManager) -> None:
    reader = take(locks, comp(SR, "db", "t"))
    writer = take(locks, comp(EX, "db", "t"))
    assert check(locks, writer.lockid) == WAITING
    unlock(locks, reader.lockid)
    assert check(locks, writer.lockid) == ACQUIRED
    assert check(locks, writer.lockid) == ACQUIRED  # stays granted
    assert take(locks, comp(SR, "db", "t")).state == WAITING


def test_fifo_a_later_request_does_not_jump_an_earlier_waiting_one(locks: LockManager) -> None:
    reader = take(locks, comp(SR, "db", "t"))
    writer = take(locks, comp(EX, "db", "t"))
    assert writer.state == WAITING
    # Compatible with the held reader, but the earlier writer waits for the same table.
    late_reader = take(locks, comp(SR, "db", "t"))
    assert late_reader.state == WAITING
    unlock(locks, reader.lockid)
    # The late reader still waits (now for the writer ahead of it), even if it checks first.
    assert check(locks, late_reader.lockid) == WAITING
    assert check(locks, writer.lockid) == ACQUIRED
    unlock(locks, writer.lockid)
    assert check(locks, late_reader.lockid) == ACQUIRED


def test_a_waiting_lock_does_not_block_a_compatible_later_one(locks: LockManager) -> None:
    # HMS's jumpTable: SHARED_READ keeps looking past a waiting SHARED_WRITE.
    take(locks, comp(SW, "db", "t"))
    waiting_writer = take(locks, comp(SW, "db", "t"))
    assert waiting_writer.state == WAITING
    assert take(locks, comp(SR, "db", "t")).state == ACQUIRED


def test_waiting_locks_queue_in_order(locks: LockManager) -> None:
    first = take(locks, comp(EX, "db", "t"))
    queue = [take(locks, comp(EX, "db", "t")).lockid for _ in range(4)]
    unlock(locks, first.lockid)
    for i, lockid in enumerate(queue):
        # Only the head of the queue is granted, whatever order the others check in.
        for later in reversed(queue[i + 1:]):
            assert check(locks, later) == WAITING
        assert check(locks, lockid) == ACQUIRED
        unlock(locks, lockid)


def test_unlock_of_a_waiting_lock_unblocks_those_behind_it(locks: LockManager) -> None:
    reader = take(locks, comp(SR, "db", "t"))
    writer = take(locks, comp(EX, "db", "t"))
    late_reader = take(locks, comp(SR, "db", "t"))
    assert late_reader.state == WAITING
    unlock(locks, writer.lockid)
    assert check(locks, late_reader.lockid) == ACQUIRED
    assert {e.lockid for e in shown(locks)} == {reader.lockid, late_reader.lockid}


def test_unknown_lock_ids_raise_no_such_lock(locks: LockManager) -> None:
    with pytest.raises(hms.NoSuchLockException, match="No such lock lockid:42"):
        check(locks, 42)
    with pytest.raises(hms.NoSuchLockException, match="No such lock lockid:42"):
        unlock(locks, 42)
    with pytest.raises(hms.NoSuchLockException, match="No such lock: lockid:42"):
        locks.heartbeat(hms.HeartbeatRequest(lockid=42))
    held = take(locks, comp(SR, "db", "t"))
    unlock(locks, held.lockid)
    with pytest.raises(hms.NoSuchLockException):
        unlock(locks, held.lockid)


def test_transactions_are_unknown(locks: LockManager) -> None:
    with pytest.raises(hms.NoSuchTxnException, match="No such transaction txnid:7"):
        locks.lock(request(comp(SR, "db", "t"), txnid=7))
    assert shown(locks) == []
    held = take(locks, comp(SR, "db", "t"))
    with pytest.raises(hms.NoSuchTxnException, match="txnid:7"):
        locks.heartbeat(hms.HeartbeatRequest(lockid=held.lockid, txnid=7))
    # heartbeat with nothing to beat is a no-op, as in HMS.
    locks.heartbeat(hms.HeartbeatRequest(lockid=0, txnid=0))
    locks.heartbeat(hms.HeartbeatRequest())


@pytest.mark.parametrize("bad", [
    hms.LockRequest(component=[], user="u", hostname="h"),
    hms.LockRequest(component=None, user="u", hostname="h"),
    request(comp(SR, "")),
    request(hms.LockComponent(type=99, level=hms.LockLevel.DB, dbname="db")),
    request(hms.LockComponent(type=SR, level=None, dbname="db")),
    request(hms.LockComponent(type=SR, level=hms.LockLevel.DB, dbname="db", tablename="t")),
    request(hms.LockComponent(type=SR, level=hms.LockLevel.TABLE, dbname="db")),
    request(hms.LockComponent(type=SR, level=hms.LockLevel.PARTITION, dbname="db", tablename="t")),
    request(comp(SR, "db", "t"), hms.LockComponent(type=SR, level=hms.LockLevel.TABLE, dbname="db")),
])
def test_bad_requests_are_refused_and_change_nothing(locks: LockManager, bad: hms.LockRequest) -> None:
    with pytest.raises(hms.MetaException):
        locks.lock(bad)
    assert shown(locks) == []
    assert take(locks, comp(EX, "db", "t")).lockid == 1


def test_timeout_must_be_positive() -> None:
    with pytest.raises(InvalidArgumentError):
        LockManager(0)


# ---------------------------------------------------------------- expiry and heartbeats

def test_a_lock_without_heartbeat_expires(locks: LockManager, clock: Clock) -> None:
    held = take(locks, comp(EX, "db", "t"))
    clock.now += TIMEOUT
    assert locks.expire() == 0  # exactly the timeout: not yet older than it
    clock.now += 1
    assert locks.expire() == 1
    assert shown(locks) == []
    with pytest.raises(hms.NoSuchLockException):
        check(locks, held.lockid)
    with pytest.raises(hms.NoSuchLockException):
        locks.heartbeat(hms.HeartbeatRequest(lockid=held.lockid))
    assert take(locks, comp(EX, "db", "t")).state == ACQUIRED


def test_expiry_is_lazy(locks: LockManager, clock: Clock) -> None:
    held = take(locks, comp(EX, "db", "t"))
    clock.now += TIMEOUT + 1
    # No expire() call: the next lock call drops the dead lock first.
    assert take(locks, comp(EX, "db", "t")).state == ACQUIRED
    with pytest.raises(hms.NoSuchLockException):
        unlock(locks, held.lockid)


def test_heartbeat_and_check_lock_keep_a_lock(locks: LockManager, clock: Clock) -> None:
    beaten = take(locks, comp(EX, "db", "a"))
    checked = take(locks, comp(EX, "db", "b"))
    for _ in range(5):
        clock.now += TIMEOUT - 1
        locks.heartbeat(hms.HeartbeatRequest(lockid=beaten.lockid))
        assert check(locks, checked.lockid) == ACQUIRED
    assert locks.expire() == 0
    beat = next(e for e in shown(locks) if e.lockid == beaten.lockid)
    assert beat.heartbeatCount == 5
    assert beat.lastheartbeat == int((clock.now + 1.7e9) * 1000)


def test_an_expired_holder_lets_a_waiter_in(locks: LockManager, clock: Clock) -> None:
    take(locks, comp(EX, "db", "t"))
    waiter = take(locks, comp(EX, "db", "t"))
    clock.now += TIMEOUT / 2 + 1
    assert check(locks, waiter.lockid) == WAITING
    clock.now += TIMEOUT / 2 + 1
    # The holder went silent; the waiter kept polling.
    assert check(locks, waiter.lockid) == ACQUIRED


def test_a_waiter_that_stops_polling_expires(locks: LockManager, clock: Clock) -> None:
    holder = take(locks, comp(EX, "db", "t"))
    waiter = take(locks, comp(EX, "db", "t"))
    for _ in range(2):
        clock.now += TIMEOUT / 2 + 1
        locks.heartbeat(hms.HeartbeatRequest(lockid=holder.lockid))
    with pytest.raises(hms.NoSuchLockException):
        check(locks, waiter.lockid)
    assert [e.lockid for e in shown(locks)] == [holder.lockid]


# ---------------------------------------------------------------- show_locks

def test_show_locks_lists_and_filters(locks: LockManager) -> None:
    db_lock = take(locks, comp(SR, "db"))
    table = take(locks, comp(SW, "db", "t"), comp(SR, "db", "u"))
    part = take(locks, comp(EX, "db", "t", "p=1"))
    other = take(locks, comp(SR, "other", "t"))
    everything = shown(locks)
    assert [(e.lockid, e.dbname, e.tablename, e.partname, e.type) for e in everything] == [
        (db_lock.lockid, "db", None, None, SR),
        (table.lockid, "db", "t", None, SW),
        (table.lockid, "db", "u", None, SR),
        (part.lockid, "db", "t", "p=1", EX),
        (other.lockid, "other", "t", None, SR),
    ]
    assert len({e.lockIdInternal for e in everything}) == 5
    assert {e.lockid for e in shown(locks, dbname="db")} == {db_lock.lockid, table.lockid, part.lockid}
    assert [e.lockid for e in shown(locks, dbname="db", tablename="t")] == [table.lockid, part.lockid]
    assert [e.lockid for e in shown(locks, dbname="db", tablename="t", partname="p=1")] == [part.lockid]
    assert shown(locks, dbname="nope") == []
    assert len(shown(locks, isExtended=True)) == 5


def test_show_locks_elements_carry_state_owner_and_blocker(locks: LockManager) -> None:
    holder = take(locks, comp(EX, "db", "t"))
    waiter = locks.lock(hms.LockRequest(component=[comp(SR, "db", "t")], user="bob", hostname="h2",
                                        agentInfo="spark"))
    held, waiting = shown(locks)
    assert (held.state, held.user, held.hostname, held.agentInfo) == (ACQUIRED, "alice", "h1", "test")
    assert held.acquiredat is not None and held.blockedByExtId is None
    assert held.txnid is None
    assert (waiting.lockid, waiting.state, waiting.user, waiting.hostname) == (waiter.lockid, WAITING, "bob", "h2")
    assert waiting.acquiredat is None
    assert (waiting.blockedByExtId, waiting.blockedByIntId) == (holder.lockid, held.lockIdInternal)
    unlock(locks, holder.lockid)
    check(locks, waiter.lockid)
    (granted,) = shown(locks)
    assert granted.state == ACQUIRED and granted.blockedByExtId is None and granted.acquiredat is not None


# ---------------------------------------------------------------- threads

def test_concurrent_exclusive_locks_never_overlap(clock: Clock) -> None:
    locks = LockManager(TIMEOUT, clock)
    inside = 0
    most = 0
    guard = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        nonlocal inside, most
        try:
            for _ in range(50):
                response = locks.lock(request(comp(EX, "db", "t")))
                while response.state != ACQUIRED:
                    response = locks.check_lock(hms.CheckLockRequest(lockid=response.lockid))
                with guard:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0)  # let another thread run while this one is inside
                with guard:
                    inside -= 1
                locks.unlock(hms.UnlockRequest(lockid=response.lockid))
        except BaseException as e:  # surfaced below: a thread's failure must fail the test
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert most == 1
    assert shown(locks) == []


def test_concurrent_requests_get_distinct_ids(locks: LockManager) -> None:
    ids: list[int] = []
    guard = threading.Lock()

    def worker(n: int) -> None:
        for i in range(100):
            lockid = locks.lock(request(comp(SR, f"db{n}", f"t{i}"))).lockid
            with guard:
                ids.append(lockid)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(ids) == list(range(1, 601))
    assert all(e.state == ACQUIRED for e in shown(locks))
