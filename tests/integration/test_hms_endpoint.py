"""catalogd's HMS endpoint with unmodified Spark SQL and plain HMS clients (hmsclient).

The session's SparkSession is on the endpoint (``catalogd spark-conf main --hms-only``): every statement
here reaches the backing metastore only through catalogd. ``ro`` is a read-only hive catalog
on main's metastore, served as ``ro__<db>``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from polling import wait_until

from catalogd.hive_idl import ttypes
from catalogd.model import Column, StageState

from .helpers import hms_connection, sql

pytestmark = pytest.mark.integration


@pytest.fixture
def spark_db(client, unique_name, spark) -> Iterator[str]:
    """A database made by Spark through the endpoint in main (its Spark and HMS name)."""
    name = unique_name("hmsdb")
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def test_spark_statements_on_a_hive_catalog(spark, client, spark_db, tmp_path):
    db = spark_db
    assert (db,) in sql(spark, "SHOW DATABASES")
    assert client.database_exists(f"main.{db}")
    # Hive-format and data-source tables, partitioned.
    spark.sql(f"CREATE TABLE {db}.hive_t (id INT, name STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {db}.ds_t (id INT, ds STRING) USING parquet PARTITIONED BY (ds)")
    spark.sql(f"INSERT INTO {db}.hive_t PARTITION (ds='2024-01-01') VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {db}.hive_t PARTITION (ds) SELECT 3, 'c', '2024-01-02'")
    spark.sql(f"INSERT INTO {db}.ds_t VALUES (1, '2024-01-01'), (2, '2024-01-02')")
    assert sql(spark, f"SELECT id FROM {db}.hive_t WHERE ds = '2024-01-02'") == [(3,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.ds_t WHERE ds = '2024-01-01'")) == [(1,)]
    assert sql(spark, f"SHOW PARTITIONS {db}.hive_t") == [("ds=2024-01-01",), ("ds=2024-01-02",)]
    assert {r[1] for r in sql(spark, f"SHOW TABLES IN {db}")} == {"hive_t", "ds_t"}
    # Both CTAS kinds, a view, a Java function.
    spark.sql(f"CREATE TABLE {db}.ctas_hive STORED AS ORC AS SELECT id, name FROM {db}.hive_t")
    spark.sql(f"CREATE TABLE {db}.ctas_ds USING parquet AS SELECT id FROM {db}.ds_t")
    assert sorted(sql(spark, f"SELECT id FROM {db}.ctas_hive")) == [(1,), (2,), (3,)]
    assert sorted(sql(spark, f"SELECT id FROM {db}.ctas_ds")) == [(1,), (2,)]
    spark.sql(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.hive_t WHERE ds = '2024-01-01'")
    assert sorted(sql(spark, f"SELECT * FROM {db}.v")) == [(1,), (2,)]
    spark.sql(f"CREATE FUNCTION {db}.up AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper'")
    assert sql(spark, f"SELECT {db}.up('x')") == [("X",)]
    # ALTER: columns, properties, rename; partitions added and dropped; ANALYZE.
    spark.sql(f"ALTER TABLE {db}.ctas_hive ADD COLUMNS (extra STRING)")
    spark.sql(f"ALTER TABLE {db}.ctas_hive SET TBLPROPERTIES ('team' = 'data')")
    spark.sql(f"ALTER TABLE {db}.ctas_hive RENAME TO {db}.renamed")
    table = client.get_table(f"main.{db}.renamed")
    assert [c.name for c in table.columns] == ["id", "name", "extra"]
    assert table.properties["team"] == "data"
    spark.sql(f"ALTER TABLE {db}.hive_t ADD PARTITION (ds='2024-01-03')")
    spark.sql(f"ALTER TABLE {db}.hive_t DROP PARTITION (ds='2024-01-01')")
    assert sql(spark, f"SHOW PARTITIONS {db}.hive_t") == [("ds=2024-01-02",), ("ds=2024-01-03",)]
    spark.sql(f"ANALYZE TABLE {db}.renamed COMPUTE STATISTICS")
    assert client.get_table(f"main.{db}.renamed").statistics.row_count == 3
    # DROP: table, view, function, then the database.
    location = client.get_table(f"main.{db}.ds_t").location
    spark.sql(f"DROP TABLE {db}.ds_t")
    spark.sql(f"DROP VIEW {db}.v")
    spark.sql(f"DROP FUNCTION {db}.up")
    assert not client.table_exists(f"main.{db}.ds_t")
    assert location and not _exists(location)
    spark.sql(f"DROP DATABASE {db} CASCADE")
    assert not client.database_exists(f"main.{db}")


def _exists(uri: str) -> bool:
    from pathlib import Path
    from urllib.parse import urlparse

    return Path(urlparse(uri).path).exists()


def test_spark_never_lists_a_stage_while_atomic_ctas_writes(spark, client, spark_db):
    from catalogd.spark import staged_table

    seen: list[set[str]] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def watch() -> None:
        try:
            with hms_connection(("127.0.0.1", _port(spark))) as c:
                while not stop.is_set():
                    seen.append(set(c.get_all_tables(spark_db)) | set(c.get_tables(spark_db, "*")))
        except BaseException as e:  # shown below: a watcher that died saw nothing
            failed.append(e)

    def listed_since(count: int) -> bool:
        assert not failed, failed
        return len(seen) > count + 1  # the listing under way at ``count`` may have begun before

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with staged_table(f"main.{spark_db}.t", "id int", client=client, spark=spark) as staged:
            assert staged.name is not None
            spark.sql(f"INSERT INTO {staged.name} VALUES (1)")
            # The watcher lists while the stage exists (with its rows), however slow the machine.
            mark = len(seen)
            wait_until(lambda: listed_since(mark), 60, what="the watcher to list the database with the stage")
            # Reachable by its exact name, absent from every listing.
            assert sql(spark, f"SELECT * FROM {staged.name}") == [(1,)]
            listed = {r[1] for r in sql(spark, f"SHOW TABLES IN {spark_db}")}
            assert not any(t.startswith("__catalogd_stage") for t in listed)
            with hms_connection(("127.0.0.1", _port(spark))) as c:
                assert c.get_table(spark_db, staged.name.split(".")[1]).tableName
                metas = c.get_table_meta(spark_db, "*", [])
                assert not any(m.tableName.startswith("__catalogd_stage") for m in metas)
    finally:
        stop.set()
        watcher.join()
    assert not failed, failed
    assert not [s for s in seen if any(t.startswith("__catalogd_stage") for t in s)]
    assert sql(spark, f"SELECT * FROM {spark_db}.t") == [(1,)]


def _port(spark: Any) -> int:
    uri = spark.sparkContext.getConf().get("spark.hadoop.hive.metastore.uris")
    return int(uri.rsplit(":", 1)[1])


def test_read_only_catalog_refuses_spark_writes(spark, client, spark_db):
    spark.sql(f"CREATE TABLE {spark_db}.t (id INT) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {spark_db}.t VALUES (1)")
    # The same database through the read-only catalog ``ro`` (prefix ro__): reads work ...
    assert sql(spark, f"SELECT * FROM ro__{spark_db}.t") == [(1,)]
    # ... metadata writes are refused, naming catalogd, the catalog and the operation.
    with pytest.raises(Exception) as refused:
        spark.sql(f"CREATE TABLE ro__{spark_db}.u (id INT)")
    text = str(refused.value)
    assert "catalogd" in text and "'ro'" in text and "read-only" in text and "create_table" in text
    with pytest.raises(Exception, match="read-only"):
        spark.sql(f"ALTER TABLE ro__{spark_db}.t SET TBLPROPERTIES ('a' = 'b')")
    with pytest.raises(Exception, match="read-only"):
        spark.sql(f"DROP TABLE ro__{spark_db}.t")
    assert client.table_exists(f"main.{spark_db}.t")
    assert "a" not in client.get_table(f"main.{spark_db}.t").properties


def test_one_session_joins_tables_of_two_catalogs_and_reads_a_prefixed_view(spark, client, spark_db):
    spark.sql(f"CREATE TABLE {spark_db}.orders (id INT, customer INT) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {spark_db}.customers (id INT, name STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {spark_db}.orders VALUES (1, 10), (2, 20)")
    spark.sql(f"INSERT INTO {spark_db}.customers VALUES (10, 'ann'), (20, 'bob')")
    joined = sql(spark, f"SELECT o.id, c.name FROM {spark_db}.orders o JOIN ro__{spark_db}.customers c "
                        "ON o.customer = c.id ORDER BY o.id")
    assert joined == [(1, "ann"), (2, "bob")]
    # A view stored in main naming its tables without a catalog: through ro it resolves in ro.
    spark.sql(f"USE {spark_db}")
    try:
        spark.sql("CREATE VIEW named AS SELECT o.id FROM orders o JOIN customers c ON o.customer = c.id "
                  "WHERE c.name = 'bob'")
    finally:
        spark.sql("USE default")
    assert sql(spark, f"SELECT * FROM ro__{spark_db}.named") == [(2,)]
    with hms_connection(("127.0.0.1", _port(spark))) as c:
        view = c.get_table(f"ro__{spark_db}", "named")
    assert view.dbName == f"ro__{spark_db}"
    assert f"ro__{spark_db}" in view.viewExpandedText
    # In main the stored text is untouched.
    assert f"ro__{spark_db}" not in client.get_table(f"main.{spark_db}.named").view_expanded_text


def test_catalogd_parameters_cannot_be_set_or_removed(spark, client, spark_db, hms_address):
    spark.sql(f"CREATE TABLE {spark_db}.t (id INT) STORED AS PARQUET")
    with pytest.raises(Exception, match=r"catalogd\.\*"):
        spark.sql(f"ALTER TABLE {spark_db}.t SET TBLPROPERTIES ('catalogd.dt.query' = 'x')")
    with hms_connection(hms_address) as c:
        table = c.get_table(spark_db, "t")
        table.tableName = "forged"
        table.parameters = {**(table.parameters or {}), "catalogd.stage.id": "x"}
        with pytest.raises(ttypes.MetaException, match="catalogd's own"):
            c.create_table(table)
    assert not client.table_exists(f"main.{spark_db}.forged")
    assert not any(k.startswith("catalogd.") for k in client.get_table(f"main.{spark_db}.t").properties)


def test_drop_database_cascade_aborts_the_stages_inside(spark, client, spark_db):
    stage = client.begin_stage(f"main.{spark_db}.target", [Column("id", "int")], [])
    assert stage.state is StageState.OPEN
    spark.sql(f"DROP DATABASE {spark_db} CASCADE")
    assert not client.database_exists(f"main.{spark_db}")
    assert stage.id not in {s.id for s in client.list_stages("main") if s.state is StageState.OPEN}
    assert client.get_stage(stage.id).state is StageState.ABORTED


def test_a_write_through_catalogd_is_read_back_at_once(spark, client, spark_db, hms_address):
    spark.sql(f"CREATE TABLE {spark_db}.t (id INT) STORED AS PARQUET")
    with hms_connection(hms_address) as endpoint:
        endpoint.get_table(spark_db, "t")  # cached now
        client.alter_table(f"main.{spark_db}.t", set_properties={"k": "v1"})
        assert endpoint.get_table(spark_db, "t").parameters["k"] == "v1"
        table = endpoint.get_table(spark_db, "t")
        table.parameters["k"] = "v2"
        endpoint.alter_table(spark_db, "t", table)
        assert endpoint.get_table(spark_db, "t").parameters["k"] == "v2"
    assert client.get_table(f"main.{spark_db}.t").properties["k"] == "v2"


def test_plain_hms_clients_methods_spark_does_not_use(spark, client, spark_db, hms_address):
    spark.sql(f"CREATE TABLE {spark_db}.t (id INT, name STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"ALTER TABLE {spark_db}.t ADD PARTITION (ds='a')")
    spark.sql(f"ALTER TABLE {spark_db}.t ADD PARTITION (ds='b')")
    with hms_connection(hms_address, user="alice") as c:
        assert spark_db in c.get_databases(f"{spark_db[:6]}*")
        assert f"ro__{spark_db}" in c.get_all_databases()
        assert c.get_tables_by_type(spark_db, "*", "MANAGED_TABLE") == ["t"]
        assert [m.tableName for m in c.get_table_meta(spark_db, "*", [])] == ["t"]
        assert [t.tableName for t in c.get_table_objects_by_name(spark_db, ["t"])] == ["t"]
        assert [f.name for f in c.get_fields(spark_db, "t")] == ["id", "name"]
        assert c.get_partition_names_ps(spark_db, "t", ["b"], -1) == ["ds=b"]
        assert c.get_partition_by_name(spark_db, "t", "ds=a").values == ["a"]
        assert c.get_config_value("hive.metastore.warehouse.dir", "none") != "none"
        assert isinstance(c.get_current_notificationEventId().eventId, int)
        prefixed = c.get_table(f"ro__{spark_db}", "t")
        assert prefixed.dbName == f"ro__{spark_db}"
        assert [p.dbName for p in c.get_partitions(f"ro__{spark_db}", "t", -1)] == [f"ro__{spark_db}"] * 2
        with pytest.raises(ttypes.NoSuchObjectException):
            c.get_table(spark_db, "missing")
        with pytest.raises(ttypes.NoSuchObjectException):
            c.get_database("nocatalog__x")


def test_metrics_count_the_endpoints_calls_and_connections(daemon, hms_address, spark_db):
    from .helpers import http_get

    with hms_connection(hms_address) as c:
        c.get_database(spark_db)
        with pytest.raises(ttypes.NoSuchObjectException):
            c.get_table(spark_db, "missing")
        status, text = http_get(f"{daemon.http}/metrics")
    assert status == 200
    assert 'catalogd_hms_calls_total{method="get_database",outcome="ok"}' in text
    assert 'catalogd_hms_calls_total{method="get_table",outcome="ok"}' in text
    open_line = next(line for line in text.splitlines() if line.startswith("catalogd_hms_connections_open "))
    assert float(open_line.split()[1]) >= 1


def test_read_only_is_metadata_only_files_need_storage_permissions(spark, client, spark_db):
    """The README's measured example: a read-only catalog refuses metadata writes; an INSERT
    into an existing unpartitioned table makes none (Spark writes files and stops), so only
    storage permissions can stop it."""
    spark.sql(f"CREATE TABLE {spark_db}.hive_t (id INT) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {spark_db}.ds_t (id INT) USING parquet")
    spark.sql(f"CREATE TABLE {spark_db}.parts (id INT, ds STRING) USING parquet PARTITIONED BY (ds)")
    for table in ("hive_t", "ds_t"):
        spark.sql(f"INSERT INTO ro__{spark_db}.{table} VALUES (7)")
        spark.sql(f"INSERT OVERWRITE TABLE ro__{spark_db}.{table} VALUES (8)")
        assert sql(spark, f"SELECT id FROM {spark_db}.{table}") == [(8,)]
    # A new partition is a metadata write: refused, and no partition appears.
    with pytest.raises(Exception, match="read-only"):
        spark.sql(f"INSERT INTO ro__{spark_db}.parts VALUES (1, 'a')")
    assert client.list_partitions(f"main.{spark_db}.parts") == []
    assert client.list_tables(f"main.{spark_db}") == ["ds_t", "hive_t", "parts"]


def test_a_framed_client_is_served_too(hms_address, spark_db):
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    from catalogd.hive_idl import ThriftHiveMetastore

    transport = TTransport.TFramedTransport(TSocket.TSocket(*hms_address))
    transport.open()
    try:
        client = ThriftHiveMetastore.Client(TBinaryProtocol(transport))
        client.set_ugi("framed", [])
        assert client.get_database(spark_db).name == spark_db
        assert spark_db in client.get_all_databases()
    finally:
        transport.close()
