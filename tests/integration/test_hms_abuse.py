"""The HMS endpoint against a hostile client (issue 21, items 1 and 2): bounded memory, field
limits, lock ids that a restart never repeats, and lock calls no large request can stall.

One daemon of its own (a memory default catalog, so catalogd holds the locks; no JVM) with small
bounds, so that what each test proves is the bound, with small payloads. RSS is read from
``/proc/<pid>/status``; stalls are proven with deadlines, never with measured durations.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hmsclient import hmsclient
from polling import wait_until
from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ttypes

from .helpers import Daemon, answer_within, free_port, start_daemon, write_config

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
#: server.hms-max-buffered-bytes of the daemon here.
BUFFERED = 16 * MiB
VIEW_TEXT = 64 * 1024
COMPONENTS = 1000
PER_CONNECTION = 3000
#: A generous deadline for a call that should answer at once (the machine is shared and slow).
DEADLINE = 30.0
EX = ttypes.LockType.EXCLUSIVE
SR = ttypes.LockType.SHARED_READ


@dataclass
class Abused:
    """The module's daemon; ``restart`` replaces it by a new process on the same config and data dir."""

    daemon: Daemon
    tmp: Path
    starts: int = 1

    def restart(self) -> None:
        code = self.daemon.stop()
        assert code == 0, f"the daemon exited with {code}; log:\n{self.daemon.log()}"
        self.starts += 1
        log = self.tmp / f"abused-{self.starts}.log"
        self.daemon = start_daemon(self.daemon.config_path, self.daemon.data_dir, log)


@pytest.fixture(scope="module")
def abused(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Abused]:
    tmp = tmp_path_factory.mktemp("abused")
    data_dir = tmp / "data"
    port, http_port = free_port(), free_port()
    bounds = {"hms-max-buffered-bytes": BUFFERED, "hms-max-view-text": VIEW_TEXT,
              "hms-max-lock-components": COMPONENTS, "hms-max-locks-per-connection": PER_CONNECTION}
    config = write_config(tmp / "abused.yaml", port=port, http_port=http_port, data_dir=data_dir,
                          catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                          extra={"server": {"hms-port": free_port(), **bounds}})
    holder = Abused(start_daemon(config, data_dir, tmp / "abused-1.log"), tmp)
    yield holder
    code = holder.daemon.stop()
    assert code == 0, f"the daemon exited with {code}; log:\n{holder.daemon.log()}"


@contextlib.contextmanager
def hms(daemon: Daemon, user: str) -> Iterator[Any]:
    client = hmsclient.HMSClient(host=daemon.hms_address[0], port=daemon.hms_address[1])
    client.open()
    try:
        client.set_ugi(user, [user])
        yield client
    finally:
        client.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def lock_request(kind: int, db: str, table: str, user: str, partitions: int = 0) -> ttypes.LockRequest:
    if partitions:
        components = [ttypes.LockComponent(type=kind, level=ttypes.LockLevel.PARTITION, dbname=db, tablename=table,
                                           partitionname=f"p={i}") for i in range(partitions)]
    else:
        components = [ttypes.LockComponent(type=kind, level=ttypes.LockLevel.TABLE, dbname=db, tablename=table)]
    return ttypes.LockRequest(component=components, txnid=0, user=user, hostname="test-host", agentInfo="pytest")


# ---------------------------------------------------------------- memory

def announce_set_ugi(address: tuple[str, int], announced: int, send: int) -> int:
    """A set_ugi call announcing a user name of ``announced`` bytes, sending ``send`` of them; the
    bytes it got to send before the daemon closed the connection (the socket stays open here)."""
    sock = socket.create_connection(address, timeout=DEADLINE)
    name = b"set_ugi"
    head = struct.pack("!Ii", 0x80010001, len(name)) + name + struct.pack("!i", 1)
    sent = 0
    chunk = b"u" * MiB
    try:
        sock.sendall(head + b"\x0b\x00\x01" + struct.pack("!i", announced))
        while sent < send:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass  # closed by the daemon: what the bound does
    held.append(sock)
    return sent


held: list[socket.socket] = []


def test_buffered_calls_are_bounded_and_their_memory_returns(abused: Abused) -> None:
    daemon = abused.daemon
    with hms(daemon, "probe") as probe:
        probe.get_all_databases()
    base = rss_mib(daemon.pid)
    peak = base
    stop = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not stop.wait(0.02):
            peak = max(peak, rss_mib(daemon.pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    sent: list[int] = []
    try:
        # 20 clients announcing 256 MiB strings and sending 8 MiB each: 160 MiB against a 16 MiB bound.
        attackers = [threading.Thread(target=lambda: sent.append(
            announce_set_ugi(daemon.hms_address, 256 * MiB, 8 * MiB))) for _ in range(20)]
        for thread in attackers:
            thread.start()
        for thread in attackers:
            thread.join(timeout=120)
        # Another client is served while the survivors hold their partial calls.
        with hms(daemon, "bystander") as bystander:
            assert "default" in answer_within(DEADLINE, bystander.get_all_databases)
    finally:
        for sock in held:
            sock.close()
        held.clear()
        stop.set()
        watcher.join()
    assert len(sent) == 20
    assert sum(sent) > 2 * BUFFERED  # they did try to pass the bound
    # Bytes counted up to the bound, plus the copies one message costs while it is read and
    # the memory of connections closed but not yet unwound; far from the 160 MiB sent.
    assert peak - base < 6 * BUFFERED / MiB + 32, f"RSS {base:.0f} -> {peak:.0f} MiB"
    after = wait_until(lambda: (lambda now: now if now < base + 24 else 0)(rss_mib(daemon.pid)), DEADLINE,
                       what=f"RSS back near {base:.0f} MiB (peak {peak:.0f}) after the clients closed")
    print(f"RSS before {base:.0f} MiB, peak {peak:.0f} MiB, after close {after:.0f} MiB; sent {sum(sent) // MiB} MiB")
    log = daemon.log(400)
    assert "server.hms-max-buffered-bytes" in log
    assert "Traceback" not in log


def test_huge_set_ugi_names_are_refused_and_the_connection_goes_on(abused: Abused) -> None:
    with hms(abused.daemon, "alice") as client:
        # The 4 MiB user name of the audit-flood finding: refused before it is decoded.
        with pytest.raises(ttypes.MetaException, match=r"set_ugi of 41943\d\d bytes is over the limit"):
            client.set_ugi("u" * (4 * MiB), [])
        with pytest.raises(ttypes.MetaException, match=r"set_ugi of \d+ bytes is over the limit"):
            client.set_ugi("bob", ["g" * 1000] * 1000)
        with pytest.raises(ttypes.MetaException, match="user name of 1000 characters is over the limit of 256"):
            client.set_ugi("u" * 1000, [])
        assert client.get_all_databases()  # the connection goes on


def view(db: str, name: str, text: str) -> ttypes.Table:
    sd = ttypes.StorageDescriptor(cols=[ttypes.FieldSchema(name="x", type="int")], serdeInfo=ttypes.SerDeInfo(
        parameters={}), parameters={})
    return ttypes.Table(tableName=name, dbName=db, owner="alice", sd=sd, partitionKeys=[], parameters={},
                        tableType="VIRTUAL_VIEW", viewOriginalText=text, viewExpandedText=text)


def test_a_view_text_over_the_bound_is_refused_with_a_clear_message(abused: Abused) -> None:
    with hms(abused.daemon, "alice") as client:
        client.create_database(ttypes.Database(name="views", description="", parameters={}))
        try:
            small = "SELECT 1 AS x"
            client.create_table(view("views", "ok", small))
            large = "SELECT 1 AS x" + " " * VIEW_TEXT
            with pytest.raises(ttypes.MetaException,
                               match=r"text of view views\.big is \d+ bytes, over the limit of 65536 "
                                     r"\(server\.hms-max-view-text\); create_table refused"):
                client.create_table(view("views", "big", large))
            with pytest.raises(ttypes.NoSuchObjectException):
                client.get_table("views", "big")
            with pytest.raises(ttypes.MetaException, match=r"server\.hms-max-view-text"):
                client.alter_table("views", "ok", view("views", "ok", large))
            assert client.get_table("views", "ok").viewOriginalText == small
        finally:
            client.drop_database("views", True, True)


# ---------------------------------------------------------------- locks

def test_lock_abuse_is_refused_fast_and_does_not_stall_others(abused: Abused) -> None:
    daemon = abused.daemon
    with hms(daemon, "mallory") as mallory, hms(daemon, "alice") as alice:
        outcome: list[BaseException] = []

        def huge() -> None:
            try:
                mallory.lock(lock_request(EX, "db", "t", "mallory", partitions=50_000))
            except BaseException as e:  # examined below
                outcome.append(e)

        thread = threading.Thread(target=huge)
        thread.start()
        # Meanwhile another client's lock calls answer (each within the deadline).
        for i in range(20):
            taken = answer_within(DEADLINE, lambda i=i: alice.lock(lock_request(EX, "other", f"t{i}", "alice")))
            assert taken.state == ttypes.LockState.ACQUIRED
            answer_within(DEADLINE, lambda taken=taken: alice.unlock(ttypes.UnlockRequest(lockid=taken.lockid)))
        thread.join(timeout=DEADLINE)
        assert not thread.is_alive()
        # HMS 2.3's lock declares no MetaException: the refusal is an application error carrying
        # the message, as HMS's own MetaException from lock reaches its clients.
        refusal = outcome[0]
        assert isinstance(refusal, TApplicationException)
        assert "50000 components" in str(refusal.message)
        assert "server.hms-max-lock-components" in str(refusal.message)
        assert alice.show_locks(ttypes.ShowLocksRequest(dbname="db")).locks == []


def test_one_connection_cannot_hold_more_than_its_bound_nor_lock_out_its_host(abused: Abused) -> None:
    """Issue 31 row 6: the bound was per client host, so one client that took it all refused
    every other client on its host; it is per connection (and per principal with auth on)."""
    with hms(abused.daemon, "mallory") as mallory, hms(abused.daemon, "alice") as alice:
        ids = []
        for n in range(PER_CONNECTION // COMPONENTS):
            taken = mallory.lock(lock_request(SR, "hoard", f"t{n}", "mallory", partitions=COMPONENTS))
            ids.append(taken.lockid)
        with pytest.raises(TApplicationException, match=r"server\.hms-max-locks-per-connection"):
            mallory.lock(lock_request(SR, "hoard", "one-more", "mallory"))
        # Another client on the same host (127.0.0.1) still locks, as much as its own bound.
        mine = [alice.lock(lock_request(SR, "own", f"t{n}", "alice", partitions=COMPONENTS))
                for n in range(PER_CONNECTION // COMPONENTS)]
        assert [m.state for m in mine] == [ttypes.LockState.ACQUIRED] * len(mine)
        for m in mine:
            alice.unlock(ttypes.UnlockRequest(lockid=m.lockid))
        mallory.unlock(ttypes.UnlockRequest(lockid=ids.pop()))
        ids.append(mallory.lock(lock_request(SR, "hoard", "one-more", "mallory")).lockid)
        for lockid in ids:
            mallory.unlock(ttypes.UnlockRequest(lockid=lockid))


def test_lock_ids_after_a_restart_are_new_and_old_ones_unknown(abused: Abused) -> None:
    with hms(abused.daemon, "alice") as alice:
        old = alice.lock(lock_request(EX, "db", "t", "alice"))
        assert old.state == ttypes.LockState.ACQUIRED
    abused.restart()
    with hms(abused.daemon, "bob") as bob, hms(abused.daemon, "alice") as alice:
        new = bob.lock(lock_request(EX, "db", "t", "bob"))
        assert new.state == ttypes.LockState.ACQUIRED
        assert new.lockid != old.lockid
        calls: list[Callable[[], object]] = [
            lambda: alice.heartbeat(ttypes.HeartbeatRequest(lockid=old.lockid)),
            lambda: alice.check_lock(ttypes.CheckLockRequest(lockid=old.lockid)),
            lambda: alice.unlock(ttypes.UnlockRequest(lockid=old.lockid)),
        ]
        for call in calls:
            with pytest.raises(ttypes.NoSuchLockException, match="before catalogd restarted"):
                call()
        # The old holder's calls left the new holder's lock alone.
        assert bob.check_lock(ttypes.CheckLockRequest(lockid=new.lockid)).state == ttypes.LockState.ACQUIRED
        bob.unlock(ttypes.UnlockRequest(lockid=new.lockid))
