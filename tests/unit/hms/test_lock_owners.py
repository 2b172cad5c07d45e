"""Locks belong to their holders (issue 31 row 4): only the principal that took a lock, or an admin
of every catalog it names, unlocks, heartbeats or checks it; the holder of a metastore's lock is
remembered or read from its show_locks."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from catalogd.auth.model import Authority, Role
from catalogd.config import parse_config
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.federation import Federation
from catalogd.hms.lock_owners import LockOwners, guard_for, holders_in, owner_of
from catalogd.hms.locks import Holder, LockManager
from catalogd.hms.policy import CallRecord, Policy
from catalogd.hms.refused import Refused
from catalogd.hms.router import Router
from catalogd.hms.server import ClientConnection
from catalogd.manager import CatalogManager
from catalogd.metastore.messages import CALL, REPLY, decode, encode, parse_message

EX, SR = hms.LockType.EXCLUSIVE, hms.LockType.SHARED_READ
GRANTS = {("reader", "*"): Role.READER, ("writer", "*"): Role.WRITER, ("ops", "main"): Role.ADMIN,
          ("boss", "*"): Role.ADMIN}


class Recorded:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def record(self, **line: Any) -> None:
        self.lines.append(line)


def _config(tmp_path: Path, trust: str = "writer") -> Any:
    return parse_config(f"server: {{data-dir: {tmp_path}}}\nauth: {{trust-asserted-users: {trust}}}\ncatalogs:\n"
                        "  - {name: main, type: memory, default: true}\n  - {name: other, type: memory}\n")


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    authority = Authority(True, names={"reader", "writer", "ops", "boss"}, grants=GRANTS)
    return Policy(CatalogManager(_config(tmp_path)), authority, Recorded())  # type: ignore[arg-type]


def _call(policy: Policy, user: str) -> tuple[ClientConnection, CallRecord]:
    conn = ClientConnection("127.0.0.1:9", identity=(user, ()), proven="certificate")
    assert policy.authority is not None
    return conn, CallRecord(principal=policy.authority.principal_named(user))


def test_only_the_holder_or_an_admin_of_every_catalog_it_names_passes(policy: Policy) -> None:
    federation = Federation.from_config(policy.manager.config)
    mine = Holder("writer", frozenset({"db"}))
    both = Holder("writer", frozenset({"db", "other__db"}))
    for user, holder, allowed in [("writer", mine, True), ("reader", mine, False), ("ops", mine, True),
                                  ("ops", both, False), ("boss", both, True),
                                  # A lock with no holder (taken with auth off): admins only.
                                  ("writer", Holder(None, frozenset({"db"})), False)]:
        conn, call = _call(policy, user)
        guard = guard_for(policy, federation, conn, call, "unlock", 42)
        assert guard is not None
        if allowed:
            guard(holder)
            continue
        with pytest.raises(Refused) as caught:
            guard(holder)
        assert isinstance(caught.value.exc, hms.NoSuchLockException), user
        assert "permission denied: lockid:42 is" in caught.value.exc.message
        assert f"not {user!r}" in caught.value.exc.message
    audit = policy.audit
    assert [line["outcome"] for line in audit.lines] == ["denied"] * 3  # type: ignore[union-attr]


def test_with_auth_off_nothing_is_checked_or_recorded(tmp_path: Path) -> None:
    policy = Policy(CatalogManager(_config(tmp_path)), Authority(False))  # type: ignore[arg-type]
    conn = ClientConnection("127.0.0.1:9", identity=("anyone", ()))
    call = CallRecord()
    policy.authorize(conn, "unlock", None, "main", call)
    assert guard_for(policy, Federation.from_config(policy.manager.config), conn, call, "unlock", 1) is None
    assert owner_of(policy, call) is None


def test_a_metastore_lock_s_holder_is_remembered_or_read_once() -> None:
    owners = LockOwners(limit=3)
    reads: list[int] = []
    elements = [hms.ShowLocksResponseElement(lockid=7, dbname="DB", user="writer"),
                hms.ShowLocksResponseElement(lockid=7, dbname="other__db", user="writer"),
                hms.ShowLocksResponseElement(lockid=8, dbname="db", user="reader")]

    def read() -> list[Any]:
        reads.append(1)
        return elements

    owners.remember(5, Holder("alice", frozenset({"db"})))
    assert owners.holder(5, read) == Holder("alice", frozenset({"db"}))
    assert reads == []
    assert owners.holder(7, read) == Holder("writer", frozenset({"db", "other__db"}))
    # What one read found is remembered: no second read for another lock it listed.
    assert owners.holder(8, read) == Holder("reader", frozenset({"db"}))
    assert reads == [1]
    # A lock the metastore does not have: None (the router answers it as absent).
    assert owners.holder(9, read) is None
    assert reads == [1, 1]
    owners.forget(8)
    assert owners.known(8) is None
    # Bounded: the least recently used holder goes first.
    for lockid in (10, 11, 12):
        owners.remember(lockid, Holder("x", frozenset()))
    assert owners.known(5) is None and owners.known(12) is not None


def test_reads_of_unknown_ids_run_one_at_a_time() -> None:
    owners = LockOwners()
    inside = threading.Event()
    release = threading.Event()
    running = [0]
    most = [0]

    def read() -> list[Any]:
        running[0] += 1
        most[0] = max(most[0], running[0])
        inside.set()
        release.wait(10)
        running[0] -= 1
        return [hms.ShowLocksResponseElement(lockid=1, dbname="db", user="w")]

    threads = [threading.Thread(target=owners.holder, args=(lockid, read)) for lockid in (1, 2, 3)]
    for thread in threads:
        thread.start()
    assert inside.wait(10)
    release.set()
    for thread in threads:
        thread.join(10)
    assert most[0] == 1


def test_holders_in_groups_components_by_lock() -> None:
    found = holders_in([hms.ShowLocksResponseElement(lockid=1, dbname="a", user=""),
                        hms.ShowLocksResponseElement(lockid=None, dbname="b", user="x")])
    assert found == {1: Holder(None, frozenset({"a"}))}


# ---------------------------------------------------------------- through the router (memory lock keeper)

class Endpoint:
    """A router over a memory default catalog whose locks catalogd keeps (auth on)."""

    def __init__(self, tmp_path: Path) -> None:
        authority = Authority(True, names={"reader", "writer", "ops", "boss"}, grants=GRANTS)
        manager = CatalogManager(_config(tmp_path))
        manager.open()
        self.router = Router(manager, locks=LockManager(300), authority=authority)

    def connect(self, user: str) -> ClientConnection:
        return ClientConnection("127.0.0.1:9", identity=(user, ()), proven="certificate")

    def call(self, conn: ClientConnection, method: str, **args: Any) -> Any:
        request = getattr(ThriftHiveMetastore, f"{method}_args")(**args)
        reply = self.router.handle(conn, parse_message(encode(method, CALL, 1, request)))
        assert reply is not None
        answer = parse_message(reply)
        assert answer.type == REPLY, method
        result = decode(getattr(ThriftHiveMetastore, f"{method}_result")(), answer.body)
        failure = next((v for k, v in vars(result).items() if k != "success" and v is not None), None)
        if failure is not None:
            raise failure
        return getattr(result, "success", None)


def _lock(kind: int, db: str, table: str, user: str = "claimed") -> hms.LockRequest:
    return hms.LockRequest(component=[hms.LockComponent(type=kind, level=hms.LockLevel.TABLE, dbname=db,
                                                        tablename=table)], txnid=0, user=user, hostname="h")


def test_a_reader_cannot_unlock_a_writer_s_lock_but_an_admin_can(tmp_path: Path) -> None:
    endpoint = Endpoint(tmp_path)
    writer, reader, ops = (endpoint.connect(u) for u in ("writer", "reader", "ops"))
    taken = endpoint.call(writer, "lock", rqst=_lock(EX, "db", "t", user="someone-else"))
    assert taken.state == hms.LockState.ACQUIRED
    # The holder recorded is the principal, not the user the request claimed.
    [shown] = endpoint.call(reader, "show_locks", rqst=hms.ShowLocksRequest()).locks
    assert (shown.lockid, shown.user) == (taken.lockid, "writer")
    for method, args in [("unlock", {"rqst": hms.UnlockRequest(lockid=taken.lockid)}),
                         ("heartbeat", {"ids": hms.HeartbeatRequest(lockid=taken.lockid)}),
                         ("check_lock", {"rqst": hms.CheckLockRequest(lockid=taken.lockid)})]:
        with pytest.raises(hms.NoSuchLockException, match="held by 'writer'; only its holder or an admin"):
            endpoint.call(reader, method, **args)
    # The writer still holds it; its own calls pass.
    assert endpoint.call(writer, "check_lock", rqst=hms.CheckLockRequest(lockid=taken.lockid)).state == \
        hms.LockState.ACQUIRED
    endpoint.call(writer, "heartbeat", ids=hms.HeartbeatRequest(lockid=taken.lockid))
    # An admin of the lock's catalog breaks it.
    endpoint.call(ops, "unlock", rqst=hms.UnlockRequest(lockid=taken.lockid))
    with pytest.raises(hms.NoSuchLockException, match="No such lock"):
        endpoint.call(writer, "check_lock", rqst=hms.CheckLockRequest(lockid=taken.lockid))


def test_each_connection_is_bounded_on_its_own(tmp_path: Path) -> None:
    endpoint = Endpoint(tmp_path)
    locks = endpoint.router.locks
    assert isinstance(locks, LockManager)
    locks.max_per_connection = 2
    first, second = ClientConnection("10.0.0.1:1", identity=("writer", ()), proven="certificate"), \
        ClientConnection("10.0.0.1:2", identity=("reader", ()), proven="certificate")
    endpoint.call(first, "lock", rqst=_lock(SR, "db", "a"))
    endpoint.call(first, "lock", rqst=_lock(SR, "db", "b"))
    with pytest.raises(Exception, match=r"server\.hms-max-locks-per-connection"):
        endpoint.call(first, "lock", rqst=_lock(SR, "db", "c"))
    # Another client on the same host is not refused.
    assert endpoint.call(second, "lock", rqst=_lock(SR, "db", "c")).state == hms.LockState.ACQUIRED


def test_a_native_door_s_lock_is_the_same_lock_as_the_prefixed_name_s(tmp_path: Path) -> None:
    """``@other#db`` (a Hive 3+ client's, the Iceberg REST door's) and ``other__db`` (a 2.3
    client's) name one table: the keeper sees one name, so the second lock waits."""
    endpoint = Endpoint(tmp_path)
    writer = endpoint.connect("writer")
    first = endpoint.call(writer, "lock", rqst=_lock(EX, "@other#db", "t"))
    assert first.state == hms.LockState.ACQUIRED
    second = endpoint.call(writer, "lock", rqst=_lock(EX, "other__db", "T"))
    assert second.state == hms.LockState.WAITING
    [shown, _] = endpoint.call(writer, "show_locks", rqst=hms.ShowLocksRequest(dbname="@other#db")).locks
    assert (shown.dbname, shown.tablename) == ("other__db", "t")


def test_catalogd_itself_checks_and_releases_a_caller_s_lock(tmp_path: Path) -> None:
    """The Iceberg roll-forward (``conn.internal``) reuses or releases the locks a dead daemon
    took for its callers."""
    endpoint = Endpoint(tmp_path)
    taken = endpoint.call(endpoint.connect("writer"), "lock", rqst=_lock(EX, "db", "t"))
    internal = ClientConnection("catalogd", internal=True)
    assert endpoint.call(internal, "check_lock", rqst=hms.CheckLockRequest(lockid=taken.lockid)).state == \
        hms.LockState.ACQUIRED
    endpoint.call(internal, "unlock", rqst=hms.UnlockRequest(lockid=taken.lockid))
    with pytest.raises(hms.NoSuchLockException):
        endpoint.call(internal, "check_lock", rqst=hms.CheckLockRequest(lockid=taken.lockid))
