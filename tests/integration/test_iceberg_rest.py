"""The Iceberg REST catalog on the session daemon, through pyiceberg's ``RestCatalog``.

Every operation pyiceberg's REST client has on tables and namespaces, on ``main`` (hive: the HMS
tables Iceberg's own HiveCatalog makes) and ``scratch`` (memory); concurrent appenders that lose
nothing; both doors on one table (pyiceberg's ``HiveCatalog`` on catalogd's HMS endpoint); and the
protocol's extras (``Idempotency-Key``, ``ETag``/``If-None-Match``, metric reports in ``/metrics``).
"""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType

from .helpers import Daemon
from .iceberg_helpers import call, local, rest, rest_namespace, unique

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "name": [f"r{i}" for i in range(start, start + n)]},
                    schema=SCHEMA)


def ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def namespace(daemon: Daemon) -> Iterator[str]:
    with rest_namespace(daemon) as name:
        yield name


def test_create_append_read(daemon: Daemon, namespace: str) -> None:
    catalog = rest(daemon)
    table = catalog.create_table(f"{namespace}.t", SCHEMA)
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    table.append(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))
    again = rest(daemon).load_table(f"{namespace}.t")
    assert ids(again) == [1, 2, 3]
    assert len(again.metadata.snapshots) == 2
    assert (namespace, "t") in catalog.list_tables(namespace)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{namespace}.missing")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("no_such_ns_x")


@pytest.mark.parametrize("warehouse", ["main", "scratch"])
def test_namespaces_and_their_errors(daemon: Daemon, warehouse: str) -> None:
    catalog = rest(daemon, warehouse)
    name = unique("ns")
    catalog.create_namespace(name, {"team": "data", "tier": "gold"})
    try:
        props = catalog.load_namespace_properties(name)
        assert props["team"] == "data" and props["tier"] == "gold", props
        assert (name,) in catalog.list_namespaces()
        assert catalog.namespace_exists(name)
        summary = catalog.update_namespace_properties(name, removals={"tier", "nothing"}, updates={"team": "ml"})
        assert (summary.removed, summary.updated, summary.missing) == (["tier"], ["team"], ["nothing"])
        props = catalog.load_namespace_properties(name)
        assert props["team"] == "ml" and "tier" not in props
        with pytest.raises(NamespaceAlreadyExistsError):
            catalog.create_namespace(name)
        catalog.create_table(f"{name}.t", SCHEMA)
        with pytest.raises(NamespaceNotEmptyError):
            catalog.drop_namespace(name)
        with pytest.raises(TableAlreadyExistsError):
            catalog.create_table(f"{name}.t", SCHEMA)
        with pytest.raises(NoSuchTableError):
            catalog.drop_table(f"{name}.missing")
        catalog.create_table(f"{name}.u", SCHEMA)
        with pytest.raises(TableAlreadyExistsError):
            catalog.rename_table(f"{name}.u", f"{name}.t")
        with pytest.raises(NoSuchNamespaceError):
            catalog.rename_table(f"{name}.u", f"{unique('nope')}.u")
        with pytest.raises(NoSuchTableError):
            catalog.rename_table(f"{name}.missing", f"{name}.v")
        catalog.drop_table(f"{name}.u")
        with pytest.raises(NoSuchNamespaceError):
            catalog.list_tables(unique("nope"))
        with pytest.raises(NoSuchNamespaceError):
            catalog.drop_namespace(unique("nope"))
        catalog.drop_table(f"{name}.t")
    finally:
        for ident in catalog.list_tables(name):
            catalog.drop_table(ident)
        catalog.drop_namespace(name)
    assert (name,) not in catalog.list_namespaces()
    assert not catalog.namespace_exists(name)


@pytest.mark.parametrize("warehouse", ["main", "scratch"])
def test_a_table_s_whole_life(daemon: Daemon, warehouse: str) -> None:
    """create, append, overwrite, schema and partition evolution, properties, rename, drop,
    register on the dropped table's metadata file, a create-table transaction, purge."""
    catalog = rest(daemon, warehouse)
    with rest_namespace(daemon, warehouse) as ns:
        table = catalog.create_table(f"{ns}.t", SCHEMA, properties={"note": "first"})
        table.append(rows(3))
        table.overwrite(rows(2, start=10))
        assert ids(catalog.load_table(f"{ns}.t")) == [10, 11]

        with table.update_schema() as update:
            update.add_column("score", DoubleType())
        table.append(pa.table({"id": [20], "name": ["s"], "score": [1.5]},
                              schema=pa.schema([*SCHEMA, ("score", pa.float64())])))
        with table.update_spec() as spec:
            spec.add_field("name", IdentityTransform(), "name_part")
        table.append(pa.table({"id": [30], "name": ["p"], "score": [2.5]},
                              schema=pa.schema([*SCHEMA, ("score", pa.float64())])))
        with table.transaction() as tx:
            tx.set_properties(stage="evolved")
            tx.remove_properties("note")

        loaded = catalog.load_table(f"{ns}.t")
        assert loaded.schema().find_field("score").field_type == DoubleType()
        assert len(loaded.specs()) == 2 and [f.name for f in loaded.spec().fields] == ["name_part"]
        assert loaded.properties.get("stage") == "evolved" and "note" not in loaded.properties
        assert ids(loaded) == [10, 11, 20, 30]
        scores = loaded.scan(row_filter="id = 30").to_arrow().column("score").to_pylist()
        assert scores == [2.5]
        assert len(loaded.metadata.snapshots) == 5  # append, overwrite (a delete and an append), 2 appends

        catalog.rename_table(f"{ns}.t", f"{ns}.t2")
        with pytest.raises(NoSuchTableError):
            catalog.load_table(f"{ns}.t")
        renamed = catalog.load_table(f"{ns}.t2")
        assert ids(renamed) == [10, 11, 20, 30]

        # Dropped without purge, its files stay: register a new table on its last metadata file.
        metadata_location = renamed.metadata_location
        catalog.drop_table(f"{ns}.t2")
        assert local(metadata_location).exists()
        registered = catalog.register_table(f"{ns}.reg", metadata_location)
        assert registered.metadata_location == metadata_location
        assert ids(catalog.load_table(f"{ns}.reg")) == [10, 11, 20, 30]

        # A create-table transaction (stage-create): nothing is there until it commits.
        tx = catalog.create_table_transaction(f"{ns}.staged", SCHEMA)
        assert not catalog.table_exists(f"{ns}.staged")
        tx.append(rows(2, start=100))
        tx.commit_transaction()
        assert ids(catalog.load_table(f"{ns}.staged")) == [100, 101]

        # Purge: the table's own files are deleted.
        files = [p for p in local(registered.location()).rglob("*") if p.is_file()]
        assert any(p.suffix == ".parquet" for p in files) and any(p.name.endswith(".metadata.json") for p in files)
        catalog.purge_table(f"{ns}.reg")
        assert not catalog.table_exists(f"{ns}.reg")
        assert [p for p in files if p.exists()] == []


def append_with_retries(table: Table, data: pa.Table, attempts: int = 30) -> None:
    """Append, refreshing and trying again on a conflict (another writer moved the table)."""
    for _ in range(attempts):
        try:
            table.append(data)
            return
        except CommitFailedException:
            table.refresh()
    raise AssertionError(f"append not committed after {attempts} attempts")


def run_appenders(appenders: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # reported by the test, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in appenders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "an appender hung"
    assert not errors, errors


THREADS, APPENDS = 4, 5


def test_concurrent_appenders_lose_nothing(daemon: Daemon, namespace: str) -> None:
    rest(daemon).create_table(f"{namespace}.hot", SCHEMA)

    def appender(n: int) -> Callable[[], None]:
        def run() -> None:
            table = rest(daemon).load_table(f"{namespace}.hot")  # a client of its own per thread
            for i in range(APPENDS):
                append_with_retries(table, rows(1, start=n * 100 + i))
        return run

    run_appenders([appender(n) for n in range(THREADS)])
    final = rest(daemon).load_table(f"{namespace}.hot")
    expected = sorted(n * 100 + i for n in range(THREADS) for i in range(APPENDS))
    assert ids(final) == expected
    # Every acknowledged append is a snapshot of the history, in one line of parents.
    assert len(final.metadata.snapshots) == THREADS * APPENDS
    assert len(final.history()) == THREADS * APPENDS


# ---------------------------------------------------------------- both doors

def hive(hms_address: tuple[str, int]) -> HiveCatalog:
    host, port = hms_address
    # The lock waits the REST door's commits use (pyiceberg's default backs off up to a minute).
    return HiveCatalog("hms", uri=f"thrift://{host}:{port}", **{
        "lock-check-min-wait-time": "0.05", "lock-check-max-wait-time": "1.0", "lock-check-retries": "60"})


def hms_database(warehouse: str, namespace: str) -> str:
    """The database name a Hive 2.3 client (pyiceberg's ``HiveCatalog``) gives a warehouse's namespace."""
    return namespace if warehouse == "main" else f"{warehouse}__{namespace}"


def test_a_rest_table_is_the_hms_door_s_table_and_the_reverse(daemon: Daemon, namespace: str,
                                                               hms_address: tuple[str, int]) -> None:
    catalog, hms = rest(daemon), hive(hms_address)
    made = catalog.create_table(f"{namespace}.by_rest", SCHEMA)
    made.append(rows(3))
    seen = hms.load_table(f"{namespace}.by_rest")
    assert seen.metadata_location == catalog.load_table(f"{namespace}.by_rest").metadata_location
    assert ids(seen) == [0, 1, 2]

    by_hms = hms.create_table(f"{namespace}.by_hms", SCHEMA)
    by_hms.append(rows(2, start=10))
    through_rest = catalog.load_table(f"{namespace}.by_hms")
    assert through_rest.metadata_location == hms.load_table(f"{namespace}.by_hms").metadata_location
    through_rest.append(rows(1, start=20))
    assert ids(hms.load_table(f"{namespace}.by_hms")) == [10, 11, 20]


@pytest.mark.parametrize("warehouse", ["main", "scratch"])
def test_rest_and_hms_appenders_on_one_table_lose_nothing(daemon: Daemon, warehouse: str,
                                                          hms_address: tuple[str, int]) -> None:
    """Two appenders through REST and two through the HMS endpoint, on one table: one HMS lock
    (also for a non-default catalog, whose database the two doors spell apart)."""
    with rest_namespace(daemon, warehouse) as ns:
        rest(daemon, warehouse).create_table(f"{ns}.shared", SCHEMA)

        def appender(n: int, over_rest: bool) -> Callable[[], None]:
            def run() -> None:
                if over_rest:
                    table = rest(daemon, warehouse).load_table(f"{ns}.shared")
                else:
                    table = hive(hms_address).load_table(f"{hms_database(warehouse, ns)}.shared")
                for i in range(APPENDS):
                    append_with_retries(table, rows(1, start=n * 100 + i))
            return run

        run_appenders([appender(n, over_rest=n % 2 == 0) for n in range(THREADS)])
        final = rest(daemon, warehouse).load_table(f"{ns}.shared")
        assert ids(final) == sorted(n * 100 + i for n in range(THREADS) for i in range(APPENDS))
        assert len(final.metadata.snapshots) == THREADS * APPENDS
        assert final.metadata_location == hive(hms_address).load_table(
            f"{hms_database(warehouse, ns)}.shared").metadata_location


# ---------------------------------------------------------------- Idempotency-Key, ETag, metrics

def create_body(name: str) -> dict[str, Any]:
    return {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}


def test_an_idempotency_key_replays_the_first_answer(daemon: Daemon, namespace: str) -> None:
    path = f"/v1/main/namespaces/{namespace}/tables"
    key = {"Idempotency-Key": "0190d4a8-7b3c-7a41-9f0e-5b1c2d3e4f50-" + unique("k")}
    first = call(daemon, "POST", path, create_body("once"), key)
    assert first.status == 200, first
    again = call(daemon, "POST", path, create_body("once"), key)
    assert (again.status, again.body) == (200, first.body)
    other = call(daemon, "POST", path, create_body("other"), key)
    assert other.status == 422, other
    assert other.error["code"] == 422
    assert not rest(daemon).table_exists(f"{namespace}.other")
    # Without the key the same create is a second create: 409.
    plain = call(daemon, "POST", path, create_body("once"))
    assert (plain.status, plain.error["type"]) == (409, "AlreadyExistsException")


def test_a_commit_retried_with_its_idempotency_key_is_applied_once(daemon: Daemon, namespace: str) -> None:
    table = rest(daemon).create_table(f"{namespace}.once", SCHEMA)
    path = f"/v1/main/namespaces/{namespace}/tables/once"
    body = {"requirements": [{"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)}],
            "updates": [{"action": "set-properties", "updates": {"n": "1"}}]}
    key = {"Idempotency-Key": unique("commit-key-0190d4a8")}
    first = call(daemon, "POST", path, body, key)
    assert first.status == 200, first
    again = call(daemon, "POST", path, body, key)
    assert (again.status, again.body) == (200, first.body)
    metadata = local(first.json()["metadata-location"]).parent
    assert len(list(metadata.glob("*.metadata.json"))) == 2  # the create's and one commit's
    assert rest(daemon).load_table(f"{namespace}.once").metadata_location == first.json()["metadata-location"]


def test_a_load_s_etag_answers_304_until_a_commit(daemon: Daemon, namespace: str) -> None:
    table = rest(daemon).create_table(f"{namespace}.tagged", SCHEMA)
    path = f"/v1/main/namespaces/{namespace}/tables/tagged"
    first = call(daemon, "GET", path)
    etag = first.headers["etag"]
    assert first.status == 200 and etag
    same = call(daemon, "GET", path, headers={"If-None-Match": etag})
    assert (same.status, same.body) == (304, b"")
    table.append(rows(1))
    after = call(daemon, "GET", path, headers={"If-None-Match": etag})
    assert after.status == 200 and after.headers["etag"] != etag
    assert after.json()["metadata-location"] == rest(daemon).load_table(f"{namespace}.tagged").metadata_location


def _metric(daemon: Daemon, name: str, labels: str) -> float:
    text = urllib.request.urlopen(f"{daemon.http}/metrics", timeout=60).read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and all(part in line for part in labels.split(",")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_requests_and_metric_reports_are_counted(daemon: Daemon, namespace: str) -> None:
    rest(daemon).create_table(f"{namespace}.m", SCHEMA)
    loads = _metric(daemon, "catalogd_iceberg_requests_total", 'operation="loadTable",status="200"')
    reports = _metric(daemon, "catalogd_iceberg_metrics_reports_total", 'type="scan-report"')
    assert call(daemon, "GET", f"/v1/main/namespaces/{namespace}/tables/m").status == 200
    report = {"report-type": "scan-report", "table-name": f"{namespace}.m", "snapshot-id": 1,
              "filter": True, "schema-id": 0, "projected-field-ids": [1], "projected-field-names": ["id"],
              "metrics": {}}
    assert call(daemon, "POST", f"/v1/main/namespaces/{namespace}/tables/m/metrics", report).status == 204
    bad = call(daemon, "POST", f"/v1/main/namespaces/{namespace}/tables/m/metrics", {"report-type": "nope"})
    assert (bad.status, bad.error["type"]) == (400, "BadRequestException")
    assert _metric(daemon, "catalogd_iceberg_requests_total", 'operation="loadTable",status="200"') >= loads + 1
    assert _metric(daemon, "catalogd_iceberg_metrics_reports_total", 'type="scan-report"') == reports + 1
