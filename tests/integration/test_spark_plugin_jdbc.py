"""A jdbc catalog through the Spark catalog plugin: plain Spark SQL reads and writes PostgreSQL.

The session's SparkSession gets two plugin catalogs at runtime: ``jmain``, the session daemon's
hive catalog ``main``, and ``jpg``, the jdbc catalog ``pg`` of a daemon of this module (a memory
default catalog, so no metastore to start) on a fresh database of the session's PostgreSQL server.
The plugin reads the PostgreSQL password from a file (its ``jdbc-password-file`` option), so the
password is in no Spark setting; Spark's JDBC source reads and writes the tables, and every write
goes through a catalogd stage whose staging table is a PostgreSQL table.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from catalogd.client import CatalogClient

from .helpers import Daemon, free_port, start_daemon, write_config
from .postgres import PostgresServer

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PREFIX = "__catalogd_stage_"
#: The Spark names of the two plugin catalogs (names of their own: Spark keeps a catalog once loaded).
HIVE, JDBC = "jmain", "jpg"


class Pg:
    """The module's PostgreSQL database and the daemon serving it as the jdbc catalog ``pg``."""

    def __init__(self, server: PostgresServer, database: str, daemon: Daemon) -> None:
        self.server, self.database, self.daemon = server, database, daemon

    def query(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(host=self.server.host, port=self.server.port, dbname=self.database,
                             user=self.server.role, password=self.server.password, autocommit=True) as conn:
            cur = conn.execute(statement, params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    def relations(self, schema: str) -> list[str]:
        """Every table of ``schema`` in PostgreSQL, staging tables included."""
        return [r[0] for r in self.query("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1",
                                         (schema,))]


@pytest.fixture(scope="module")
def pg(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pg]:
    root = tmp_path_factory.mktemp("plugin-jdbc")
    database = postgres.create_database("pjdbc")
    jdbc = {"base-url": f"jdbc:postgresql://{postgres.host}:{postgres.port}", "default-database": database,
            "username": postgres.role, "password": "${PG_TEST_PASSWORD}"}
    config = write_config(root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          catalogs=[{"name": "scratch", "type": "memory", "default": True},
                                    {"name": "pg", "type": "jdbc", **jdbc}])
    daemon = start_daemon(config, root / "data", root / "catalogd.log", env={"PG_TEST_PASSWORD": postgres.password})
    yield Pg(postgres, database, daemon)
    assert daemon.stop() == 0, daemon.log()


@pytest.fixture(scope="module")
def pspark(spark: Any, daemon: Daemon, pg: Pg, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The session's SparkSession with ``jmain`` and ``jpg`` registered (the password in a file)."""
    secret = tmp_path_factory.mktemp("plugin-jdbc-secret") / "pg-password"
    secret.write_text(pg.server.password + "\n")
    secret.chmod(0o600)
    for name, address, catalog in ((HIVE, daemon.address, "main"), (JDBC, pg.daemon.address, "pg")):
        spark.conf.set(f"spark.sql.catalog.{name}", "catalogd.spark.CatalogdCatalog")
        spark.conf.set(f"spark.sql.catalog.{name}.address", address)
        spark.conf.set(f"spark.sql.catalog.{name}.catalog", catalog)
    spark.conf.set(f"spark.sql.catalog.{JDBC}.jdbc-password-file", str(secret))
    return spark


@pytest.fixture
def names(pspark: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A hive database of ``main`` and a schema of ``pg`` for one test, dropped afterwards."""
    name = "".join(ch if ch.isalnum() else "_" for ch in request.node.name[5:22].lower()) + f"_{os.getpid() % 1000}"
    hive, schema = f"pj_{name}", f"pj_{name}"
    pspark.sql(f"CREATE NAMESPACE {HIVE}.{hive}")
    pspark.sql(f"CREATE NAMESPACE {JDBC}.{schema}")
    yield hive, schema
    pspark.sql(f"DROP NAMESPACE IF EXISTS {HIVE}.{hive} CASCADE")
    pspark.sql(f"DROP NAMESPACE IF EXISTS {JDBC}.{schema} CASCADE")


def rows(spark: Any, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(query).collect())


def test_ctas_between_hive_and_jdbc_in_each_direction_and_every_write_statement(
        pspark: Any, pg: Pg, names: tuple[str, str]) -> None:
    hive, schema = names
    pspark.sql(f"CREATE TABLE {HIVE}.{hive}.orders AS "
               "SELECT id, CAST(id * 2 AS INT) AS amount, CAST(id % 3 AS STRING) AS ds FROM range(9)")

    # hive -> jdbc: Spark reads parquet files, writes PostgreSQL (column names as catalogd keeps them).
    pspark.sql(f"CREATE TABLE {JDBC}.{schema}.daily AS SELECT ds, sum(amount) AS Total, count(*) AS N "
               f"FROM {HIVE}.{hive}.orders GROUP BY ds")
    expected = [("0", 18, 3), ("1", 24, 3), ("2", 30, 3)]
    assert rows(pspark, f"SELECT * FROM {JDBC}.{schema}.daily") == expected
    assert sorted(pg.query(f'SELECT ds, total, n FROM "{schema}".daily')) == expected
    # A filter is PostgreSQL's to apply (Spark's JDBC source pushes it down).
    plan = pspark.sql(f"EXPLAIN SELECT * FROM {JDBC}.{schema}.daily WHERE ds = '1'").collect()[0][0]
    assert "JDBC" in plan and "ds = '1'" in plan, plan
    assert rows(pspark, f"SELECT n FROM {JDBC}.{schema}.daily WHERE ds = '1'") == [(3,)]
    # A read's options tune the scan (a parallel read), but never name another table.
    parallel = pspark.sql(f"SELECT * FROM {JDBC}.{schema}.daily WITH ('partitionColumn' = 'n', "
                          "'lowerBound' = '0', 'upperBound' = '4', 'numPartitions' = '2')")
    assert parallel.rdd.getNumPartitions() == 2
    assert sorted(tuple(r) for r in parallel.collect()) == expected
    with pytest.raises(Exception, match="the read option dbtable is the catalog's to set"):
        pspark.sql(f"SELECT * FROM {JDBC}.{schema}.daily WITH ('dbtable' = 'pg_catalog.pg_roles')").collect()

    # jdbc -> hive: Spark reads PostgreSQL, writes parquet through a hive stage.
    pspark.sql(f"CREATE TABLE {HIVE}.{hive}.back AS SELECT * FROM {JDBC}.{schema}.daily WHERE ds <> '0'")
    assert rows(pspark, f"SELECT * FROM {HIVE}.{hive}.back") == expected[1:]

    # The other write statements on the jdbc table, each through a stage.
    pspark.sql(f"INSERT INTO {JDBC}.{schema}.daily SELECT 'x', 1, 1")
    assert rows(pspark, f"SELECT ds FROM {JDBC}.{schema}.daily") == [("0",), ("1",), ("2",), ("x",)]
    pspark.sql(f"INSERT OVERWRITE {JDBC}.{schema}.daily SELECT ds, amount, 1 FROM {HIVE}.{hive}.orders WHERE id < 2")
    assert rows(pspark, f"SELECT * FROM {JDBC}.{schema}.daily") == [("0", 0, 1), ("1", 2, 1)]
    pspark.sql(f"CREATE OR REPLACE TABLE {JDBC}.{schema}.daily AS SELECT 'z' AS ds, 7L AS n")
    assert rows(pspark, f"SELECT * FROM {JDBC}.{schema}.daily") == [("z", 7)]
    assert pg.relations(schema) == ["daily"]  # no staging table left behind


def test_a_failing_ctas_into_jdbc_leaves_no_table_and_no_stage(pspark: Any, pg: Pg, names: tuple[str, str]) -> None:
    _, schema = names
    with pytest.raises(Exception, match="boom"):
        pspark.sql(f"CREATE TABLE {JDBC}.{schema}.bad AS "
                   "SELECT id, IF(id = 7, raise_error('boom'), id) AS x FROM range(10)").collect()
    assert pg.relations(schema) == []
    assert not pspark.catalog.tableExists(f"{JDBC}.{schema}.bad")
    with CatalogClient(pg.daemon.address) as c:
        assert [s for s in c.list_stages("pg") if s.database == schema] == []


def test_the_password_is_in_no_spark_setting_and_no_plan(pspark: Any, pg: Pg, names: tuple[str, str]) -> None:
    _, schema = names
    password = pg.server.password
    pspark.sql(f"CREATE TABLE {JDBC}.{schema}.t AS SELECT id FROM range(3)")
    assert rows(pspark, f"SELECT * FROM {JDBC}.{schema}.t WHERE id > 0") == [(1,), (2,)]

    settings = dict(pspark.sparkContext.getConf().getAll()) | pspark.conf.getAll
    assert not [k for k, v in settings.items() if password in v]
    assert not [k for k in settings if k.startswith(f"spark.sql.catalog.{JDBC}") and "password" in k
                and not k.endswith(".jdbc-password-file")]

    for mode, statement in (("EXTENDED", f"SELECT * FROM {JDBC}.{schema}.t WHERE id > 0"),
                            ("FORMATTED", f"SELECT * FROM {JDBC}.{schema}.t WHERE id > 0"),
                            ("EXTENDED", f"CREATE TABLE {JDBC}.{schema}.u AS SELECT 1 AS a"),
                            ("EXTENDED", f"INSERT INTO {JDBC}.{schema}.t SELECT 5")):
        plan = pspark.sql(f"EXPLAIN {mode} {statement}").collect()[0][0]
        assert password not in plan, statement
    # What Spark's UI shows of every statement run so far, the stages' own JDBC writes included
    # (SaveIntoDataSourceCommand, whose options Spark redacts).
    executions = pspark._jsparkSession.sharedState().statusStore().executionsList()
    seen = 0
    found = executions.iterator()
    while found.hasNext():
        e = found.next()
        text = f"{e.description()}\n{e.details()}\n{e.physicalPlanDescription()}"
        seen += "SaveIntoDataSourceCommand" in text
        assert password not in text, e.executionId()
    assert seen >= 1


def test_a_missing_or_unsafe_password_is_a_clear_error_and_writes_nothing(
        pspark: Any, pg: Pg, names: tuple[str, str], tmp_path: Path) -> None:
    _, schema = names
    unsafe = tmp_path / "pg-password"
    unsafe.write_text(pg.server.password)
    unsafe.chmod(0o644)
    # Two more Spark names of the same catalogd catalog, with a login that cannot work.
    for name, option, value in (("jpg_nopw", "jdbc-password-env", "PJDBC_TEST_UNSET_VARIABLE"),
                                ("jpg_unsafe", "jdbc-password-file", str(unsafe))):
        pspark.conf.set(f"spark.sql.catalog.{name}", "catalogd.spark.CatalogdCatalog")
        pspark.conf.set(f"spark.sql.catalog.{name}.address", pg.daemon.address)
        pspark.conf.set(f"spark.sql.catalog.{name}.catalog", "pg")
        pspark.conf.set(f"spark.sql.catalog.{name}.{option}", value)

    with pytest.raises(Exception, match="without a password: give it in the environment variable "
                                        "PJDBC_TEST_UNSET_VARIABLE"):
        pspark.sql(f"CREATE TABLE jpg_nopw.{schema}.t AS SELECT 1 AS a")
    with pytest.raises(Exception, match=f"the jdbc password file {unsafe} is readable by others"):
        pspark.sql(f"CREATE TABLE jpg_unsafe.{schema}.t AS SELECT 1 AS a")
    assert pg.relations(schema) == []  # both stages aborted
