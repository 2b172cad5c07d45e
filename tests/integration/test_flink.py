"""Flink 1.20's ``HiveCatalog`` (its Hive 3.1.3 metastore client) on catalogd's HMS endpoint,
next to Spark on the same endpoint.

Flink's Hive 3 client names databases as ``@hive#db`` (``@hive#`` for all of them) and asks
Hive 3 methods (``get_table_req``, ``get_not_null_constraints``, ``get_table_statistics_req``);
these tests are what Flink SQL users do with it: see Spark's databases and tables, write a Hive
table that Spark reads, read a table that Spark wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from catalogd.client import CatalogClient

from .flink import FlinkSql

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def spark_db(client: CatalogClient, spark: Any, unique_name: Callable[[str], str]) -> Iterator[str]:
    """A database Spark created (through catalogd's HMS endpoint), dropped with its tables afterwards."""
    name = unique_name("flink")
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    client.drop_database(f"main.{name}", if_exists=True, cascade=True)


def test_hive_catalog_lists_what_spark_created(flink: FlinkSql, spark: Any, spark_db: str) -> None:
    spark.sql(f"CREATE TABLE {spark_db}.events (id BIGINT, kind STRING) USING parquet")
    spark.sql(f"CREATE TABLE {spark_db}.hive_events (id BIGINT, kind STRING) STORED AS PARQUET")

    databases = {row[0] for row in flink.sql("SHOW DATABASES")}
    assert {"default", spark_db} <= databases
    assert sorted(row[0] for row in flink.sql(f"SHOW TABLES FROM c.{spark_db}")) == ["events", "hive_events"]
    columns = [(row[0], row[1]) for row in flink.sql(f"DESCRIBE c.{spark_db}.hive_events")]
    assert columns == [("id", "BIGINT"), ("kind", "STRING")]


def test_flink_writes_a_hive_table_spark_reads(flink: FlinkSql, spark: Any, spark_db: str) -> None:
    # A Hive table (text, Hive's default format): 'connector' = 'hive' in Flink's default dialect.
    flink.sql(f"CREATE TABLE c.{spark_db}.from_flink (id INT, name STRING) WITH ('connector' = 'hive')")
    flink.sql(f"INSERT INTO c.{spark_db}.from_flink VALUES (1, 'one'), (2, 'two'), (3, 'three')")

    rows = spark.sql(f"SELECT id, name FROM {spark_db}.from_flink ORDER BY id").collect()
    assert [(r.id, r.name) for r in rows] == [(1, "one"), (2, "two"), (3, "three")]
    assert sorted(flink.sql(f"SELECT id, name FROM c.{spark_db}.from_flink")) == [[1, "one"], [2, "two"], [3, "three"]]


def test_flink_reads_a_table_spark_wrote(flink: FlinkSql, spark: Any, spark_db: str) -> None:
    spark.sql(f"CREATE TABLE {spark_db}.from_spark (id INT, name STRING) USING parquet")
    spark.sql(f"INSERT INTO {spark_db}.from_spark VALUES (10, 'ten'), (20, 'twenty')")
    spark.sql(f"CREATE TABLE {spark_db}.hive_from_spark (id INT, name STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {spark_db}.hive_from_spark VALUES (30, 'thirty')")

    assert sorted(flink.sql(f"SELECT id, name FROM c.{spark_db}.from_spark")) == [[10, "ten"], [20, "twenty"]]
    assert flink.sql(f"SELECT id, name FROM c.{spark_db}.hive_from_spark") == [[30, "thirty"]]
