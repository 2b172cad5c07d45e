"""The HMS lock API through catalogd's endpoint: plain HMS clients (hmsclient) lock, wait, heartbeat, unlock.

The session daemon's default catalog is an embedded HMS 2.3 on Derby: its transaction manager
(``TxnHandler``, on the transaction tables catalogd created) keeps these locks, with HMS's own
rules. A memory default catalog has no metastore: catalogd keeps its locks in memory
(``test_a_lock_without_heartbeat_is_released``).

With auth on, a lock belongs to the principal that took it (issue 31 row 4): ``guarded`` is a
daemon of each kind with auth on (no JVM of its own: the hive one's default catalog is the
session daemon's metastore, which keeps its locks), shared by the module's tests of that rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from polling import holds_for, wait_until

from catalogd.client import CatalogClient
from catalogd.hive_idl import ttypes

from .helpers import Daemon, free_port, hms_connection, start_daemon, write_config

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


# ---------------------------------------------------------------- locks belong to their holders (auth on)

#: reader and writer name themselves with set_ugi, trusted up to writer (auth.trust-asserted-users):
#: what this rule is about is the lock, not how the caller proved its name.
GUARDED_AUTH = {"enabled": True, "trust-asserted-users": "writer",
                "principals": [{"name": name} for name in ("reader", "writer", "writer2")],
                "grants": [{"principal": "reader", "catalog": "*", "role": "reader"},
                           {"principal": "writer", "catalog": "*", "role": "writer"},
                           {"principal": "writer2", "catalog": "*", "role": "writer"}]}


@dataclass
class Guarded:
    """An auth-on daemon whose default catalog is ``kind`` (memory: catalogd keeps the locks; hive:
    the metastore does)."""

    kind: str
    daemon: Daemon
    tmp: Path
    starts: int = 1

    def restart(self) -> None:
        code = self.daemon.stop()
        assert code == 0, f"the daemon exited with {code}; log:\n{self.daemon.log()}"
        self.starts += 1
        self.daemon = start_daemon(self.daemon.config_path, self.daemon.data_dir,
                                   self.tmp / f"guarded-{self.starts}.log")


@pytest.fixture(scope="module", params=["memory", "hive"])
def guarded(request: pytest.FixtureRequest, daemon: Daemon,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    kind = request.param
    if kind == "hive":
        with CatalogClient(daemon.address) as c:
            metastore = c.get_catalog("main").metastore
        default: dict[str, Any] = {"name": "main", "type": "hive", "default": True,
                                   "connection": {"hive.metastore.uris": metastore}}
    else:
        default = {"name": "main", "type": "memory", "default": True}
    tmp = tmp_path_factory.mktemp(f"guarded-{kind}")
    config = write_config(tmp / "guarded.yaml", port=free_port(), http_port=free_port(), data_dir=tmp / "data",
                          catalogs=[default], extra={"auth": GUARDED_AUTH})
    holder = Guarded(kind, start_daemon(config, tmp / "data", tmp / "guarded-1.log"), tmp)
    yield holder
    code = holder.daemon.stop()
    assert code == 0, f"the daemon exited with {code}; log:\n{holder.daemon.log()}"


def _refused_calls(client: Any, lockid: int) -> dict[str, Callable[[], object]]:
    return {"unlock": lambda: client.unlock(ttypes.UnlockRequest(lockid=lockid)),
            "heartbeat": lambda: client.heartbeat(ttypes.HeartbeatRequest(lockid=lockid)),
            "check_lock": lambda: client.check_lock(ttypes.CheckLockRequest(lockid=lockid))}


def test_a_reader_cannot_unlock_heartbeat_or_check_a_writer_s_lock(
        guarded: Guarded, unique_name: Callable[[str], str]) -> None:
    """Issue 31 row 4: a reader listed a writer's EXCLUSIVE lock and unlocked it; the writer's
    check_lock then found no lock (an Iceberg-style commit lost its mutual exclusion)."""
    db = unique_name("victimlocks")
    address = guarded.daemon.hms_address
    with hms_connection(address, "writer") as writer, hms_connection(address, "reader") as reader, \
            hms_connection(address, "writer2") as other:
        # The request claims another user: the lock is recorded under the principal that took it.
        taken = writer.lock(lock_request(EX, db, "t", "someone-else"))
        assert taken.state == ACQUIRED
        shown = reader.show_locks(ttypes.ShowLocksRequest(dbname=db)).locks
        assert [(e.lockid, e.type) for e in shown] == [(taken.lockid, EX)]
        for intruder, name in ((reader, "reader"), (other, "writer2")):
            for method, call in _refused_calls(intruder, taken.lockid).items():
                with pytest.raises(ttypes.NoSuchLockException,
                                   match=rf"permission denied: lockid:{taken.lockid} is held by 'writer'; only its "
                                         rf"holder or an admin of catalog main may .* it, not '{name}'"):
                    call()
                assert check(writer, taken.lockid) == ACQUIRED, f"{name}'s {method} reached the lock"
        assert [e.user for e in reader.show_locks(ttypes.ShowLocksRequest(dbname=db)).locks] == ["writer"]
        # The holder's own calls pass, and a waiting lock of another writer stays waiting.
        writer.heartbeat(ttypes.HeartbeatRequest(lockid=taken.lockid))
        waiting = other.lock(lock_request(EX, db, "t", "writer2"))
        assert waiting.state == WAITING
        assert check(other, waiting.lockid) == WAITING
        writer.unlock(ttypes.UnlockRequest(lockid=taken.lockid))
        assert check(other, waiting.lockid) == ACQUIRED
        other.unlock(ttypes.UnlockRequest(lockid=waiting.lockid))
        assert reader.show_locks(ttypes.ShowLocksRequest(dbname=db)).locks == []


def test_a_metastore_lock_s_holder_is_known_after_a_restart(
        guarded: Guarded, unique_name: Callable[[str], str]) -> None:
    """The metastore keeps its locks across catalogd's restart: their holder is read back from it
    (HIVE_LOCKS.HL_USER), so the rule still holds. (catalogd's own memory locks die with it.)"""
    if guarded.kind != "hive":
        pytest.skip("catalogd's in-memory locks do not outlive a restart (test_hms_abuse)")
    db = unique_name("restartlocks")
    with hms_connection(guarded.daemon.hms_address, "writer") as writer:
        taken = writer.lock(lock_request(EX, db, "t", "writer"))
        assert taken.state == ACQUIRED
    guarded.restart()
    address = guarded.daemon.hms_address
    with hms_connection(address, "writer") as writer, hms_connection(address, "reader") as reader:
        for call in _refused_calls(reader, taken.lockid).values():
            with pytest.raises(ttypes.NoSuchLockException, match="is held by 'writer'"):
                call()
        assert check(writer, taken.lockid) == ACQUIRED
        writer.unlock(ttypes.UnlockRequest(lockid=taken.lockid))
        # A lock the metastore does not have is answered as HMS would, without reaching it.
        with pytest.raises(ttypes.NoSuchLockException, match="No such lock"):
            reader.check_lock(ttypes.CheckLockRequest(lockid=taken.lockid))
        reader.unlock(ttypes.UnlockRequest(lockid=taken.lockid))  # a no-op, as in HMS 2.3
