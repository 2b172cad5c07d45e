"""Unmodified Spark SQL on a memory catalog through catalogd's HMS endpoint.

The session's SparkSession talks to the endpoint; ``scratch`` (memory) is served as
``scratch__<db>``. Its files live under ``<data-dir>/scratch-warehouse/scratch`` and go
when a table is dropped; the catalogd API sees what Spark made.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import hms_connection, local_path, sql

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def warehouse(daemon: Any) -> Path:
    return Path(daemon.data_dir) / "scratch-warehouse" / "scratch"


@pytest.fixture
def scratch_db(spark: Any, client: Any, unique_name: Any) -> Iterator[str]:
    """A database of ``scratch`` made by Spark; yields its name in the catalog."""
    name = unique_name("memdb")
    spark.sql(f"CREATE DATABASE scratch__{name}")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS scratch__{name} CASCADE")


def test_spark_statements_on_a_memory_catalog(spark, client, scratch_db, warehouse):
    name = scratch_db
    db = f"scratch__{name}"
    assert (db,) in sql(spark, "SHOW DATABASES")
    assert client.database_exists(f"scratch.{name}")
    db_dir = warehouse / f"{name}.db"
    assert db_dir.is_dir()
    # Hive-format and data-source tables, partitioned; INSERT static and dynamic.
    spark.sql(f"CREATE TABLE {db}.hive_t (id INT, name STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {db}.ds_t (id INT, ds STRING) USING parquet PARTITIONED BY (ds)")
    spark.sql(f"INSERT INTO {db}.hive_t PARTITION (ds='2024-01-01') VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {db}.hive_t PARTITION (ds) SELECT 3, 'c', '2024-01-02'")
    spark.sql(f"INSERT INTO {db}.ds_t VALUES (1, '2024-01-01'), (2, '2024-01-02')")
    assert (db_dir / "hive_t" / "ds=2024-01-01").is_dir()
    assert (db_dir / "ds_t" / "ds=2024-01-02").is_dir()
    # SELECT with partition pruning (the filter reaches get_partitions_by_filter).
    assert sql(spark, f"SELECT id FROM {db}.hive_t WHERE ds = '2024-01-02'") == [(3,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.ds_t WHERE ds = '2024-01-01'")) == [(1,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.hive_t WHERE ds >= '2024-01-01' AND ds <> '2024-01-02'")) \
        == [(1,), (2,)]
    assert sql(spark, f"SHOW PARTITIONS {db}.hive_t") == [("ds=2024-01-01",), ("ds=2024-01-02",)]
    assert {r[1] for r in sql(spark, f"SHOW TABLES IN {db}")} == {"hive_t", "ds_t"}
    # The catalogd API sees the tables Spark made, where Spark put them.
    assert set(client.list_tables(f"scratch.{name}")) >= {"hive_t", "ds_t"}
    hive_t = client.get_table(f"scratch.{name}.hive_t")
    assert [c.name for c in hive_t.columns] == ["id", "name"] and [c.name for c in hive_t.partition_keys] == ["ds"]
    assert local_path(hive_t.location).resolve() == (db_dir / "hive_t").resolve()
    # Both CTAS kinds, a view, a Java function.
    spark.sql(f"CREATE TABLE {db}.ctas_hive STORED AS ORC AS SELECT id, name FROM {db}.hive_t")
    spark.sql(f"CREATE TABLE {db}.ctas_ds USING parquet AS SELECT id FROM {db}.ds_t")
    assert sorted(sql(spark, f"SELECT id FROM {db}.ctas_hive")) == [(1,), (2,), (3,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.ctas_ds")) == [(1,), (2,)]
    spark.sql(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.hive_t WHERE ds = '2024-01-01'")
    assert sorted(sql(spark, f"SELECT * FROM {db}.v")) == [(1,), (2,)]
    assert client.get_table(f"scratch.{name}.v").view_text
    spark.sql(f"CREATE FUNCTION {db}.up AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper'")
    assert sql(spark, f"SELECT {db}.up('x')") == [("X",)]
    # ALTER: columns, properties, rename; partitions added and dropped; ANALYZE.
    spark.sql(f"ALTER TABLE {db}.ctas_hive ADD COLUMNS (extra STRING)")
    spark.sql(f"ALTER TABLE {db}.ctas_hive SET TBLPROPERTIES ('team' = 'data')")
    spark.sql(f"ALTER TABLE {db}.ctas_hive RENAME TO {db}.renamed")
    table = client.get_table(f"scratch.{name}.renamed")
    assert [c.name for c in table.columns] == ["id", "name", "extra"]
    assert table.properties["team"] == "data"
    assert sorted(sql(spark, f"SELECT id FROM {db}.renamed")) == [(1,), (2,), (3,)]
    spark.sql(f"ALTER TABLE {db}.hive_t ADD PARTITION (ds='2024-01-03')")
    spark.sql(f"ALTER TABLE {db}.hive_t DROP PARTITION (ds='2024-01-01')")
    assert sql(spark, f"SHOW PARTITIONS {db}.hive_t") == [("ds=2024-01-02",), ("ds=2024-01-03",)]
    assert not (db_dir / "hive_t" / "ds=2024-01-01").exists()
    assert sorted(sql(spark, f"SELECT id FROM {db}.hive_t")) == [(3,)]
    spark.sql(f"ANALYZE TABLE {db}.renamed COMPUTE STATISTICS")
    assert client.get_table(f"scratch.{name}.renamed").statistics.row_count == 3
    # DROP: table (its files go), view, function, then the database.
    ds_dir = local_path(client.get_table(f"scratch.{name}.ds_t").location)
    assert ds_dir.is_dir()
    spark.sql(f"DROP TABLE {db}.ds_t")
    spark.sql(f"DROP VIEW {db}.v")
    spark.sql(f"DROP FUNCTION {db}.up")
    assert not client.table_exists(f"scratch.{name}.ds_t")
    assert not ds_dir.exists()
    spark.sql(f"DROP DATABASE {db} CASCADE")
    assert not client.database_exists(f"scratch.{name}")
    assert not db_dir.exists()


def test_spark_pruning_filters_over_string_and_integer_keys(spark, scratch_db):
    """Spark pushes these down as HMS filter strings; catalogd evaluates them (a wrong answer
    would lose rows, an unparsed filter would fail the query)."""
    db = f"scratch__{scratch_db}"
    spark.sql(f"CREATE TABLE {db}.p (id INT) PARTITIONED BY (ds STRING, hr INT) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {db}.p PARTITION (ds, hr) VALUES (1, 'a', 1), (2, 'a', 12), (3, 'b', 3), "
              "(4, 'b', 30), (5, 'c', 5)")
    assert sorted(sql(spark, f"SELECT id FROM {db}.p WHERE (ds = 'a' OR ds = 'b') AND hr > 3")) == [(2,), (4,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.p WHERE ds IN ('a', 'c') AND hr <= 5")) == [(1,), (5,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.p WHERE ds <> 'b' AND hr >= 10")) == [(2,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.p WHERE ds LIKE 'b%'")) == [(3,), (4,)]
    assert sql(spark, f"SHOW PARTITIONS {db}.p PARTITION (ds='b')") == [("ds=b/hr=3",), ("ds=b/hr=30",)]


def test_external_table_files_outside_the_warehouse_survive_a_drop(spark, scratch_db, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    db = f"scratch__{scratch_db}"
    spark.sql(f"CREATE EXTERNAL TABLE {db}.ext (line STRING) STORED AS TEXTFILE LOCATION 'file://{victim}'")
    assert sql(spark, f"SELECT line FROM {db}.ext") == [("keep me",)]
    spark.sql(f"DROP TABLE {db}.ext")
    spark.sql(f"DROP DATABASE {db} CASCADE")
    assert (victim / "precious.txt").read_text() == "keep me"


def test_table_made_through_the_api_is_read_by_spark_and_one_dropped_there_is_gone(spark, client, scratch_db,
                                                                                  hms_address):
    from catalogd.model import Column

    db = f"scratch__{scratch_db}"
    client.create_table(f"scratch.{scratch_db}.api_t", [Column("id", "bigint")], format="parquet")
    spark.sql(f"INSERT INTO {db}.api_t VALUES (7)")
    assert sql(spark, f"SELECT id FROM {db}.api_t") == [(7,)]
    client.drop_table(f"scratch.{scratch_db}.api_t")
    with hms_connection(hms_address) as conn:
        assert "api_t" not in conn.get_all_tables(db)


def test_daemon_stop_removes_the_scratch_warehouse_and_nothing_else(daemon_factory, tmp_path):
    """A plain HMS client on a daemon whose only (default) catalog is memory: the files of its
    managed tables go at stop; an external table's directory outside survives."""
    from catalogd.hive_idl import ttypes

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    proc = daemon_factory(catalogs=[{"name": "scratch", "type": "memory"}], name="memonly")
    warehouse = Path(proc.data_dir) / "scratch-warehouse" / "scratch"

    def tbl(name: str, location: str | None, kind: str) -> Any:
        sd = ttypes.StorageDescriptor(
            cols=[ttypes.FieldSchema("line", "string", None)], location=location,
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat", compressed=False,
            numBuckets=-1, serdeInfo=ttypes.SerDeInfo(
                serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}),
            bucketCols=[], sortCols=[], parameters={})
        return ttypes.Table(tableName=name, dbName="db1", owner="me", sd=sd, partitionKeys=[],
                            parameters={"EXTERNAL": "TRUE"} if kind == "EXTERNAL_TABLE" else {}, tableType=kind)

    with hms_connection(proc.hms_address) as conn:
        conn.create_database(ttypes.Database(name="db1", parameters={}))
        assert conn.get_database("db1").locationUri == f"file://{warehouse}/db1.db"
        conn.create_table(tbl("t", None, "MANAGED_TABLE"))
        conn.create_table(tbl("ext", f"file://{victim}", "EXTERNAL_TABLE"))
        assert sorted(conn.get_all_tables("db1")) == ["ext", "t"]
    assert (warehouse / "db1.db" / "t").is_dir()
    assert proc.stop() == 0
    assert not warehouse.exists()
    assert (victim / "precious.txt").read_text() == "keep me"
