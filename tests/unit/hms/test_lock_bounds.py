"""LockManager under abuse: ids that never repeat (epochs), a cost set by the locks on a call's
objects (the index), and bounded requests and clients (issue 21, item 2)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from catalogd.hive_idl import ttypes as hms
from catalogd.hms.locks import EPOCH_FILE, ID_BITS, Holder, LockManager, next_epoch

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


def test_one_connections_components_are_bounded_and_not_its_hosts() -> None:
    """Issue 31 row 6: the bound was per client host, so one client locked out every other one
    on its host; it is per connection now (and per principal, below)."""
    now = [0.0]
    locks = LockManager(10, lambda: now[0], max_per_connection=5)
    first = locks.lock(request(comp(SR, "db", "a"), comp(SR, "db", "b"), comp(SR, "db", "c")),
                       connection="10.0.0.1:5000#1")
    locks.lock(request(comp(SR, "db", "d"), comp(SR, "db", "e")), connection="10.0.0.1:5000#1")
    with pytest.raises(hms.MetaException, match=r"server\.hms-max-locks-per-connection"):
        locks.lock(request(comp(SR, "db", "f")), connection="10.0.0.1:5000#1")
    assert locks.held_by("10.0.0.1:5000#1") == 5
    # Another connection, from the same host, is not affected.
    for n in range(5):
        assert locks.lock(request(comp(SR, "db", f"f{n}")), connection="10.0.0.1:5001#2").state == ACQUIRED
    # Unlocking (or expiry) gives the room back.
    locks.unlock(hms.UnlockRequest(lockid=first.lockid))
    assert locks.lock(request(comp(SR, "db", "f")), connection="10.0.0.1:5000#1").state == ACQUIRED
    now[0] = 11
    assert locks.lock(request(*[comp(SR, "db", f"g{i}") for i in range(5)]),
                      connection="10.0.0.1:5000#1").state == ACQUIRED


def test_one_principals_components_are_bounded_over_its_connections() -> None:
    locks = LockManager(10, max_per_connection=5, max_per_principal=8)
    for n in range(4):
        locks.lock(request(comp(SR, "db", f"m{n}"), comp(SR, "db", f"n{n}")), connection=f"c{n}", principal="mallory")
    assert locks.held_by_principal("mallory") == 8
    with pytest.raises(hms.MetaException, match=r"mallory's locks have 8 .*server\.hms-max-locks-per-principal"):
        locks.lock(request(comp(SR, "db", "more")), connection="c9", principal="mallory")
    # Another principal, on its own connection, still locks.
    assert locks.lock(request(comp(SR, "db", "t")), connection="c10", principal="alice").state == ACQUIRED
    # With auth off there is no principal: only the connection and the global bounds count.
    assert locks.lock(request(comp(SR, "db", "u")), connection="c11").state == ACQUIRED


def test_all_components_together_are_bounded() -> None:
    locks = LockManager(10, max_per_connection=5, max_per_principal=5, max_total=6)
    held = locks.lock(request(*[comp(SR, "db", f"t{i}") for i in range(4)]), connection="c1", principal="a")
    locks.lock(request(comp(SR, "db", "u"), comp(SR, "db", "v")), connection="c2", principal="b")
    with pytest.raises(hms.MetaException, match=r"server\.hms-max-locks\)"):
        locks.lock(request(comp(SR, "db", "w")), connection="c3", principal="c")
    locks.unlock(hms.UnlockRequest(lockid=held.lockid))
    assert locks.lock(request(comp(SR, "db", "w")), connection="c3", principal="c").state == ACQUIRED


def test_a_lock_knows_its_holder_and_its_calls_ask_first() -> None:
    locks = LockManager(10)
    taken = locks.lock(request(comp(EX, "db", "t"), comp(SR, "other", "u")), connection="c1", principal="writer")
    assert locks.holder(taken.lockid) == Holder("writer", frozenset({"db", "other"}))
    assert locks.holder(taken.lockid + 1) is None

    def refuse(holder: Holder) -> None:
        raise PermissionError(holder.owner)

    for call in (lambda: locks.unlock(hms.UnlockRequest(lockid=taken.lockid), allow=refuse),
                 lambda: locks.check_lock(hms.CheckLockRequest(lockid=taken.lockid), allow=refuse),
                 lambda: locks.heartbeat(hms.HeartbeatRequest(lockid=taken.lockid), allow=refuse)):
        with pytest.raises(PermissionError, match="writer"):
            call()
    # Refused before anything changed: the lock is still held, with no extra heartbeat.
    [element] = [e for e in locks.show_locks(hms.ShowLocksRequest()).locks if e.dbname == "db"]
    assert (element.state, element.heartbeatCount) == (ACQUIRED, 0)
    seen: list[Holder] = []
    locks.unlock(hms.UnlockRequest(lockid=taken.lockid), allow=seen.append)
    assert seen == [Holder("writer", frozenset({"db", "other"}))]
    assert locks.show_locks(hms.ShowLocksRequest()).locks == []


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
