"""LockManager under abuse: ids that never repeat (epochs), a cost set by the locks on a call's
objects (the index), and bounded requests and clients (issue 21, item 2)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as hms

from catalogd.hms.locks import EPOCH_FILE, ID_BITS, LockManager, next_epoch

SR = hms.LockType.SHARED_READ
EX = hms.LockType.EXCLUSIVE
ACQUIRED = hms.LockState.ACQUIRED
WAITING = hms.LockState.WAITING


def comp(kind: int, db: str, table: str | None = None, part: str | None = None) -> hms.LockComponent:
    level = hms.LockLevel.PARTITION if part else hms.LockLevel.TABLE if table else hms.LockLevel.DB
    return hms.LockComponent(type=kind, level=level, dbname=db, tablename=table, partitionname=part)


def request(*components: hms.LockComponent) -> hms.LockRequest:
    return hms.LockRequest(component=list(components), txnid=0, user="alice", hostname="h1", agentInfo="test")


# ---------------------------------------------------------------- epochs

def test_each_start_takes_a_new_epoch_recorded_in_the_data_dir(tmp_path: Path) -> None:
    assert [next_epoch(tmp_path) for _ in range(3)] == [1, 2, 3]
    assert (tmp_path / EPOCH_FILE).read_text() == "3\n"
    assert not list(tmp_path.glob(".*tmp"))


def test_an_unreadable_epoch_file_still_gives_a_new_epoch(tmp_path: Path) -> None:
    (tmp_path / EPOCH_FILE).write_text("garbage")
    epoch = next_epoch(tmp_path)
    assert epoch > 1
    assert next_epoch(tmp_path) == epoch + 1


def test_ids_of_an_earlier_start_are_unknown_not_someone_elses(tmp_path: Path) -> None:
    first = LockManager(300, epoch=lambda: next_epoch(tmp_path))
    old = first.lock(request(comp(EX, "db", "t")))
    assert old.state == ACQUIRED and old.lockid >> ID_BITS == 1
    # The daemon restarts: a new manager, the old holder still has its id.
    second = LockManager(300, epoch=lambda: next_epoch(tmp_path))
    new = second.lock(request(comp(EX, "db", "t")))
    assert new.state == ACQUIRED
    assert new.lockid != old.lockid
    for call in (lambda: second.check_lock(hms.CheckLockRequest(lockid=old.lockid)),
                 lambda: second.heartbeat(hms.HeartbeatRequest(lockid=old.lockid)),
                 lambda: second.unlock(hms.UnlockRequest(lockid=old.lockid))):
        with pytest.raises(hms.NoSuchLockException, match="before catalogd restarted"):
            call()
    # The new holder's lock is untouched by the old holder's calls.
    assert second.check_lock(hms.CheckLockRequest(lockid=new.lockid)).state == ACQUIRED


def test_ids_move_to_a_new_epoch_when_one_runs_out() -> None:
    epochs = iter([5, 9])
    locks = LockManager(300, epoch=lambda: next(epochs), id_bits=2)
    ids = [locks.lock(request(comp(SR, "db", f"t{i}"))).lockid for i in range(5)]
    assert ids == [5 << 2 | 1, 5 << 2 | 2, 5 << 2 | 3, 9 << 2 | 1, 9 << 2 | 2]
    assert ids == sorted(ids)  # later requests keep larger ids: FIFO among waiters still holds


# ---------------------------------------------------------------- the index

class CountingDict(dict[int, Any]):
    """The manager's lock table, counting the locks a call looks at."""

    looked_at = 0

    def __getitem__(self, key: int) -> Any:
        CountingDict.looked_at += 1
        return super().__getitem__(key)


def test_a_lock_call_looks_only_at_the_locks_on_its_objects() -> None:
    locks = LockManager(300)
    for i in range(5000):
        assert locks.lock(request(comp(EX, "busy", f"t{i}"))).state == ACQUIRED
    mine = locks.lock(request(comp(SR, "quiet", "t")))
    counting = CountingDict(locks._locks)
    locks._locks = counting
    CountingDict.looked_at = 0
    assert locks.lock(request(comp(EX, "quiet", "t"))).state == WAITING
    assert locks.lock(request(comp(EX, "busy", "t17"))).state == WAITING
    assert locks.lock(request(comp(SR, "busy", "t18", "p=1"))).state == WAITING
    assert locks.check_lock(hms.CheckLockRequest(lockid=mine.lockid)).state == ACQUIRED
    # Per call: the oldest lock (is it expired?) and the conflicting ones on its objects; nothing
    # of the 5,000 others.
    assert CountingDict.looked_at <= 4 + 3


def test_a_database_lock_sees_every_lock_inside_and_partitions_see_their_table() -> None:
    locks = LockManager(300)
    part = locks.lock(request(comp(EX, "db", "t", "p=1")))
    assert locks.lock(request(comp(SR, "db"))).state == WAITING
    assert locks.lock(request(comp(SR, "db", "t"))).state == WAITING
    assert locks.lock(request(comp(SR, "db", "t", "p=2"))).state == ACQUIRED
    whole = locks.lock(request(comp(EX, "db2", "u")))
    assert locks.lock(request(comp(SR, "db2", "u", "p=1"))).state == WAITING
    assert locks.lock(request(comp(SR, "db2", "v", "p=1"))).state == ACQUIRED
    shown = locks.show_locks(hms.ShowLocksRequest()).locks
    waiting = [e for e in shown if e.state == WAITING]
    assert [e.blockedByExtId for e in waiting] == [part.lockid, part.lockid, whole.lockid]


def test_the_index_is_emptied_as_locks_go(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    locks = LockManager(10, lambda: now[0])
    ids = [locks.lock(request(comp(SR, f"db{i % 7}", f"t{i}", f"p={i}"), comp(EX, f"x{i}"))).lockid
           for i in range(200)]
    for lockid in ids[:100]:
        locks.unlock(hms.UnlockRequest(lockid=lockid))
    now[0] = 11
    assert locks.expire() == 100
    assert locks._root.children == {}
    assert locks.held_by("") == 0


# ---------------------------------------------------------------- bounds

def test_a_request_over_the_component_bound_is_refused_before_the_mutex() -> None:
    locks = LockManager(300, max_components=100)
    huge = request(*[comp(EX, "db", "t", f"p={i}") for i in range(50_000)])
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            locks.lock(huge)
        except BaseException as e:  # examined below
            outcome.append(e)

    with locks._mutex:  # another call holds the mutex: the refusal must not wait for it
        thread = threading.Thread(target=call)
        thread.start()
        thread.join(timeout=30)
        assert not thread.is_alive()
    assert isinstance(outcome[0], hms.MetaException)
    assert "50000 components" in outcome[0].message and "server.hms-max-lock-components" in outcome[0].message
    assert locks.show_locks(hms.ShowLocksRequest()).locks == []
    assert locks.lock(request(*[comp(SR, "db", "t", f"p={i}") for i in range(100)])).state == ACQUIRED


def test_one_clients_components_are_bounded() -> None:
    now = [0.0]
    locks = LockManager(10, lambda: now[0], max_per_client=5)
    first = locks.lock(request(comp(SR, "db", "a"), comp(SR, "db", "b"), comp(SR, "db", "c")), client="10.0.0.1")
    locks.lock(request(comp(SR, "db", "d"), comp(SR, "db", "e")), client="10.0.0.1")
    with pytest.raises(hms.MetaException, match=r"server\.hms-max-locks-per-client"):
        locks.lock(request(comp(SR, "db", "f")), client="10.0.0.1")
    assert locks.held_by("10.0.0.1") == 5
    # Another client is not affected; unlocking (or expiry) gives the room back.
    assert locks.lock(request(comp(SR, "db", "f")), client="10.0.0.2").state == ACQUIRED
    locks.unlock(hms.UnlockRequest(lockid=first.lockid))
    assert locks.lock(request(comp(SR, "db", "f")), client="10.0.0.1").state == ACQUIRED
    now[0] = 11
    assert locks.lock(request(*[comp(SR, "db", f"g{i}") for i in range(5)]), client="10.0.0.1").state == ACQUIRED


def test_many_components_on_one_object_cost_one_look() -> None:
    locks = LockManager(300)
    holder = locks.lock(request(*[comp(SR, "db", "t") for _ in range(5000)]))
    counting = CountingDict(locks._locks)
    locks._locks = counting
    CountingDict.looked_at = 0
    waiter = locks.lock(request(*[comp(EX, "db", "t") for _ in range(5000)]))
    assert waiter.state == WAITING
    assert locks.check_lock(hms.CheckLockRequest(lockid=waiter.lockid)).state == WAITING
    assert CountingDict.looked_at <= 2 + 2  # per call: the oldest lock (expiry) and the holder
    locks.unlock(hms.UnlockRequest(lockid=holder.lockid))
    assert locks.check_lock(hms.CheckLockRequest(lockid=waiter.lockid)).state == ACQUIRED
