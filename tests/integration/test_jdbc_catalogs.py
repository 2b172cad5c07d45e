"""JDBC catalogs on a real PostgreSQL server: the catalog API, atomic writes through stages, faults.

One daemon for the module (a memory default catalog, so no metastore to start) serves ``pg``,
a jdbc catalog on a fresh database of the session's PostgreSQL server, and ``pgro``, the same
database read-only. Spark is the session's SparkSession (the PostgreSQL JDBC driver is on its
classpath); its writes into ``pg`` go through Spark's JDBC source with the credentials given as
``spark.catalogd.jdbc.pg.*`` settings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import psycopg
import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import (
    CatalogError,
    ConflictError,
    DatabaseNotEmptyError,
    PermissionDeniedError,
    ServerUnavailableError,
    StageNotFoundError,
    TableAlreadyExistsError,
    UnsupportedError,
)
from catalogd.model import Column, StagePurpose, StageState, TableKind

from .helpers import (
    CATALOGD,
    Daemon,
    clean_env,
    free_port,
    hms_connection,
    process_alive,
    spawn_daemon,
    start_daemon,
    write_config,
)
from .postgres import PostgresServer

pytestmark = [pytest.mark.integration]

SECRET = "jdbc-tests-stage-secret-0123456789"
PREFIX = "__catalogd_stage_"


def _config(root: Path, postgres: PostgresServer, database: str, data_dir: Path) -> Path:
    jdbc = {"base-url": f"jdbc:postgresql://{postgres.host}:{postgres.port}", "default-database": database,
            "username": postgres.role, "password": "${PG_TEST_PASSWORD}"}
    return write_config(
        root / f"catalogd-{data_dir.name}.yaml", port=free_port(), http_port=free_port(), data_dir=data_dir,
        catalogs=[{"name": "scratch", "type": "memory", "default": True},
                  {"name": "pg", "type": "jdbc", **jdbc},
                  {"name": "pgro", "type": "jdbc", "read-only": True, **jdbc}],
        extra={"staging": {"secret": SECRET, "lease": "6s", "janitor-interval": "1s"}})


class Pg:
    """The module's database: the daemon on it, and SQL as the tests' role."""

    def __init__(self, server: PostgresServer, database: str, daemon: Daemon, root: Path) -> None:
        self.server, self.database, self.daemon, self.root = server, database, daemon, root

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(host=self.server.host, port=self.server.port, dbname=self.database,
                               user=self.server.role, password=self.server.password, autocommit=True)

    def query(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            cur = conn.execute(statement, params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    def stages(self, schema: str) -> list[str]:
        return [r[0] for r in self.query(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname LIKE %s", (schema, PREFIX.replace("_", "\\_") + "%"))]

    def tables(self, schema: str) -> list[str]:
        return [r[0] for r in self.query("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1",
                                         (schema,))]


@pytest.fixture(scope="module")
def pg(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pg]:
    root = tmp_path_factory.mktemp("jdbc")
    database = postgres.create_database("jdbc")
    config = _config(root, postgres, database, root / "data")
    daemon = start_daemon(config, root / "data", root / "catalogd.log", env={"PG_TEST_PASSWORD": postgres.password})
    yield Pg(postgres, database, daemon, root)
    assert daemon.stop() == 0, daemon.log()


@pytest.fixture
def pgc(pg: Pg) -> Iterator[CatalogClient]:
    with CatalogClient(pg.daemon.address, timeout=60.0) as c:
        yield c


@pytest.fixture
def schema(pgc: CatalogClient, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"s_{request.node.name[5:25].lower().strip('_')}_{os.getpid() % 1000}"
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    pgc.create_database(f"pg.{name}")
    yield name
    pgc.drop_database(f"pg.{name}", if_exists=True, cascade=True)


@pytest.fixture
def jspark(spark: Any, pg: Pg) -> Iterator[Any]:
    """The session's SparkSession with the credentials of ``pg`` given as Spark settings."""
    spark.conf.set("spark.catalogd.jdbc.pg.password", pg.server.password)
    yield spark
    spark.conf.unset("spark.catalogd.jdbc.pg.password")


def cli(pg: Pg, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CATALOGD), "--server", pg.daemon.address, *args], capture_output=True, text=True,
                          timeout=60, env=clean_env())


# ---------------------------------------------------------------- the catalog API

TYPES = ["boolean", "smallint", "int", "bigint", "float", "double", "decimal(12,3)", "string", "varchar(20)",
         "char(4)", "binary", "date", "timestamp", "array<int>", "array<string>"]


def test_databases_are_schemas_tables_views_and_what_is_unsupported(pg: Pg, pgc: CatalogClient) -> None:
    done = cli(pg, "db", "create", "pg.sales", "--comment", "the sales")
    assert done.returncode == 0, done.stderr
    assert pg.query("SELECT nspname FROM pg_namespace WHERE nspname = 'sales'") == [("sales",)]
    assert "sales" in pgc.list_databases("pg") and "public" in pgc.list_databases("pg")
    assert pgc.get_database("pg.sales").comment == "the sales"
    try:
        columns = [Column(f"c{i}", t, f"column {i}") for i, t in enumerate(TYPES)]
        created = pgc.create_table("pg.sales.orders", columns, comment="orders", properties={"team": "sales"})
        # Types both ways: what PostgreSQL holds, and what catalogd reads back from it.
        assert [(c.name, c.type, c.comment) for c in created.columns] == [(c.name, c.type, c.comment)
                                                                          for c in columns]
        held = dict(pg.query("SELECT column_name, data_type FROM information_schema.columns "
                             "WHERE table_schema = 'sales' AND table_name = 'orders'"))
        assert (held["c2"], held["c6"], held["c7"], held["c13"]) == ("integer", "numeric", "text", "ARRAY")
        table = pgc.get_table("pg.sales.orders")
        assert (table.comment, table.properties, table.kind) == ("orders", {"team": "sales"}, TableKind.MANAGED)
        # The comment PostgreSQL shows keeps the user's text first.
        assert pg.query("SELECT obj_description('sales.orders'::regclass)")[0][0].startswith("orders\n")
        pgc.alter_table("pg.sales.orders", comment="all orders", set_properties={"tier": "gold"},
                        add_columns=[Column("extra", "string")])
        table = pgc.get_table("pg.sales.orders")
        assert (table.comment, table.properties["tier"], table.columns[-1].name) == ("all orders", "gold", "extra")
        with pytest.raises(TableAlreadyExistsError):
            pgc.create_table("pg.sales.orders", columns)

        view = pgc.create_view("pg.sales.big", "SELECT c0, c3 FROM orders WHERE c3 > 10")
        assert view.kind is TableKind.VIEW
        described = pgc.get_view("pg.sales.big")
        assert "FROM sales.orders" in (described.view_text or "") and "c3 > 10" in (described.view_text or "")
        assert pgc.list_views("pg.sales") == ["big"] and pgc.list_tables("pg.sales") == ["orders"]

        done = cli(pg, "view", "describe", "pg.sales.big")
        assert done.returncode == 0 and "c3 > 10" in done.stdout, done.stderr
        pgc.rename_table("pg.sales.orders", "orders2")
        assert pg.tables("sales") == ["orders2"]
        for args in (("function", "list", "pg.sales"), ("table", "partitions", "pg.sales.orders2")):
            done = cli(pg, *args)
            assert done.returncode == 1 and done.stderr.startswith("error: unsupported: "), done.stderr
        with pytest.raises(UnsupportedError, match="jdbc catalog"):
            pgc.create_table("pg.sales.p", "a int", partitioned_by="ds string")
        with pytest.raises(CatalogError, match="PostgreSQL has no map type"):
            pgc.create_table("pg.sales.m", "a map<string,int>")
        with pytest.raises(DatabaseNotEmptyError):
            pgc.drop_database("pg.sales")
        # The read-only catalog sees the same database and changes nothing.
        assert pgc.list_tables("pgro.sales") == ["orders2"]
        with pytest.raises(PermissionDeniedError):
            pgc.create_database("pgro.other")
        with pytest.raises(PermissionDeniedError):
            pgc.drop_table("pgro.sales.orders2")
        pgc.drop_view("pg.sales.big")
        pgc.drop_table("pg.sales.orders2")
        assert pg.tables("sales") == []
        pgc.rename_database("pg.sales", "sales2")
        assert "sales2" in pgc.list_databases("pg") and "sales" not in pgc.list_databases("pg")
        pgc.rename_database("pg.sales2", "sales")
    finally:
        pgc.drop_database("pg.sales", if_exists=True, cascade=True)
    assert pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'sales'") == [(0,)]


def test_not_on_the_hms_endpoint_and_the_password_never_logged(pg: Pg, pgc: CatalogClient, schema: str) -> None:
    with hms_connection(pg.daemon.hms_address) as hms:
        names = hms.get_all_databases()
        assert "default" in names and not any(n.startswith(("pg__", "pgro__")) for n in names)
        with pytest.raises(Exception, match="HMS clients cannot read"):
            hms.get_all_tables(f"pg__{schema}")
    info = pgc.get_catalog("pg")
    assert info.type == "jdbc" and info.metastore == f"jdbc:postgresql://{pg.server.host}:{pg.server.port}/" \
        f"{pg.database}" and info.jdbc_driver_jar == "/usr/share/java/postgresql.jar"
    assert pg.server.password not in pg.daemon.log(10_000)
    assert pg.server.password not in cli(pg, "--json", "catalog", "list").stdout


# ---------------------------------------------------------------- atomic writes from Spark

def test_atomic_ctas_replace_overwrite_append_and_the_reader(jspark: Any, pg: Pg, pgc: CatalogClient,
                                                             schema: str) -> None:
    from catalogd.spark import atomic_ctas, insert_into, insert_overwrite, read_table, sql

    target = f"pg.{schema}.daily"
    stage = atomic_ctas(jspark, target, jspark.range(1000).selectExpr("id", "CAST(id % 7 AS INT) AS Bucket"),
                        client=pgc, comment="daily totals", properties={"team": "sales"})
    assert stage is not None and stage.state is StageState.COMMITTED
    assert pg.query(f'SELECT count(*), sum(bucket) FROM "{schema}".daily') == [(1000, sum(i % 7 for i in range(1000)))]
    table = pgc.get_table(target)
    assert table.comment == "daily totals" and table.properties["team"] == "sales"
    assert [(c.name, c.type) for c in table.columns] == [("id", "bigint"), ("bucket", "int")]
    assert read_table(jspark, target, client=pgc).count() == 1000

    with pytest.raises(TableAlreadyExistsError):
        atomic_ctas(jspark, target, jspark.range(5), client=pgc)
    skipped = sql(jspark, f"CREATE TABLE IF NOT EXISTS {target} AS SELECT 1 AS id", client=pgc)
    assert skipped.state is StageState.ABORTED
    replaced = sql(jspark, f"CREATE OR REPLACE TABLE {target} AS SELECT id, 'x' AS tag FROM range(10)", client=pgc)
    assert replaced.state is StageState.COMMITTED
    assert pg.query(f'SELECT count(*), min(tag) FROM "{schema}".daily') == [(10, "x")]
    insert_overwrite(jspark, target, "SELECT id * 2, 'y' FROM range(3)", client=pgc)
    assert pg.query(f'SELECT id, tag FROM "{schema}".daily ORDER BY id') == [(0, "y"), (2, "y"), (4, "y")]
    insert_into(jspark, target, "SELECT 9, 'z'", client=pgc)
    assert pg.query(f'SELECT count(*) FROM "{schema}".daily') == [(4,)]
    assert pg.stages(schema) == [] and pgc.list_stages("pg") == []


def test_a_job_that_fails_mid_write_leaves_no_table_and_no_stage(jspark: Any, pg: Pg, pgc: CatalogClient,
                                                                 schema: str) -> None:
    from pyspark.sql import functions as F

    from catalogd.spark import atomic_ctas

    # Rows go in by partition: the first partitions are written before the last one raises.
    df = jspark.range(0, 2000, 1, 4).withColumn(
        "v", F.when(F.col("id") == 1999, F.raise_error(F.lit("boom"))).otherwise(F.col("id")))
    with pytest.raises(Exception, match="boom"):
        atomic_ctas(jspark, f"pg.{schema}.broken", df, client=pgc)
    assert pg.tables(schema) == [] and pg.stages(schema) == []


def test_four_concurrent_ctas_on_one_target_make_one_table_of_one_writer(jspark: Any, pg: Pg, pgc: CatalogClient,
                                                                         schema: str) -> None:
    from catalogd.spark import atomic_ctas

    target = f"pg.{schema}.race"
    # All four begin together (their stages overlap), however slowly a busy machine starts threads.
    start = threading.Barrier(4, timeout=120)

    def write(writer: int) -> object:
        with CatalogClient(pg.daemon.address, timeout=120.0) as c:
            start.wait()
            try:
                return atomic_ctas(jspark, target, jspark.range(200).selectExpr(
                    "id", f"{writer} AS writer"), client=c).state  # type: ignore[union-attr]
            except CatalogError as e:
                return e  # any other exception fails the test, raised by result() below

    pool = ThreadPoolExecutor(4, thread_name_prefix="ctas")
    try:
        futures = {writer: pool.submit(write, writer) for writer in range(4)}
        _, running = wait(futures.values(), timeout=300)
        assert not running, f"{len(running)} of 4 writers still running after 300 s"
        outcomes = {writer: future.result() for writer, future in futures.items()}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    winners = [w for w, o in outcomes.items() if o is StageState.COMMITTED]
    assert len(winners) == 1, outcomes
    assert all(isinstance(o, TableAlreadyExistsError) for w, o in outcomes.items() if w != winners[0]), outcomes
    assert pg.query(f'SELECT count(*), min(writer), max(writer) FROM "{schema}".race') == [
        (200, winners[0], winners[0])]
    assert pg.tables(schema) == ["race"] and pg.stages(schema) == []


# ---------------------------------------------------------------- stages: leases, signatures, readers

_WRITER = """
import sys, time, psycopg
from catalogd.client import CatalogClient
from catalogd.spark_common import staged_table
address, target, dsn = sys.argv[1:4]
with CatalogClient(address) as c, staged_table(target, "id bigint", client=c) as staged:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {staged.stage.spark_table} SELECT generate_series(1, 100)")
    print(staged.stage.id, flush=True)
    time.sleep(600)
"""


def test_a_killed_writer_leaves_nothing_once_its_lease_lapses(pg: Pg, pgc: CatalogClient, schema: str) -> None:
    dsn = (f"host={pg.server.host} port={pg.server.port} dbname={pg.database} user={pg.server.role} "
           f"password={pg.server.password}")
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, pg.daemon.address, f"pg.{schema}.t", dsn],
                              stdout=subprocess.PIPE, text=True, env=clean_env())
    try:
        assert writer.stdout is not None
        stage_id = writer.stdout.readline().strip()
        assert stage_id.startswith(f"pg.{schema}.") and len(pg.stages(schema)) == 1
        assert pgc.list_tables(f"pg.{schema}") == []  # hidden from listings
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(30)
    finally:
        if process_alive(writer.pid):
            writer.kill()
    wait_until(lambda: pg.stages(schema) == [] or None, 60, what="the janitor to drop the lapsed stage")
    assert pg.tables(schema) == []
    with pytest.raises(StageNotFoundError):
        pgc.commit_stage(stage_id)


def _janitor_passes(daemon: Daemon) -> float:
    """``catalogd_janitor_passes_total`` of ``daemon``'s /metrics."""
    with urllib.request.urlopen(f"{daemon.http}/metrics", timeout=30) as response:
        text = response.read().decode()
    return next(float(line.split()[-1]) for line in text.splitlines()
                if line.startswith("catalogd_janitor_passes_total "))


def test_a_forged_stage_is_left_alone(pg: Pg, pgc: CatalogClient, schema: str) -> None:
    key = "0123456789abcdef"
    pg.query(f'CREATE TABLE "{schema}"."{PREFIX}{key}" (id bigint)')
    pg.query(f'COMMENT ON TABLE "{schema}"."{PREFIX}{key}" IS '
             f"'{{\"catalogd.stage.target\": \"t\", \"catalogd.stage.state\": \"OPEN\", "
             f"\"catalogd.stage.lease-deadline\": 1}}'")
    with pytest.raises(PermissionDeniedError, match="not created by this catalogd"):
        pgc.commit_stage(f"pg.{schema}.{key}")
    # Two janitor passes (the first may have begun before the stage was made): neither may drop it.
    after = _janitor_passes(pg.daemon) + 2
    wait_until(lambda: _janitor_passes(pg.daemon) >= after, 60, what="two janitor passes", every=0.25)
    assert pg.stages(schema) == [f"{PREFIX}{key}"] and pg.tables(schema) == [f"{PREFIX}{key}"]


def _staged(pg: Pg, pgc: CatalogClient, target: str, value: int, rows: int) -> str:
    stage = pgc.begin_stage(target, "n bigint, v int", purpose=StagePurpose.REPLACE)
    pg.query(f"INSERT INTO {stage.spark_table} SELECT g, %s FROM generate_series(1, %s) g", (value, rows))
    return stage.id


def test_readers_during_replace_see_old_or_new_rows_never_a_mixture_or_nothing(pg: Pg, pgc: CatalogClient,
                                                                                schema: str) -> None:
    target = f"pg.{schema}.served"
    pgc.commit_stage(_staged(pg, pgc, target, 0, 1000))
    seen: list[tuple[Any, ...]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        with pg.connect() as conn:
            while not stop.is_set():
                try:
                    seen.append(conn.execute(f'SELECT count(*), min(v), max(v) FROM "{schema}".served').fetchone())
                except psycopg.Error as e:
                    errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(1, 6):
            pgc.commit_stage(_staged(pg, pgc, target, i, 1000 + i))
    finally:
        stop.set()
        reader.join(60)
    assert errors == []
    assert {row for row in seen} <= {(1000 + i, i, i) for i in range(6)}
    assert len({row for row in seen}) >= 2
    assert pg.query(f'SELECT count(*), min(v) FROM "{schema}".served') == [(1005, 5)]
    assert pg.stages(schema) == []


@pytest.mark.parametrize("point", ["jdbc.commit.renamed"])
def test_a_daemon_killed_mid_commit_undoes_it_and_the_retry_publishes(pg: Pg, point: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = _config(tmp_path, pg.server, pg.database, data_dir)
    env = {"PG_TEST_PASSWORD": pg.server.password}
    first = start_daemon(config, data_dir, tmp_path / "first.log", env={**env, "CATALOGD_FAULT_POINTS": point})
    schema = f"crash_{point.rsplit('.', 1)[1]}"
    try:
        with CatalogClient(first.address, timeout=60.0) as c:
            c.create_database(f"pg.{schema}")
            target = f"pg.{schema}.t"
            c.create_table(target, "n bigint, v int")
            pg.query(f'INSERT INTO "{schema}".t VALUES (1, 0)')
            stage = c.begin_stage(target, "n bigint, v int", purpose=StagePurpose.REPLACE, lease=300)
            pg.query(f"INSERT INTO {stage.spark_table} SELECT g, 7 FROM generate_series(1, 50) g")
            with pytest.raises(ServerUnavailableError):
                c.commit_stage(stage.id)  # the daemon kills itself between the renames and COMMIT
        first.proc.wait(30)
        assert first.proc.returncode == -signal.SIGKILL
        # The transaction died with the daemon: the old table, whole; the stage still open.
        assert pg.query(f'SELECT count(*), max(v) FROM "{schema}".t') == [(1, 0)]
        assert len(pg.stages(schema)) == 1
        second = start_daemon(config, data_dir, tmp_path / "second.log", env=env)
        try:
            with CatalogClient(second.address, timeout=60.0) as c:
                assert c.get_stage(stage.id).state is StageState.OPEN
                assert c.commit_stage(stage.id).state is StageState.COMMITTED
                assert c.commit_stage(stage.id).state is StageState.COMMITTED  # idempotent
            assert pg.query(f'SELECT count(*), min(v) FROM "{schema}".t') == [(50, 7)]
            assert pg.stages(schema) == []
        finally:
            assert second.stop() == 0
    finally:
        first.stop()
        pg.query(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_replace_of_a_table_views_depend_on_is_refused_and_changes_nothing(pg: Pg, pgc: CatalogClient,
                                                                          schema: str) -> None:
    target = f"pg.{schema}.base"
    pgc.commit_stage(_staged(pg, pgc, target, 1, 10))
    pgc.create_view(f"pg.{schema}.on_base", "SELECT n FROM base")
    stage_id = _staged(pg, pgc, target, 2, 20)
    with pytest.raises(ConflictError, match=r"views .* depend on it"):
        pgc.commit_stage(stage_id)
    assert pg.query(f'SELECT count(*), max(v) FROM "{schema}".base') == [(10, 1)]
    assert pgc.get_stage(stage_id).state is StageState.OPEN
    pgc.drop_view(f"pg.{schema}.on_base")
    assert pgc.commit_stage(stage_id).state is StageState.COMMITTED
    assert pg.query(f'SELECT count(*), max(v) FROM "{schema}".base') == [(20, 2)]


def test_a_wrong_password_stops_the_start_and_is_never_shown(pg: Pg, tmp_path: Path) -> None:
    wrong = "wrong-password-" + SECRET[::-1]
    config = _config(tmp_path, pg.server, pg.database, tmp_path / "data")
    daemon = spawn_daemon(config, tmp_path / "data", tmp_path / "refused.log", env={"PG_TEST_PASSWORD": wrong})
    try:
        code = daemon.proc.wait(120)
    finally:
        daemon.stop()
    log = daemon.log(200)
    assert code != 0 and "password authentication failed" in log, log
    assert wrong not in log


# ---------------------------------------------------------------- what catalogd did not make (issue 31, row 7)


def test_drops_delete_only_what_catalogd_made_unless_an_admin_says_so(pg: Pg, pgc: CatalogClient, schema: str) -> None:
    # The victim: a schema and tables made with psql, not through catalogd; one is named so that
    # no catalogd name reaches it ("Precious": not listed), one plainly (listed, nameable).
    pg.query('CREATE SCHEMA victim7; CREATE TABLE victim7."Precious" (v int); '
             'INSERT INTO victim7."Precious" VALUES (1), (2), (3); CREATE SEQUENCE victim7.counter')
    try:
        assert pgc.list_tables("pg.victim7") == []
        done = cli(pg, "db", "drop", "pg.victim7")
        assert done.returncode == 1 and "not empty" in done.stderr and "Precious" in done.stderr, done.stderr
        assert "counter" in done.stderr, done.stderr  # a sequence alone would have gone with DROP SCHEMA CASCADE
        done = cli(pg, "db", "drop", "pg.victim7", "--cascade")
        assert done.returncode == 1 and done.stderr.startswith("error: permission-denied: "), done.stderr
        assert "Precious" in done.stderr and "counter" in done.stderr and "did not create" in done.stderr
        assert pg.query('SELECT count(*) FROM victim7."Precious"') == [(3,)]
        # A table of its own schema that catalogd did not create: not dropped by name either.
        pg.query(f'CREATE TABLE "{schema}".kept (v int); INSERT INTO "{schema}".kept VALUES (1)')
        done = cli(pg, "table", "drop", f"pg.{schema}.kept")
        assert done.returncode == 1 and done.stderr.startswith("error: permission-denied: "), done.stderr
        assert pg.query(f'SELECT count(*) FROM "{schema}".kept') == [(1,)]
        with pytest.raises(PermissionDeniedError, match="did not create"):
            pgc.drop_database(f"pg.{schema}", cascade=True)
        # What catalogd made goes as before: created, committed by a stage, a view.
        pgc.create_table(f"pg.{schema}.made", "a int")
        pgc.commit_stage(_staged(pg, pgc, f"pg.{schema}.staged", 1, 3))
        pgc.create_view(f"pg.{schema}.seen", "SELECT a FROM made")
        pgc.drop_view(f"pg.{schema}.seen")
        pgc.drop_table(f"pg.{schema}.made")
        # The admin's explicit word (auth off here: every caller is an admin; test_auth checks the role).
        done = cli(pg, "table", "drop", f"pg.{schema}.kept", "--drop-foreign")
        assert done.returncode == 0, done.stderr
        pgc.drop_database(f"pg.{schema}", cascade=True)  # catalogd's own only: no word needed
        done = cli(pg, "db", "drop", "pg.victim7", "--cascade", "--drop-foreign")
        assert done.returncode == 0, done.stderr
        assert pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'victim7'") == [(0,)]
    finally:
        pg.query("DROP SCHEMA IF EXISTS victim7 CASCADE")
