"""The pure parts of Iceberg multi-table commits: the readers' gate, the intent records, the
order and checks of a transaction's changes, the commit's steps around its commit point, and
the roll-forward (a fake HMS client: the real flow runs in tests/integration/test_iceberg_transactions.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hive_metastore.ttypes import LockResponse, LockState, NoSuchLockException
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
from pyiceberg.table.update import AssertCreate, AssertTableUUID

from catalogd.errors import InvalidArgumentError
from catalogd.iceberg import transactions as tx
from catalogd.iceberg.transactions import LOCKING, MOVING, Change, CommitGate, Finisher, Intents, check_changes


class FakeClient:
    """The HMS calls a transaction makes: locks (ids from 1), pointers by (database, table)."""

    def __init__(self) -> None:
        self.next_id = 1
        self.held: dict[int, tuple[str, str]] = {}
        self.calls: list[tuple[str, Any]] = []
        self.pointers: dict[tuple[str, str], str] = {}

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def lock(self, request: Any) -> LockResponse:
        component = request.component[0]
        lockid, self.next_id = self.next_id, self.next_id + 1
        self.held[lockid] = (component.dbname, component.tablename)
        self.calls.append(("lock", (component.dbname, component.tablename)))
        return LockResponse(lockid=lockid, state=LockState.ACQUIRED)

    def check_lock(self, request: Any) -> LockResponse:
        self.calls.append(("check_lock", request.lockid))
        if request.lockid not in self.held:
            raise NoSuchLockException(message=f"No such lock: {request.lockid}")
        return LockResponse(lockid=request.lockid, state=LockState.ACQUIRED)

    def unlock(self, request: Any) -> None:
        self.calls.append(("unlock", request.lockid))
        self.held.pop(request.lockid, None)


class FakeWarehouse:
    def __init__(self, client: FakeClient, name: str = "main") -> None:
        self._client = client
        self.name = name
        self.properties: dict[str, str] = {}

    def lock_name(self, database: str) -> str:
        return database

    def _get_hive_table(self, client: FakeClient, database: str, table: str) -> Any:
        class Hive:
            parameters = {"metadata_location": client.pointers[(database, table)]}
            tableName = table
        return Hive()


class Staged:
    """What ``_stage`` answers for one table (current and updated pointers, a changed metadata)."""

    def __init__(self, old: str, new: str) -> None:
        self.metadata_location = new
        self.metadata = object()
        self.properties: dict[str, str] = {}
        self.current = type("Current", (), {"metadata_location": old, "metadata": None, "properties": {}})()


def changes(*names: str) -> list[Change]:
    return [Change(database, table, (), ()) for database, table in (n.split(".") for n in names)]


# ---------------------------------------------------------------- the gate


def test_the_gate_costs_nothing_while_idle_and_holds_readers_while_pointers_move() -> None:
    gate = CommitGate()
    gate.wait("main", "db", "a", timeout=0)  # idle: returns at once
    release = gate.hold([("main", "db", "a")])
    assert gate.generation == 1
    done = threading.Event()

    def reader() -> None:
        gate.wait("main", "DB", "A", timeout=30)
        done.set()

    thread = threading.Thread(target=reader)
    thread.start()
    assert not done.wait(0.2)
    gate.wait("main", "db", "b", timeout=0)  # another table: not held
    release()
    assert done.wait(10)
    thread.join(10)
    assert gate.tables == {}


def test_a_release_leaves_a_later_hold_of_the_same_table() -> None:
    gate = CommitGate()
    first = gate.hold([("main", "db", "a")])
    second = gate.hold([("main", "db", "a")])
    first()
    assert ("main", "db", "a") in gate.tables
    second()
    assert not gate.tables and gate.generation == 2


# ---------------------------------------------------------------- intents


def test_intents_are_listed_until_removed_and_bad_files_are_left(tmp_path: Path) -> None:
    intents = Intents(tmp_path)
    assert intents.pending() == []
    path = intents.write({"id": "x1", "catalog": "main", "state": LOCKING, "locks": []}, durable=False)
    intents.write({"id": "x1", "catalog": "main", "state": MOVING, "locks": [], "tables": []}, durable=True)
    (intents.dir / "broken.json").write_text("{not json")
    (intents.dir / "other.json").write_text("[1, 2]")
    [(found, record)] = intents.pending()
    assert found == path and record["state"] == MOVING
    assert not list(intents.dir.glob("*.tmp"))
    intents.remove(path)
    assert intents.pending() == []
    assert (intents.dir / "broken.json").exists()


# ---------------------------------------------------------------- the changes


def test_changes_are_locked_in_one_order_and_named_once() -> None:
    ordered = check_changes([Change("@scratch#b", "t", (), (), name="b"), Change("@scratch#a", "z", (), (), name="a"),
                             Change("@scratch#a", "b", (), (), name="a")])
    assert [(c.own_database, c.table) for c in ordered] == [("a", "b"), ("a", "z"), ("b", "t")]
    with pytest.raises(InvalidArgumentError, match="appears twice"):
        check_changes([Change("db", "t", (), ()), Change("DB", "T", (), ())])
    with pytest.raises(InvalidArgumentError, match="existing tables"):
        check_changes([Change("db", "t", (AssertCreate(),), ())])
    check_changes([Change("db", "t", (AssertTableUUID(uuid="9c12d441-03fe-4693-9a96-a0705ddf69c1"),), ())])


# ---------------------------------------------------------------- the commit


@pytest.fixture
def flow(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """``commit_tables`` with its metastore and file steps replaced; records what each step saw."""
    seen: dict[str, Any] = {"staged": [], "written": [], "moved": [], "fail_stage": None, "fail_move": None}
    client = FakeClient()
    intents = Intents(tmp_path)

    def stage(wh: Any, c: Any, change: Change) -> tuple[Any, ...]:
        [(_, record)] = intents.pending()  # every lock is recorded before anything is read
        seen["staged"].append((change.table, record["state"], len(record["locks"])))
        if seen["fail_stage"] == change.table:
            raise CommitFailedException(f"{change.table}: requirement failed")
        s = Staged(f"old-{change.table}", f"new-{change.table}")
        return change, object(), s.current, s

    def write_all(moving: list[Any]) -> None:
        seen["written"] = [m[0].table for m in moving]

    def move(wh: Any, c: Any, database: str, hive: Any, new: str, table: dict[str, Any], metadata: Any) -> None:
        [(_, record)] = intents.pending()
        assert record["state"] == MOVING  # the intent is written before the first pointer moves
        if seen["fail_move"] == table["table"]:
            raise OSError("metastore away")
        seen["moved"].append(table["table"])

    monkeypatch.setattr(tx, "_stage", stage)
    monkeypatch.setattr(tx, "_write_all", write_all)
    monkeypatch.setattr(tx, "_move", move)
    seen.update(client=client, intents=intents, wh=FakeWarehouse(client), gate=CommitGate())
    return seen


def test_a_commit_locks_in_order_records_locks_then_intent_and_leaves_nothing(flow: dict[str, Any]) -> None:
    tx.commit_tables(flow["wh"], changes("db.c", "db.a", "db.b"), flow["intents"], flow["gate"])
    client = flow["client"]
    assert [args for name, args in client.calls if name == "lock"] == [("db", "a"), ("db", "b"), ("db", "c")]
    assert flow["staged"] == [("a", LOCKING, 3), ("b", LOCKING, 3), ("c", LOCKING, 3)]
    assert flow["written"] == flow["moved"] == ["a", "b", "c"]
    assert client.held == {} and flow["intents"].pending() == [] and flow["gate"].tables == {}


def test_a_failed_check_releases_every_lock_and_writes_nothing(flow: dict[str, Any]) -> None:
    flow["fail_stage"] = "b"
    with pytest.raises(CommitFailedException, match="b: requirement failed"):
        tx.commit_tables(flow["wh"], changes("db.a", "db.b", "db.c"), flow["intents"], flow["gate"])
    assert flow["written"] == [] and flow["moved"] == []
    assert flow["client"].held == {} and flow["intents"].pending() == []


def test_a_failed_move_past_the_commit_point_is_handed_to_the_roll_forward(flow: dict[str, Any]) -> None:
    flow["fail_move"] = "b"
    finisher = Finisher(lambda name: flow["wh"], flow["intents"], flow["gate"], interval=3600)
    try:
        with pytest.raises(CommitStateUnknownException, match="is committed"):
            tx.commit_tables(flow["wh"], changes("db.a", "db.b"), flow["intents"], flow["gate"], finisher)
        # The locks stay for the roll-forward, the intent stays, readers keep waiting.
        assert len(flow["client"].held) == 2
        [(_, record)] = flow["intents"].pending()
        assert record["state"] == MOVING and finisher.pending() == 1
        assert set(flow["gate"].tables) == {("main", "db", "a"), ("main", "db", "b")}
    finally:
        finisher.close()


# ---------------------------------------------------------------- the roll-forward


def _record(held: dict[str, int]) -> dict[str, Any]:
    return {"id": "r1", "catalog": "main", "state": MOVING,
            "locks": [{"database": "db", "table": t, "lockid": i} for t, i in held.items()],
            "tables": [{"database": "db", "table": t, "name": "db", "old": f"old-{t}", "new": f"new-{t}",
                        "removed": []} for t in ("a", "b", "c")]}


def test_finish_reuses_the_dead_daemon_s_locks_moves_what_is_left_and_releases(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    client.next_id = 10
    client.held = {1: ("db", "a")}  # a's lock is still held by the keeper; b's timed out
    client.pointers = {("db", "a"): "new-a", ("db", "b"): "old-b", ("db", "c"): "old-c"}
    moved = []
    monkeypatch.setattr(tx, "_move", lambda wh, c, database, hive, new, t, metadata: moved.append((t["table"], new)))
    monkeypatch.setattr("pyiceberg.serializers.FromInputFile.table_metadata", lambda f: None)
    monkeypatch.setattr("pyiceberg.io.load_file_io", lambda *a, **k: type("IO", (), {"new_input": lambda s, x: x})())
    tx.finish(FakeWarehouse(client), _record({"a": 1, "b": 2, "c": 3}))  # type: ignore[arg-type]
    assert moved == [("b", "new-b"), ("c", "new-c")]
    assert [args for name, args in client.calls if name == "lock"] == [("db", "b"), ("db", "c")]
    assert client.held == {}


def test_finish_of_a_lock_record_only_releases_its_locks() -> None:
    client = FakeClient()
    client.held = {4: ("db", "a"), 5: ("db", "b")}
    tx.finish(FakeWarehouse(client), {"id": "r", "catalog": "main", "state": LOCKING,  # type: ignore[arg-type]
                                      "locks": [{"database": "db", "table": "a", "lockid": 4},
                                                {"database": "db", "table": "b", "lockid": 5}]})
    assert client.held == {} and not [c for c in client.calls if c[0] == "lock"]


def test_what_cannot_be_finished_at_start_is_retried_with_its_tables_gated(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    intents = Intents(tmp_path)
    intents.write(_record({}), durable=True)
    attempts = []

    def finish(wh: Any, record: dict[str, Any], lock_wait: float) -> None:
        attempts.append(record["id"])
        if len(attempts) < 3:
            raise CommitFailedException("db.b stayed locked by another writer")

    monkeypatch.setattr(tx, "finish", finish)
    gate = CommitGate()
    finisher = Finisher(lambda name: None, intents, gate, interval=0.05)  # type: ignore[arg-type,return-value]
    try:
        assert finisher.start() == 0
        assert set(gate.tables) == {("main", "db", "a"), ("main", "db", "b"), ("main", "db", "c")}
        deadline = time.monotonic() + 30
        while finisher.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert finisher.pending() == 0 and len(attempts) == 3
        assert gate.tables == {} and intents.pending() == []
    finally:
        finisher.close()


def test_a_roll_forward_that_cannot_finish_keeps_the_locks_it_holds_for_the_next_try(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    client.next_id = 10
    client.pointers = {("db", "a"): "old-a", ("db", "b"): "old-b", ("db", "c"): "old-c"}

    def refused(c: Any, database: str, table: str, wait: float) -> int:
        if table == "c":
            raise CommitFailedException("db.c stayed locked by another writer for 10 s")
        return FakeClient.lock(c, tx._lock_request(database, table)).lockid  # type: ignore[no-any-return]

    monkeypatch.setattr(tx, "_lock", refused)
    record = _record({})
    with pytest.raises(CommitFailedException):
        tx.finish(FakeWarehouse(client), record)  # type: ignore[arg-type]
    assert set(client.held) == {10, 11}
    assert [(lock["table"], lock["lockid"]) for lock in record["locks"]] == [("a", 10), ("b", 11)]


def test_a_table_gone_since_is_skipped_and_a_catalog_gone_sets_the_intent_aside(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pyiceberg.exceptions import NoSuchTableError

    from catalogd.errors import CatalogNotFoundError

    client = FakeClient()
    client.pointers = {("db", "a"): "old-a", ("db", "c"): "new-c"}  # b was dropped
    wh = FakeWarehouse(client)
    original = wh._get_hive_table

    def get(c: FakeClient, database: str, table: str) -> Any:
        if (database, table) not in c.pointers:
            raise NoSuchTableError(f"{database}.{table}")
        return original(c, database, table)

    monkeypatch.setattr(wh, "_get_hive_table", get)
    moved = []
    monkeypatch.setattr(tx, "_move", lambda wh, c, database, hive, new, t, metadata: moved.append(t["table"]))
    monkeypatch.setattr("pyiceberg.serializers.FromInputFile.table_metadata", lambda f: None)
    monkeypatch.setattr("pyiceberg.io.load_file_io", lambda *a, **k: type("IO", (), {"new_input": lambda s, x: x})())
    tx.finish(wh, _record({}))  # type: ignore[arg-type]
    assert moved == ["a"] and client.held == {}

    intents = Intents(tmp_path)
    path = intents.write(_record({}), durable=True)

    def missing(name: str) -> Any:
        raise CatalogNotFoundError(f"no catalog {name!r}")

    finisher = Finisher(missing, intents, CommitGate())
    assert finisher.start() == 1
    assert intents.pending() == [] and path.with_suffix(".abandoned").exists()


def test_without_a_finisher_a_failed_move_leaves_the_intent_for_the_next_start(flow: dict[str, Any]) -> None:
    flow["fail_move"] = "b"
    with pytest.raises(OSError):
        tx.commit_tables(flow["wh"], changes("db.a", "db.b"), flow["intents"], flow["gate"])
    [(_, record)] = flow["intents"].pending()
    assert record["state"] == MOVING and flow["gate"].tables == {}


def test_an_intent_that_cannot_be_written_deletes_the_new_metadata_files(
        flow: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    deleted = []
    monkeypatch.setattr(tx, "_delete", lambda moving: deleted.extend(m[0].table for m in moving))
    write = flow["intents"].write

    def full(record: dict[str, Any], durable: bool) -> Path:
        if durable:
            raise OSError(28, "No space left on device")
        return write(record, durable)  # type: ignore[no-any-return]

    monkeypatch.setattr(flow["intents"], "write", full)
    with pytest.raises(OSError, match="No space"):
        tx.commit_tables(flow["wh"], changes("db.a", "db.b"), flow["intents"], flow["gate"])
    assert deleted == ["a", "b"] and flow["moved"] == []
    assert flow["client"].held == {} and flow["intents"].pending() == []
