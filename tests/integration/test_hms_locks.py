"""The HMS lock API through catalogd's endpoint: plain HMS clients (hmsclient) lock, wait, heartbeat, unlock.

The session daemon's default catalog is an embedded HMS 2.3 on Derby: its transaction manager
(``TxnHandler``, on the transaction tables catalogd created) keeps these locks, with HMS's own
rules. A memory default catalog has no metastore: catalogd keeps its locks in memory
(``test_a_lock_without_heartbeat_is_released``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ttypes
from polling import holds_for, wait_until

from .helpers import free_port, hms_connection

pytestmark = pytest.mark.integration

SR = ttypes.LockType.SHARED_READ
SW = ttypes.LockType.SHARED_WRITE
EX = ttypes.LockType.EXCLUSIVE
ACQUIRED = ttypes.LockState.ACQUIRED
WAITING = ttypes.LockState.WAITING


def lock_request(kind: int, db: str, table: str | None, user: str,
                 partition: str | None = None) -> ttypes.LockRequest:
    level = ttypes.LockLevel.PARTITION if partition else ttypes.LockLevel.TABLE if table else ttypes.LockLevel.DB
    component = ttypes.LockComponent(type=kind, level=level, dbname=db, tablename=table, partitionname=partition)
    return ttypes.LockRequest(component=[component], txnid=0, user=user, hostname="test-host", agentInfo="pytest")


def check(client: Any, lockid: int) -> int:
    return client.check_lock(ttypes.CheckLockRequest(lockid=lockid)).state


@pytest.fixture
def hms_table(hms_address: tuple[str, int], unique_name: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    """(db, table): a database and a partitioned table created through a plain HMS client."""
    db = unique_name("lockdb")
    with hms_connection(hms_address, "owner") as c:
        c.create_database(ttypes.Database(name=db, description="locks test", parameters={}))
        serde = ttypes.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                                 parameters={})
        sd = ttypes.StorageDescriptor(
            cols=[ttypes.FieldSchema(name="id", type="int")],
            inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            serdeInfo=serde, parameters={})
        c.create_table(ttypes.Table(tableName="t", dbName=db, owner="owner", sd=sd,
                                    partitionKeys=[ttypes.FieldSchema(name="ds", type="string")],
                                    parameters={}, tableType="MANAGED_TABLE"))
        assert c.get_table(db, "t").tableName == "t"
    yield db, "t"
    with hms_connection(hms_address, "owner") as c:
        c.drop_database(db, True, True)


def test_shared_and_exclusive_locks_between_two_connections(hms_address, hms_table):
    db, table = hms_table
    with hms_connection(hms_address, "alice") as alice, hms_connection(hms_address, "bob") as bob:
        read = alice.lock(lock_request(SR, db, table, "alice"))
        assert read.state == ACQUIRED
        # A second reader shares the table; a writer waits for both.
        other_read = bob.lock(lock_request(SR, db.upper(), table.upper(), "bob"))
        assert other_read.state == ACQUIRED
        write = bob.lock(lock_request(EX, db, table, "bob"))
        assert write.state == WAITING
        assert check(bob, write.lockid) == WAITING
        # HMS 2.3 lets a later reader pass a waiting writer (its jumpTable: a waiting exclusive
        # lock does not stop a shared read).
        late_read = alice.lock(lock_request(SR, db, table, "alice"))
        assert late_read.state == ACQUIRED
        # A lock elsewhere in the database is free; an exclusive one on the whole database waits.
        assert alice.lock(lock_request(EX, db, "elsewhere", "alice")).state == ACQUIRED
        whole_db = alice.lock(lock_request(EX, db, None, "alice"))
        assert whole_db.state == WAITING
        alice.unlock(ttypes.UnlockRequest(lockid=whole_db.lockid))  # a waiting lock may be unlocked

        shown = bob.show_locks(ttypes.ShowLocksRequest(dbname=db, tablename=table))
        states = {e.lockid: (e.state, e.type, e.user) for e in shown.locks}
        assert states == {
            read.lockid: (ACQUIRED, SR, "alice"),
            other_read.lockid: (ACQUIRED, SR, "bob"),
            write.lockid: (WAITING, EX, "bob"),
            late_read.lockid: (ACQUIRED, SR, "alice"),
        }
        waiting = next(e for e in shown.locks if e.lockid == write.lockid)
        assert waiting.blockedByExtId in (read.lockid, other_read.lockid)
        assert all(e.dbname == db and e.tablename == table for e in shown.locks)

        alice.unlock(ttypes.UnlockRequest(lockid=read.lockid))
        assert check(bob, write.lockid) == WAITING
        bob.heartbeat(ttypes.HeartbeatRequest(lockid=write.lockid))
        bob.unlock(ttypes.UnlockRequest(lockid=other_read.lockid))
        # HMS 2.3 checks a waiting lock against the earlier ones only (lower ids): the reader
        # that passed it does not hold it back.
        assert check(bob, write.lockid) == ACQUIRED
        alice.unlock(ttypes.UnlockRequest(lockid=late_read.lockid))
        # A new reader waits while the writer holds the table.
        next_read = alice.lock(lock_request(SR, db, table, "alice"))
        assert next_read.state == WAITING
        bob.unlock(ttypes.UnlockRequest(lockid=write.lockid))
        assert check(alice, next_read.lockid) == ACQUIRED
        alice.unlock(ttypes.UnlockRequest(lockid=next_read.lockid))
        assert [e.tablename for e in alice.show_locks(ttypes.ShowLocksRequest(dbname=db)).locks] == ["elsewhere"]


def test_partition_locks_and_errors(hms_address, hms_table):
    db, table = hms_table
    with hms_connection(hms_address, "alice") as alice, hms_connection(hms_address, "bob") as bob:
        p1 = alice.lock(lock_request(EX, db, table, "alice", partition="ds=1"))
        assert p1.state == ACQUIRED
        assert bob.lock(lock_request(EX, db, table, "bob", partition="ds=2")).state == ACQUIRED
        whole = bob.lock(lock_request(SW, db, table, "bob"))
        assert whole.state == WAITING
        listed = bob.show_locks(ttypes.ShowLocksRequest(dbname=db, tablename=table, partname="ds=1"))
        assert [e.lockid for e in listed.locks] == [p1.lockid]

        alice.unlock(ttypes.UnlockRequest(lockid=p1.lockid))
        # HMS 2.3's unlock is idempotent: a lock gone already is no error.
        alice.unlock(ttypes.UnlockRequest(lockid=p1.lockid))
        with pytest.raises(ttypes.NoSuchLockException, match="No such lock"):
            alice.check_lock(ttypes.CheckLockRequest(lockid=p1.lockid))
        with pytest.raises(ttypes.NoSuchLockException):
            alice.heartbeat(ttypes.HeartbeatRequest(lockid=p1.lockid))
        # A lock in a transaction the metastore never opened is refused.
        in_txn = lock_request(SR, db, table, "alice")
        in_txn.txnid = 12345
        with pytest.raises(ttypes.NoSuchTxnException, match="txnid:12345"):
            alice.lock(in_txn)
        for e in bob.show_locks(ttypes.ShowLocksRequest(dbname=db)).locks:
            bob.unlock(ttypes.UnlockRequest(lockid=e.lockid))


def test_a_lock_without_heartbeat_is_released(daemon_factory, tmp_path):
    daemon = daemon_factory(
        catalogs=[{"name": "scratch", "type": "memory", "default": True}],
        extra={"server": {"host": "127.0.0.1", "port": free_port(), "http-port": free_port(),
                          "hms-port": free_port(), "data-dir": str(tmp_path / "locks-data"),
                          "hms-lock-timeout": "3s"}},
        name="locks")
    with hms_connection(daemon.hms_address, "alice") as alice, hms_connection(daemon.hms_address, "bob") as bob:
        silent = alice.lock(lock_request(EX, "db", "t", "alice"))
        kept = alice.lock(lock_request(EX, "db", "u", "alice"))
        waiter = bob.lock(lock_request(EX, "db", "t", "bob"))
        assert (silent.state, kept.state, waiter.state) == (ACQUIRED, ACQUIRED, WAITING)

        def beat() -> bool:
            alice.heartbeat(ttypes.HeartbeatRequest(lockid=kept.lockid))
            return True

        def beat_both() -> bool:
            bob.heartbeat(ttypes.HeartbeatRequest(lockid=waiter.lockid))
            return beat()

        # bob keeps polling; alice's silent lock goes, and bob gets the table.
        wait_until(lambda: beat() and check(bob, waiter.lockid) == ACQUIRED, timeout=60,
                   what="the waiter granted after the silent holder's lock expired")
        with pytest.raises(ttypes.NoSuchLockException):
            alice.check_lock(ttypes.CheckLockRequest(lockid=silent.lockid))
        # A heartbeated lock stays for longer than the timeout.
        holds_for(beat_both, 3, what="a heartbeated lock stays")
        assert {e.lockid for e in alice.show_locks(ttypes.ShowLocksRequest()).locks} == {kept.lockid, waiter.lockid}
