"""A view text rewritten for a prefixed catalog makes Spark read that catalog's tables, whatever the current database.

The endpoint shows a prefixed catalog's database ``db`` as ``<prefix>db``. Here both
sides live in main's metastore: database ``b`` plays the backing database and
``<prefix>b`` the same database as the endpoint shows it, each with its own
``orders`` table holding a different row, so the row Spark reads tells which
table the view resolved to.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from catalogd.hms.view_text import view_to_backing, view_to_client

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def backing_and_client_dbs(spark, unique_name) -> Iterator[tuple[str, str, str]]:
    prefix = unique_name("px") + "__"
    backing = unique_name("vt")
    shown = prefix + backing
    for db, value in ((backing, "backing"), (shown, "endpoint")):
        spark.sql(f"CREATE DATABASE {db}")
        spark.sql(f"CREATE TABLE {db}.orders (id INT, side STRING) USING parquet")
        spark.sql(f"INSERT INTO {db}.orders VALUES (1, '{value}')")
        spark.sql(f"CREATE TABLE {db}.custs (id INT, name STRING) USING parquet")
        spark.sql(f"INSERT INTO {db}.custs VALUES (1, '{value}-cust')")
    yield prefix, backing, shown
    spark.sql("USE default")
    for db in (backing, shown):
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_spark_reads_a_rewritten_view_from_the_prefixed_databases(spark, hms, backing_and_client_dbs):
    prefix, backing, shown = backing_and_client_dbs
    # Made by Spark in the backing metastore: unqualified, qualified, spark_catalog., a CTE, backticks.
    spark.sql(f"USE {backing}")
    spark.sql(
        f"CREATE VIEW {backing}.v AS WITH o AS (SELECT * FROM orders) "
        f"SELECT o.side, c.name FROM o JOIN `{backing}`.`custs` c ON o.id = c.id "
        f"WHERE o.id IN (SELECT id FROM spark_catalog.{backing}.orders)"
    )
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {backing}.v").collect()] == [("backing", "backing-cust")]

    stored = hms.call("get_table", backing, "v")
    # Without the rewrite, the same view under the endpoint's name reads the backing tables.
    plain = hms.call("get_table", backing, "v")
    plain.dbName, plain.tableName = shown, "v_plain"
    hms.call("create_table", plain, idempotent=False)
    spark.sql("USE default")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {shown}.v_plain").collect()] == [("backing", "backing-cust")]

    # As the endpoint shows it: reads the endpoint's (prefixed) tables.
    view_to_client(stored, prefix)
    assert f"{shown}.orders" in stored.viewOriginalText
    stored.dbName = shown
    hms.call("create_table", stored, idempotent=False)
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {shown}.v").collect()] == [("endpoint", "endpoint-cust")]

    # And back, as a create through the endpoint would store it: the backing tables again.
    created = hms.call("get_table", shown, "v")
    view_to_backing(created, prefix)
    created.dbName, created.tableName = backing, "v_back"
    hms.call("create_table", created, idempotent=False)
    rows = spark.sql(f"SELECT * FROM {backing}.v_back").collect()
    assert [tuple(r) for r in rows] == [("backing", "backing-cust")]
