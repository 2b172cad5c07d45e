"""Trino 476 on catalogd's HMS endpoint: a real Trino server (the session's ``trino`` fixture) with a
``hive`` and an ``iceberg`` catalog whose ``hive.metastore.uri`` is the session daemon's endpoint.

Trino's metastore client is a Hive 3 one without ``hive.metastore.thrift.catalog-name``: it sends
plain database names, so it sees catalogd's catalogs as a Hive 2.3 client does (the default
catalog's databases by name, the others' as ``<catalog>__<db>``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from catalogd.client import CatalogClient

from .helpers import local_path, sql
from .trino_server import TrinoError, TrinoServer

pytestmark = pytest.mark.integration


@pytest.fixture
def trino_db(client: CatalogClient, unique_name) -> Iterator[str]:
    """A fresh database of main (its name in Trino's ``hive`` catalog), dropped with its tables afterwards."""
    name = unique_name("trino")
    client.create_database(f"main.{name}")
    yield name
    client.drop_database(f"main.{name}", if_exists=True, cascade=True)


def test_show_schemas_lists_every_catalogs_databases(trino: TrinoServer, client, trino_db, unique_name):
    memory_db = unique_name("trmem")
    client.create_database(f"scratch.{memory_db}")
    try:
        schemas = {row[0] for row in trino.query("SHOW SCHEMAS FROM hive")}
        # main's (the default catalog) by name, the memory catalog's and the read-only one's prefixed.
        assert {"default", trino_db, f"scratch__{memory_db}", f"ro__{trino_db}"} <= schemas
        assert {row[0] for row in trino.query(f"SHOW SCHEMAS FROM hive LIKE 'scratch\\_\\_{memory_db}' ESCAPE '\\'")} \
            == {f"scratch__{memory_db}"}
    finally:
        client.drop_database(f"scratch.{memory_db}", if_exists=True, cascade=True)


def test_a_catalog_name_in_trino_reaches_that_catalog_natively(trino: TrinoServer, client, unique_name):
    # With hive.metastore.thrift.catalog-name=scratch, Trino's client sends `@scratch#<db>` names and
    # catName fields: catalogd's memory catalog by its own names, no prefix.
    db = unique_name("trnat")
    trino.query(f"CREATE SCHEMA scratch_native.{db}")
    try:
        assert client.database_exists(f"scratch.{db}")
        schemas = {row[0] for row in trino.query("SHOW SCHEMAS FROM scratch_native")}
        assert db in schemas
        assert not any(name.startswith("scratch__") for name in schemas)
        assert trino.query(f"CREATE TABLE scratch_native.{db}.t WITH (format = 'PARQUET') AS "
                           "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, name)") == [(2,)]
        assert sorted(trino.query(f"SELECT id, name FROM scratch_native.{db}.t")) == [(1, "a"), (2, "b")]
        assert client.table_exists(f"scratch.{db}.t")
        # The same table through the default door, as a Hive 2.3 client names it.
        assert sorted(trino.query(f"SELECT id FROM hive.scratch__{db}.t")) == [(1,), (2,)]
        trino.query(f"DROP TABLE scratch_native.{db}.t")
        assert not client.table_exists(f"scratch.{db}.t")
    finally:
        client.drop_database(f"scratch.{db}", if_exists=True, cascade=True)


def test_create_table_as_insert_select_drop(trino: TrinoServer, client, spark, trino_db):
    table = f"hive.{trino_db}.orders"
    assert trino.query(f"CREATE TABLE {table} WITH (format = 'PARQUET') AS "
                       "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, name)") == [(2,)]
    assert trino.query(f"INSERT INTO {table} VALUES (3, 'c')") == [(1,)]
    assert sorted(trino.query(f"SELECT id, name FROM {table}")) == [(1, "a"), (2, "b"), (3, "c")]
    # catalogd sees the table, in main's warehouse, and Spark reads the files Trino wrote there.
    info = client.get_table(f"main.{trino_db}.orders")
    location = local_path(info.location)
    assert location.is_relative_to(local_path(client.get_catalog("main").warehouse or ""))
    assert location.is_dir() and any(location.iterdir())
    assert sorted(sql(spark, f"SELECT id, name FROM {trino_db}.orders")) == [(1, "a"), (2, "b"), (3, "c")]
    trino.query(f"DROP TABLE {table}")
    assert not client.table_exists(f"main.{trino_db}.orders")
    assert not location.exists()


def test_a_table_and_a_view_written_by_spark_read_in_trino(trino: TrinoServer, spark, trino_db):
    spark.sql(f"CREATE TABLE {trino_db}.events (id INT, kind STRING) USING parquet PARTITIONED BY (kind)")
    spark.sql(f"INSERT INTO {trino_db}.events VALUES (1, 'click'), (2, 'view'), (3, 'click')")
    spark.sql(f"CREATE VIEW {trino_db}.clicks AS SELECT id FROM {trino_db}.events WHERE kind = 'click'")
    events = sorted(trino.query(f"SELECT id, kind FROM hive.{trino_db}.events"))
    assert events == [(1, "click"), (2, "view"), (3, "click")]
    assert trino.query(f"SELECT count(*) FROM hive.{trino_db}.events WHERE kind = 'view'") == [(1,)]
    tables = {row[0] for row in trino.query(f"SHOW TABLES FROM hive.{trino_db}")}
    assert tables == {"events", "clicks"}
    assert sorted(trino.query(f"SELECT id FROM hive.{trino_db}.clicks")) == [(1,), (3,)]


def test_staging_tables_are_invisible(trino: TrinoServer, client, trino_db):
    stage = client.begin_stage(f"main.{trino_db}.staged", "id bigint", purpose="create")
    try:
        assert trino.query(f"SHOW TABLES FROM hive.{trino_db}") == []
        with pytest.raises(TrinoError, match="does not exist"):
            trino.query(f"SELECT * FROM hive.{trino_db}.staged")
    finally:
        client.abort_stage(stage.id)


def test_a_read_only_catalogs_table_is_refused_with_catalogds_message(trino: TrinoServer, client, trino_db):
    trino.query(f"CREATE TABLE hive.{trino_db}.t AS SELECT 1 AS id")
    # The same database through the read-only catalog ``ro``: reads work ...
    assert trino.query(f"SELECT id FROM hive.ro__{trino_db}.t") == [(1,)]
    # ... metadata writes are refused, with catalogd's message in Trino's error.
    with pytest.raises(TrinoError) as refused:
        trino.query(f"CREATE TABLE hive.ro__{trino_db}.u (id INT)")
    text = refused.value.message
    assert "catalogd" in text and "'ro'" in text and "read-only" in text, text
    # A refused DROP TABLE: Trino's message is its own, catalogd's is under it.
    with pytest.raises(TrinoError, match="catalogd: catalog 'ro' is read-only: drop_table refused"):
        trino.query(f"DROP TABLE hive.ro__{trino_db}.t")
    assert client.table_exists(f"main.{trino_db}.t")
    assert not client.table_exists(f"main.{trino_db}.u")


def test_trino_and_pyiceberg_commit_concurrently_to_one_iceberg_table_and_lose_no_commit(
        trino: TrinoServer, daemon, trino_db):
    """Both commit through catalogd's HMS locks (``lock`` / ``check_lock`` / ``alter_table`` under the
    lock): every commit a writer was told succeeded is in the table at the end. A writer whose commit
    lost the race (its base metadata moved) is told so and retries, as a real one does."""
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import CommitFailedException

    trino.query(f"CREATE TABLE iceberg.{trino_db}.commits (writer varchar, n integer)")
    snapshots = f'SELECT count(*) FROM iceberg.{trino_db}."commits$snapshots"'
    (created,), = trino.query(snapshots)
    commits = 4
    done: dict[str, list[int]] = {"trino": [], "pyiceberg": []}
    errors: list[BaseException] = []

    def trino_writer() -> None:
        for n in range(commits):
            while True:
                try:
                    trino.query(f"INSERT INTO iceberg.{trino_db}.commits VALUES ('trino', {n})")
                    break
                except TrinoError as e:  # a commit that lost the race: retried
                    if "ommit" not in str(e) and "lock" not in str(e).lower():
                        raise
            done["trino"].append(n)

    def pyiceberg_writer() -> None:
        catalog = load_catalog("catalogd", type="hive", uri=daemon.hms_uri,
                               **{"lock-check-retries": "50", "lock-check-max-wait-time": "2"})
        for n in range(commits):
            while True:
                table = catalog.load_table(f"{trino_db}.commits")
                try:
                    table.append(pa.table({"writer": pa.array(["pyiceberg"]), "n": pa.array([n], pa.int32())}))
                    break
                except CommitFailedException:  # another writer committed first: reload, retry
                    continue
            done["pyiceberg"].append(n)

    def run(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in (trino_writer, pyiceberg_writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert done == {"trino": list(range(commits)), "pyiceberg": list(range(commits))}
    rows = sorted(trino.query(f"SELECT writer, n FROM iceberg.{trino_db}.commits"))
    assert rows == sorted([("trino", n) for n in range(commits)] + [("pyiceberg", n) for n in range(commits)])
    # One snapshot per commit after the CREATE TABLE's.
    assert trino.query(snapshots) == [(created + 2 * commits,)]
