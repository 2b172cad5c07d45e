"""Tests for TableOperations.set_query (ALTER DYNAMIC TABLE t AS <query>) with stand-ins for
the metastore, Spark's analyzer and the job supervisor: what happens, and in which order,
for a FULL and a CONTINUOUS table, and that a refusal changes nothing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from dynamic_fakes import entry

from catalogd.dynamic import store
from catalogd.dynamic.registry import Registry
from catalogd.dynamic.signing import DefinitionSigner
from catalogd.dynamic.tables import TableOperations
from catalogd.errors import ConflictError, InvalidArgumentError
from catalogd.model import Column, RefreshMode, RefreshRun, RefreshState, RunStatus, Table
from catalogd.names import ObjectPath

FULL_NAME = "main.db.t"
SIGNER = DefinitionSigner(b"k" * 32)


class Catalog:
    """One hive catalog holding one dynamic table; records every parameter write."""

    name = "main"

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.table = Table(name="t", database="db", catalog="main",
                           columns=[Column("id", "bigint"), Column("amount", "double")],
                           properties={store.FRESHNESS: "1 HOUR", **store.chunks(store.QUERY, "SELECT id, amount")})
        self.writes: list[tuple[dict[str, str], tuple[str, ...], list[Column]]] = []

    def info(self) -> Any:
        return SimpleNamespace(type="hive")

    def fresh(self) -> Catalog:
        return self

    def get_table(self, database: str, name: str) -> Table:
        return self.table

    def update_table_parameters(self, database: str, name: str, set: dict[str, str],
                                remove_prefixes: tuple[str, ...] = (), add_columns: Any = ()) -> dict[str, str]:
        self.events.append("write")
        self.writes.append((set, remove_prefixes, list(add_columns)))
        return set


class Manager:
    def __init__(self, catalog: Catalog) -> None:
        self.cat = catalog

    def resolve_object(self, path: ObjectPath) -> tuple[Catalog, str, str]:
        return self.cat, "db", "t"

    def catalog(self, name: str | None = None) -> Catalog:
        return self.cat

    def check_writable(self, catalog: Any) -> None:
        pass

    def expand_query(self, catalog: Any, database: str, query: str, kind: str) -> Any:
        tables = ["db.t"] if "FROM t" in query else ["db.src"]
        return SimpleNamespace(original=query, qualified=f"/* qualified */ {query}", tables=tables)


class Analyzer:
    def __init__(self, columns: list[Column]) -> None:
        self.columns = columns

    def analyze(self, query: str, timeout: float = 120.0) -> list[Column]:
        return self.columns


class Supervisor:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def detach(self, e: Any) -> Any:
        self.events.append("detach")
        return "the old job"

    def finish(self, detached: list[Any], why: str) -> None:
        self.events.append(f"finish {[d for d in detached if d is not None]}")


class Driver:
    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.supervisor = Supervisor(events)

    def activate(self, e: Any, initial: bool = False, catch_up: Any = None) -> None:
        self.events.append("activate")


def operations(tmp_path: Path, mode: RefreshMode, state: RefreshState = RefreshState.RUNNING,
               new_columns: list[Column] | None = None,
               runs: list[RefreshRun] | None = None) -> tuple[TableOperations, Catalog, list[str], Any]:
    events: list[str] = []
    catalog = Catalog(events)
    registry = Registry()
    driven = entry("t", "1 hour" if mode is RefreshMode.FULL else "10 seconds", mode, state)
    registry.put(driven)
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "offsets").write_text("0")
    columns = new_columns if new_columns is not None else [Column("id", "bigint"), Column("amount", "double"),
                                                           Column("doubled", "double")]
    ops = TableOperations(
        manager=Manager(catalog),  # type: ignore[arg-type]
        config=SimpleNamespace(dynamic_tables=SimpleNamespace(time_zone="UTC", enabled=True)),  # type: ignore[arg-type]
        registry=registry,
        runs=SimpleNamespace(live=lambda full: {r.id: r for r in runs or []}),  # type: ignore[arg-type]
        records=None,  # type: ignore[arg-type]
        jobs=SimpleNamespace(checkpoint=lambda e: checkpoint, spark_conf=lambda c: {},  # type: ignore[arg-type]
                             check_definition=lambda *args, **kwargs: events.append("checked"), signer=SIGNER),
        executor=None,  # type: ignore[arg-type]
        driver=Driver(events),  # type: ignore[arg-type]
        loader=None,  # type: ignore[arg-type]
        analyzers=SimpleNamespace(get=lambda name, conf: Analyzer(columns)),  # type: ignore[arg-type]
    )
    ops.get = lambda path: SimpleNamespace(full_name=FULL_NAME)  # type: ignore[method-assign]
    return ops, catalog, events, checkpoint


def test_full_table_gets_the_query_and_columns_in_one_write(tmp_path: Path) -> None:
    ops, catalog, events, checkpoint = operations(tmp_path, RefreshMode.FULL)
    _, added = ops.set_query(ObjectPath("main", "db", "t"), "SELECT id, amount, amount * 2 AS doubled FROM src")
    assert added == [Column("doubled", "double")]
    # FULL: no job to stop or start; the next run reads the new query from the metastore.
    assert events == ["finish []", "checked", "write"]
    (params, removed, columns), = catalog.writes
    # Signed anew: the stored definition with the new query is catalogd's.
    assert SIGNER.verify(FULL_NAME, {**catalog.table.properties, **params})
    assert store.unchunk(params, store.QUERY) == "SELECT id, amount, amount * 2 AS doubled FROM src"
    assert store.unchunk(params, store.EXPANDED) == "/* qualified */ SELECT id, amount, amount * 2 AS doubled FROM src"
    assert params[store.SOURCES] == "db.src"
    assert removed == (store.QUERY + ".", store.EXPANDED + ".")
    assert columns == [Column("doubled", "double")]
    assert checkpoint.exists()


def test_continuous_table_stops_its_job_first_and_starts_a_new_one_without_the_checkpoint(tmp_path: Path) -> None:
    ops, _, events, checkpoint = operations(tmp_path, RefreshMode.CONTINUOUS)
    ops.set_query(ObjectPath("main", "db", "t"), "SELECT id, amount, amount * 2 AS doubled FROM src")
    # The old job is stopped before the schema changes (it would commit the old one), and the
    # new one starts from scratch: its checkpoint belonged to the old query.
    assert events == ["detach", "finish ['the old job']", "checked", "write", "activate"]
    assert not checkpoint.exists()
    assert ops.registry.get(FULL_NAME).stream is None  # type: ignore[union-attr]


def test_suspended_continuous_table_starts_on_resume_only(tmp_path: Path) -> None:
    ops, _, events, checkpoint = operations(tmp_path, RefreshMode.CONTINUOUS, RefreshState.SUSPENDED)
    ops.set_query(ObjectPath("main", "db", "t"), "SELECT id, amount FROM src")
    assert "activate" not in events and not checkpoint.exists()


@pytest.mark.parametrize("mode", [RefreshMode.FULL, RefreshMode.CONTINUOUS])
def test_a_refused_query_changes_nothing(tmp_path: Path, mode: RefreshMode) -> None:
    ops, catalog, events, checkpoint = operations(tmp_path, mode, new_columns=[Column("id", "string")])
    with pytest.raises(InvalidArgumentError, match="column id would change type from bigint to string"):
        ops.set_query(ObjectPath("main", "db", "t"), "SELECT CAST(id AS STRING) AS id FROM src")
    assert events == [] and catalog.writes == [] and checkpoint.exists()


def test_a_query_reading_a_file_is_refused_before_anything(tmp_path: Path) -> None:
    ops, catalog, events, _ = operations(tmp_path, RefreshMode.FULL)
    with pytest.raises(InvalidArgumentError, match="a path or a file"):
        ops.set_query(ObjectPath("main", "db", "t"), "SELECT value FROM text.`file:///tmp/secret.txt`")
    assert events == [] and catalog.writes == []


def test_a_query_that_reads_the_table_itself_is_refused(tmp_path: Path) -> None:
    ops, catalog, events, _ = operations(tmp_path, RefreshMode.FULL)
    with pytest.raises(InvalidArgumentError, match="reads the table itself"):
        ops.set_query(ObjectPath("main", "db", "t"), "SELECT id, amount FROM t")
    assert events == [] and catalog.writes == []


@pytest.mark.parametrize("status", [RunStatus.PENDING, RunStatus.RUNNING])
def test_a_batch_run_under_way_is_a_conflict(tmp_path: Path, status: RunStatus) -> None:
    run = RefreshRun(id="r1", table=FULL_NAME, trigger="manual", status=status)
    ops, catalog, events, checkpoint = operations(tmp_path, RefreshMode.CONTINUOUS, runs=[run])
    with pytest.raises(ConflictError, match="refresh run\\(s\\) r1 are under way"):
        ops.set_query(ObjectPath("main", "db", "t"), "SELECT id, amount FROM src")
    assert events == [] and catalog.writes == [] and checkpoint.exists()


def test_the_streaming_run_itself_is_no_conflict(tmp_path: Path) -> None:
    run = RefreshRun(id="s1", table=FULL_NAME, trigger="continuous", status=RunStatus.RUNNING)
    ops, catalog, _, _ = operations(tmp_path, RefreshMode.CONTINUOUS, runs=[run])
    ops.set_query(ObjectPath("main", "db", "t"), "SELECT id, amount FROM src")
    assert len(catalog.writes) == 1
