"""Spark interop: tables made by catalogd are ordinary HMS tables for Spark, and the other way round."""

from __future__ import annotations

import decimal

import pytest

from catalogd.model import Column, TableFormat, TableKind

from .helpers import local_path, short

pytestmark = [pytest.mark.integration, pytest.mark.spark]

D = decimal.Decimal


def test_insert_into_partitioned_parquet_table(spark, client, main_db):
    client.create_table(f"{main_db}.sales", "id bigint, amount decimal(10,2), name string",
                        partitioned_by="ds string", format="parquet")
    rows = [(1, D("1.50"), "a", "2024-01-01"), (2, D("2.25"), "b", "2024-01-02"), (3, D("3.00"), "c", "2024-01-02")]
    df = spark.createDataFrame(rows, "id bigint, amount decimal(10,2), name string, ds string")
    df.write.insertInto(f"{short(main_db)}.sales")

    back = spark.table(f"{short(main_db)}.sales")
    assert back.columns == ["id", "amount", "name", "ds"]
    assert sorted(tuple(r) for r in back.collect()) == rows
    partitions = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {short(main_db)}.sales").collect())
    assert partitions == ["ds=2024-01-01", "ds=2024-01-02"]
    # The files are where catalogd says the table lives.
    location = local_path(client.get_table(f"{main_db}.sales").location)
    assert sorted(p.name for p in location.iterdir() if p.is_dir()) == ["ds=2024-01-01", "ds=2024-01-02"]
    assert list((location / "ds=2024-01-02").glob("*.parquet"))


@pytest.mark.parametrize(("fmt", "suffix"), [("orc", ".orc"), ("csv", ".csv"), ("json", ".json")])
def test_insert_into_unpartitioned_table(spark, client, main_db, fmt, suffix):
    client.create_table(f"{main_db}.t", "id bigint, name string, score double", format=fmt)
    rows = [(1, "x, with a comma", 0.5), (2, 'y "quoted"', 1.25), (3, None, None)]
    spark.createDataFrame(rows, "id bigint, name string, score double").write.insertInto(f"{short(main_db)}.t")

    back = spark.table(f"{short(main_db)}.t")
    assert back.columns == ["id", "name", "score"]
    assert sorted(tuple(r) for r in back.collect()) == rows
    assert spark.sql(f"SELECT sum(id) FROM {short(main_db)}.t").first()[0] == 6
    location = local_path(client.get_table(f"{main_db}.t").location)
    files = [p for p in location.iterdir() if not p.name.startswith((".", "_"))]
    assert files, f"no data files in {location}"
    if fmt != "orc":  # Hive's ORC writer names files without a suffix
        assert all(p.name.endswith(suffix) for p in files), files
    # catalogd still describes the table as it was created.
    table = client.get_table(f"{main_db}.t")
    assert table.format is TableFormat(fmt)
    assert table.columns == [Column("id", "bigint"), Column("name", "string"), Column("score", "double")]


def test_spark_save_as_table_partitioned(spark, client, main_db):
    df = spark.createDataFrame([(1, "x", 2.5, "d1"), (2, "y", 3.5, "d2")],
                               "id bigint, name string, price double, ds string")
    df.write.partitionBy("ds").format("parquet").saveAsTable(f"{short(main_db)}.made_by_spark")

    table = client.get_table(f"{main_db}.made_by_spark")
    assert table.columns == [Column("id", "bigint"), Column("name", "string"), Column("price", "double")]
    assert table.partition_keys == [Column("ds", "string")]
    assert table.format is TableFormat.PARQUET
    assert table.kind is TableKind.MANAGED
    location = local_path(table.location)
    assert location.name == "made_by_spark" and location.is_dir()
    assert sorted(p.name for p in location.iterdir() if p.is_dir()) == ["ds=d1", "ds=d2"]
    assert not any(k.startswith("spark.sql.sources.schema") for k in table.properties), table.properties
    assert client.list_tables(main_db) == ["made_by_spark"]


def test_spark_create_table_stored_as_parquet(spark, client, main_db):
    spark.sql(
        f"CREATE TABLE {short(main_db)}.ddl_table (id INT COMMENT 'key', amount DECIMAL(12,3), tags ARRAY<STRING>) "
        "COMMENT 'made with SQL' PARTITIONED BY (ds STRING) STORED AS PARQUET"
    )
    table = client.get_table(f"{main_db}.ddl_table")
    assert table.columns == [Column("id", "int", "key"), Column("amount", "decimal(12,3)"),
                             Column("tags", "array<string>")]
    assert table.partition_keys == [Column("ds", "string")]
    assert table.format is TableFormat.PARQUET
    assert table.comment == "made with SQL"
    assert local_path(table.location).name == "ddl_table"


def test_spark_save_as_csv_data_source_table(spark, client, main_db):
    """Spark keeps a csv table's schema only in its own table properties; catalogd must read it there."""
    df = spark.createDataFrame([(1, "x", "d1")], "id bigint, name string, ds string")
    df.write.partitionBy("ds").format("csv").saveAsTable(f"{short(main_db)}.csv_by_spark")
    table = client.get_table(f"{main_db}.csv_by_spark")
    assert table.format is TableFormat.CSV
    assert table.columns == [Column("id", "bigint"), Column("name", "string")]
    assert table.partition_keys == [Column("ds", "string")]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_column_added_by_catalogd_is_visible_to_spark(spark, client, main_db, fmt):
    name = f"{short(main_db)}.grows"
    client.create_table(f"{main_db}.grows", "id bigint", partitioned_by="ds string", format=fmt)
    spark.createDataFrame([(1, "d1")], "id bigint, ds string").write.insertInto(name)
    assert spark.table(name).columns == ["id", "ds"]

    client.alter_table(f"{main_db}.grows", add_columns="note string")
    spark.catalog.refreshTable(name)
    assert spark.table(name).columns == ["id", "note", "ds"]
    spark.createDataFrame([(2, "hello", "d2")], "id bigint, note string, ds string").write.insertInto(name)
    assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, None, "d1"), (2, "hello", "d2")]
