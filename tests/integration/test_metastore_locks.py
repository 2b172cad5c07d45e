"""HMS locks kept by the metastore: shared by two daemons on one PostgreSQL database, surviving restarts.

Two daemons (each with its own embedded HMS, a JVM) on one PostgreSQL database serve the
module; their locks are the metastore's (HMS 2.3's TxnHandler on the transaction tables
catalogd created). One SIGKILL and restart of daemon A covers, at once: an exclusive lock taken
through A keeps B's same request waiting across A's death and restart, and is then released by
its heartbeat timeout; Iceberg-pattern writers on both daemons (lock, read the pointer,
``alter_table``, unlock) lose no acknowledged commit while A dies and comes back. The daemons are
no cluster and cache for 60 s: only their reading a locked table from the metastore keeps a
writer from an old pointer. A single Derby metastore (what a daemon without ``metastore-db``
runs) shows the lock surviving a restart there too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.hive_idl import ttypes
from catalogd.metastore.embedded import EmbeddedMetastore

from .helpers import (
    SESSION_STAGE_SECRET,
    Daemon,
    embedded_catalog,
    free_port,
    hms_connection,
    metastore_pids,
    start_daemon,
    wait_gone,
    write_config,
)
from .postgres import PostgresServer

pytestmark = pytest.mark.integration

EX = ttypes.LockType.EXCLUSIVE
ACQUIRED = ttypes.LockState.ACQUIRED
WAITING = ttypes.LockState.WAITING
#: Short, so that the release by timeout is quick to see; long enough that a commit (a few
#: metastore calls between two heartbeats) never outlasts it on a busy machine.
LOCK_TIMEOUT = 8
DB = "locks_db"
#: The table the Iceberg-pattern writers commit to; its ``history`` parameter lists every commit.
POINTER_TABLE = "pointer"
WRITERS = 4
#: A table written through A and read through B, with and without a lock.
FRESH_TABLE = "fresh"


@dataclass
class Pair:
    a: Daemon
    b: Daemon

    def kill_a(self) -> None:
        """SIGKILL A; its metastore JVM follows (its stdin closes)."""
        os.kill(self.a.pid, signal.SIGKILL)
        self.a.proc.wait()
        for pid in metastore_pids(self.a.data_dir):
            assert wait_gone(pid, 60), "A's metastore outlived it"

    def restart_a(self) -> None:
        self.a = start_daemon(self.a.config_path, self.a.data_dir, self.a.log_path)


@pytest.fixture(scope="module")
def pair(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("pg-locks")
    database = postgres.create_database()
    url = postgres.url(database, password=False)
    password_file = root / "metastore-db.password"
    password_file.write_text(postgres.password + "\n")
    password_file.chmod(0o600)
    warehouse = (root / "warehouse").as_uri()
    daemons: list[Daemon] = []
    try:
        for name in ("a", "b"):
            catalog = embedded_catalog("main", metastore_port=free_port(), warehouse=warehouse,
                                       **{"metastore-db": url, "metastore-db-password-file": str(password_file)})
            config = write_config(root / f"{name}.yaml", port=free_port(), http_port=free_port(),
                                  data_dir=root / name, catalogs=[catalog],
                                  extra={"staging": {"secret": SESSION_STAGE_SECRET},
                                         "server": {"hms-lock-timeout": f"{LOCK_TIMEOUT}s"},
                                         # Not members of a cluster: no invalidations between
                                         # them, so only the metastore's answer under a lock
                                         # keeps a writer from reading an old pointer.
                                         "cache": {"ttl": "60s"}})
            # A first, alone: its metastore creates the schema in the empty database.
            daemons.append(start_daemon(config, root / name, root / f"{name}.log"))
        the_pair = Pair(*daemons)
        with hms_connection(the_pair.a.hms_address, "owner") as c:
            c.create_database(ttypes.Database(name=DB, description="locks", parameters={}))
            c.create_table(_table(POINTER_TABLE, {"history": ""}))
            c.create_table(_table(FRESH_TABLE, {"v": "0"}))
        yield the_pair
        daemons = [the_pair.a, the_pair.b]
    finally:
        for daemon in daemons:
            daemon.stop()
        for daemon in daemons:
            for pid in metastore_pids(daemon.data_dir):
                os.kill(pid, signal.SIGKILL)


def _table(name: str, parameters: dict[str, str]) -> ttypes.Table:
    serde = ttypes.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                             parameters={})
    sd = ttypes.StorageDescriptor(cols=[ttypes.FieldSchema(name="id", type="int")],
                                  inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                                  outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                                  serdeInfo=serde, parameters={})
    return ttypes.Table(tableName=name, dbName=DB, owner="owner", sd=sd, partitionKeys=[],
                        parameters=parameters, tableType="EXTERNAL_TABLE")


def _request(table: str, user: str) -> ttypes.LockRequest:
    component = ttypes.LockComponent(type=EX, level=ttypes.LockLevel.TABLE, dbname=DB, tablename=table)
    return ttypes.LockRequest(component=[component], txnid=0, user=user, hostname="test-host", agentInfo="pytest")


class Member:
    """A client of one daemon's HMS endpoint that moves to the other daemon when a call fails
    (as Hive's client moves along hive.metastore.uris); ``call`` says whether it may resend."""

    def __init__(self, addresses: Callable[[], list[tuple[str, int]]], first: int, user: str) -> None:
        self._addresses = addresses
        self._index = first
        self._user = user
        self._stack: ExitStack | None = None
        self._client: Any = None
        self.failovers = 0

    def _connect(self) -> Any:
        if self._client is None:
            stack = ExitStack()
            address = self._addresses()[self._index % 2]
            self._client = stack.enter_context(hms_connection(address, self._user))
            self._stack = stack
        return self._client

    def _drop(self) -> None:
        if self._stack is not None:
            with contextlib.suppress(Exception):  # a dead connection may fail to close
                self._stack.close()
        self._stack, self._client = None, None
        self._index += 1
        self.failovers += 1

    def call(self, fn: Callable[[Any], Any], resend: bool = True, deadline: float = 120.0) -> Any:
        """``fn(client)``; on a lost connection the next member, and ``fn`` again if ``resend``."""
        end = time.monotonic() + deadline
        while True:
            try:
                return fn(self._connect())
            except (ttypes.NoSuchLockException, ttypes.NoSuchTxnException, ttypes.MetaException,
                    ttypes.NoSuchObjectException, ttypes.InvalidOperationException):
                raise
            except Exception:
                self._drop()
                if not resend or time.monotonic() > end:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()


@dataclass
class Commits:
    acknowledged: list[str] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _writer(member: Member, name: str, commits: Commits, stop: threading.Event) -> None:
    n = 0
    while not stop.is_set():
        commit = f"{name}{n}"
        n += 1
        try:
            lockid = member.call(lambda c: c.lock(_request(POINTER_TABLE, name)).lockid, resend=False)
        except Exception as e:  # lost in flight: a lock nobody heartbeats, released by its timeout
            with commits.lock:
                commits.errors.append(f"lock: {e!r}")
            continue
        try:
            wait_until(lambda lid=lockid: member.call(
                lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=lid)).state) == ACQUIRED,
                timeout=120, what=f"{name}'s lock", every=0.05)
            table = member.call(lambda c: c.get_table(DB, POINTER_TABLE))
            history = (table.parameters or {}).get("history", "")
            table.parameters = {**(table.parameters or {}), "history": f"{history} {commit}".strip()}
            try:
                member.call(lambda c, t=table: c.alter_table(DB, POINTER_TABLE, t), resend=False)
            except Exception:
                with commits.lock:
                    commits.unsure.append(commit)
                raise
            with commits.lock:
                commits.acknowledged.append(commit)
        except Exception as e:
            with commits.lock:
                commits.errors.append(f"commit {commit}: {e!r}")
        finally:
            try:
                member.call(lambda c, lid=lockid: c.unlock(ttypes.UnlockRequest(lockid=lid)))
            except Exception as e:
                with commits.lock:
                    commits.errors.append(f"unlock: {e!r}")
        time.sleep(0.2)


def _reader(member: Member, stop: threading.Event) -> None:
    """Reads the pointer table through both daemons, as the engines reading it do: each daemon
    keeps caching it, so a writer that read through the cache would commit on an old pointer."""
    while not stop.wait(0.02):
        with contextlib.suppress(Exception):  # a daemon being killed
            member.call(lambda c: c.get_table(DB, POINTER_TABLE), deadline=5)
            member._drop()  # the other daemon next time


class Heartbeats:
    """Heartbeats lock ids every second through whichever daemon answers (a holder's keep-alive)."""

    def __init__(self, member: Member) -> None:
        self.member = member
        self.lockids: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for lockid in list(self.lockids):
                # A failed beat is tried again next second (through the other daemon, if this one died).
                with contextlib.suppress(Exception):
                    self.member.call(lambda c, lid=lockid: c.heartbeat(ttypes.HeartbeatRequest(lockid=lid)),
                                     deadline=5)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


def test_a_read_under_a_lock_sees_the_other_daemons_write(pair: Pair) -> None:
    """B caches a table (60 s); A alters it. Without a lock B answers from its cache; once B
    granted a lock on the table, B reads it from the metastore."""
    with hms_connection(pair.a.hms_address, "w") as a, hms_connection(pair.b.hms_address, "r") as b:
        assert (b.get_table(DB, FRESH_TABLE).parameters or {})["v"] == "0"
        table = a.get_table(DB, FRESH_TABLE)
        table.parameters = {**(table.parameters or {}), "v": "1"}
        a.alter_table(DB, FRESH_TABLE, table)
        assert (b.get_table(DB, FRESH_TABLE).parameters or {})["v"] == "0"  # B's cache: no invalidation
        held = b.lock(_request(FRESH_TABLE.upper(), "r"))
        assert held.state == ACQUIRED
        assert (b.get_table(DB, FRESH_TABLE).parameters or {})["v"] == "1"
        b.unlock(ttypes.UnlockRequest(lockid=held.lockid))


def test_locks_are_shared_survive_a_sigkill_and_lose_no_iceberg_commit(pair: Pair) -> None:
    addresses = lambda: [pair.a.hms_address, pair.b.hms_address]  # noqa: E731 - A's port stays across restarts
    holder = Member(addresses, 0, "holder")
    waiter = Member(addresses, 1, "waiter")
    keeper = Heartbeats(Member(addresses, 1, "keeper"))
    writers = [Member(addresses, i, f"w{i}") for i in range(WRITERS)]
    commits, stop = Commits(), threading.Event()
    reader = Member(addresses, 0, "reader")
    threads = [threading.Thread(target=_writer, args=(m, chr(ord("a") + i), commits, stop), daemon=True)
               for i, m in enumerate(writers)]
    threads.append(threading.Thread(target=_reader, args=(reader, stop), daemon=True))
    try:
        # An exclusive lock through A; the same request through B waits, and sees A's lock.
        held = holder.call(lambda c: c.lock(_request("guarded", "holder")), resend=False)
        assert held.state == ACQUIRED
        wanted = waiter.call(lambda c: c.lock(_request("guarded", "waiter")), resend=False)
        assert wanted.state == WAITING
        assert waiter.call(lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=wanted.lockid)).state) == WAITING
        shown = waiter.call(lambda c: c.show_locks(ttypes.ShowLocksRequest(dbname=DB, tablename="guarded")))
        assert {(e.lockid, e.user, e.state) for e in shown.locks} == {
            (held.lockid, "holder", ACQUIRED), (wanted.lockid, "waiter", WAITING)}
        keeper.lockids |= {held.lockid, wanted.lockid}

        for thread in threads:
            thread.start()
        wait_until(lambda: len(commits.acknowledged) >= 8, timeout=120, what="commits before the kill")
        pair.kill_a()
        # While A is down (its holder heartbeats through B), B's request still waits.
        assert waiter.call(lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=wanted.lockid)).state) == WAITING
        before_restart = len(commits.acknowledged)
        pair.restart_a()
        # Through the restarted A: the lock taken before its death is still held, under its id.
        with hms_connection(pair.a.hms_address, "holder") as a:
            assert a.check_lock(ttypes.CheckLockRequest(lockid=held.lockid)).state == ACQUIRED
        assert waiter.call(lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=wanted.lockid)).state) == WAITING
        wait_until(lambda: len(commits.acknowledged) >= before_restart + 8, timeout=120,
                   what="commits after A came back")
        stop.set()
        for thread in threads:
            thread.join(150)
        # The holder stops heartbeating: its lock goes after the timeout, and B's waiter gets it.
        keeper.lockids.discard(held.lockid)
        wait_until(lambda: waiter.call(
            lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=wanted.lockid)).state) == ACQUIRED,
            timeout=LOCK_TIMEOUT * 6, what="the waiter granted once the silent holder's lock timed out")
        with pytest.raises(ttypes.NoSuchLockException):
            waiter.call(lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=held.lockid)))
        waiter.call(lambda c: c.unlock(ttypes.UnlockRequest(lockid=wanted.lockid)))
    finally:
        stop.set()
        keeper.close()
        for member in [holder, waiter, keeper.member, reader, *writers]:
            member.close()

    # Every acknowledged commit is in the final history, once; nothing else but commits whose
    # answer was lost in flight.
    with hms_connection(pair.b.hms_address, "reader") as b:
        history = (b.get_table(DB, POINTER_TABLE).parameters or {})["history"].split()
    assert len(history) == len(set(history)), history
    missing = [c for c in commits.acknowledged if c not in history]
    assert not missing, f"lost commits {missing}; history {history}; errors {commits.errors[:10]}"
    assert set(history) <= set(commits.acknowledged) | set(commits.unsure)
    print(f"\n{len(commits.acknowledged)} acknowledged commits, {len(commits.unsure)} lost in flight, "
          f"{sum(m.failovers for m in writers)} writer failovers")


def test_a_lock_survives_a_restart_on_derby(tmp_path: Path) -> None:
    """A metastore on Derby (what a daemon without metastore-db runs): SIGKILLed and started again,
    it still holds the lock, under the same id, and hands out new ids after it."""
    metastore = EmbeddedMetastore("derby", tmp_path, port=free_port(), txn_timeout=300)
    metastore.start()
    try:
        address = (metastore.host, metastore.port)
        key = metastore.key_path  # the metastore serves only connections that send its key first
        with hms_connection(address, "holder", key) as c:
            held = c.lock(_request("t", "holder"))
            assert held.state == ACQUIRED
        pid = metastore.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert metastore.wait_exit(60) is not None
        metastore.start()
        with hms_connection(address, "holder", key) as c, hms_connection(address, "other", key) as other:
            assert c.check_lock(ttypes.CheckLockRequest(lockid=held.lockid)).state == ACQUIRED
            late = other.lock(_request("t", "other"))
            assert late.state == WAITING and late.lockid > held.lockid
            c.unlock(ttypes.UnlockRequest(lockid=held.lockid))
            assert other.check_lock(ttypes.CheckLockRequest(lockid=late.lockid)).state == ACQUIRED
            other.unlock(ttypes.UnlockRequest(lockid=late.lockid))
    finally:
        metastore.stop()
