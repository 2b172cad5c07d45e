"""Dynamic tables in a jdbc catalog (issue 24, item 4): a FULL table in PostgreSQL whose query
reads hive tables, each refresh a real spark-submit job committing through a jdbc stage.

The module's daemon serves ``src``, a read-only remote hive catalog on the session daemon's
metastore (the session SparkSession writes the sources there), and ``pg``, a jdbc catalog on a
fresh database of the session's PostgreSQL server. The daemon gives its refresh jobs the
catalog's password in their environment (the test gives none to Spark).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from polling import wait_until
from psycopg import sql

from catalogd.catalog.jdbc_comments import PROPERTIES_MARKER, encode_comment
from catalogd.client import CatalogClient
from catalogd.dynamic import store
from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.model import DynamicTable, RefreshMode, RefreshState, RunStatus

from .conftest import CliResult
from .helpers import CATALOGD, Daemon, clean_env, free_port, metastore_key_file, start_daemon, write_config
from .postgres import PostgresServer

pytestmark = [pytest.mark.integration]

JOB_TIMEOUT = 240.0
PREFIX = "__catalogd_stage_"
#: Small Spark jobs: the daemon's jobs and the session's Spark share 2 cores.
SPARK = {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m",
                                        "spark.sql.session.timeZone": "UTC"}}


class PgDt:
    """The module's daemon and its PostgreSQL database."""

    def __init__(self, server: PostgresServer, database: str, daemon: Daemon, root: Path) -> None:
        self.server, self.database, self.daemon, self.root = server, database, daemon, root

    def query(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(host=self.server.host, port=self.server.port, dbname=self.database,
                             user=self.server.role, password=self.server.password, autocommit=True) as conn:
            return conn.execute(statement, params).fetchall()  # type: ignore[arg-type]

    def stages(self) -> list[str]:
        return [r[0] for r in self.query("SELECT relname FROM pg_class WHERE relname LIKE %s",
                                         (PREFIX.replace("_", "\\_") + "%",))]

    def cli(self, *args: str) -> CliResult:
        import subprocess

        done = subprocess.run([str(CATALOGD), "--server", self.daemon.address, *args], capture_output=True,
                              text=True, timeout=180, env=clean_env())
        return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def pgdt(daemon: Daemon, postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgDt]:
    root = tmp_path_factory.mktemp("jdbc-dt")
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore or ""
    database = postgres.create_database("jdbcdt")
    config = write_config(
        root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
        catalogs=[{"name": "src", "type": "hive", "default": True, "read-only": True,
                   "connection": {"hive.metastore.uris": metastore},
                   "metastore-key-file": str(metastore_key_file(daemon.data_dir))},
                  {"name": "pg", "type": "jdbc", "base-url": f"jdbc:postgresql://{postgres.host}:{postgres.port}",
                   "default-database": database, "username": postgres.role, "password": "${PG_TEST_PASSWORD}"}],
        extra={"spark": SPARK,
               "staging": {"lease": "20s", "janitor-interval": "1s"}})
    started = start_daemon(config, root / "data", root / "catalogd.log", env={"PG_TEST_PASSWORD": postgres.password})
    yield PgDt(postgres, database, started, root)
    assert started.stop() == 0, started.log()[-3000:]


@pytest.fixture
def dc(pgdt: PgDt) -> Iterator[CatalogClient]:
    with CatalogClient(pgdt.daemon.address, timeout=180.0) as c:
        yield c


def _refresh(dc: CatalogClient, pgdt: PgDt, name: str) -> Any:
    job = dc.refresh_dynamic_tables(name)
    done = dc.wait_refresh_job(job.id, timeout=JOB_TIMEOUT, poll=0.25)
    assert done.status.finished, f"refresh still running after {JOB_TIMEOUT} s\n{pgdt.daemon.log()[-3000:]}"
    return done.runs[0]


def test_a_full_dynamic_table_in_postgresql_over_a_hive_table(pgdt: PgDt, dc: CatalogClient, spark: Any,
                                                               main_db: str) -> None:
    db = main_db.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {db}.orders (id BIGINT, amount DOUBLE) USING parquet")
    spark.sql(f"INSERT INTO {db}.orders SELECT id, id * 1.5 FROM range(10)")
    dc.create_database("pg.serving", if_not_exists=True)
    name = "pg.serving.orders_x2"
    # The guard fails a refresh mid-write once a row with id >= 1000 appears in the source.
    query = (f"SELECT id, CASE WHEN id < 1000 THEN amount * 2 ELSE CAST(raise_error('bad row') AS DOUBLE) END "
             f"AS doubled FROM src.{db}.orders")

    # What a jdbc catalog cannot do is refused before anything is made.
    with pytest.raises(UnsupportedError, match="FULL only"):
        dc.create_dynamic_table(name, query, "1 minute")  # below the threshold: CONTINUOUS
    with pytest.raises(UnsupportedError, match="no partitions"):
        dc.create_dynamic_table(name, f"SELECT id, amount FROM src.{db}.orders", "1 day", "FULL",
                                partitioned_by="id")
    with pytest.raises(InvalidArgumentError, match=r"catalog\.database\.table"):
        dc.create_dynamic_table(name, f"SELECT id FROM {db}.orders", "1 day")
    assert pgdt.query("SELECT count(*) FROM pg_tables WHERE schemaname = 'serving'") == [(0,)]

    created = pgdt.cli("sql", f"CREATE DYNAMIC TABLE {name} WITH ('initialize' = 'on_schedule') "
                              f"FRESHNESS = INTERVAL '1' DAY AS {query}")
    assert created.code == 0, created.stderr
    dt = dc.get_dynamic_table(name)
    assert dt.refresh_mode is RefreshMode.FULL and dt.job_detail["sourceCatalog"] == "src"
    assert [(c.name, c.type) for c in dt.columns] == [("id", "bigint"), ("doubled", "double")]
    assert [(c.name, c.type) for c in dc.list_dynamic_tables("pg", "serving")[0].columns] == \
        [("id", "bigint"), ("doubled", "double")]

    first = _refresh(dc, pgdt, name)
    assert first.status is RunStatus.SUCCEEDED, (first.error, pgdt.daemon.log()[-3000:])
    assert first.rows == 10
    assert pgdt.query("SELECT id, doubled FROM serving.orders_x2 ORDER BY id") == [(i, i * 3.0) for i in range(10)]

    spark.sql(f"INSERT INTO {db}.orders SELECT id, id * 1.5 FROM range(10, 15)")
    second = _refresh(dc, pgdt, name)
    assert second.status is RunStatus.SUCCEEDED, second.error
    assert pgdt.query("SELECT id, doubled FROM serving.orders_x2 ORDER BY id") == [(i, i * 3.0) for i in range(15)]
    assert pgdt.stages() == []

    # A refresh that fails while it writes: the old rows stay, the stage is gone.
    spark.sql(f"INSERT INTO {db}.orders VALUES (1000, 1.0)")
    failed = _refresh(dc, pgdt, name)
    assert failed.status is RunStatus.FAILED and "bad row" in (failed.error or ""), failed.error
    assert pgdt.query("SELECT count(*), max(id) FROM serving.orders_x2") == [(15, 14)]
    assert pgdt.stages() == []

    described = pgdt.cli("--json", "dt", "describe", name)
    assert described.code == 0, described.stderr
    data = json.loads(described.stdout)
    assert data["refresh_mode"] == "FULL" and data["last_refresh"]["status"] == "FAILED"
    assert [r.status for r in dc.dynamic_table_history(name)] == [RunStatus.FAILED, RunStatus.SUCCEEDED,
                                                                 RunStatus.SUCCEEDED]
    # A jdbc catalog's tables stream no changes: CONTINUOUS stays refused on an existing table too.
    with pytest.raises(UnsupportedError, match="FULL only"):
        dc.alter_dynamic_table(name, refresh_mode="CONTINUOUS")

    dc.drop_dynamic_table(name)
    assert pgdt.query("SELECT count(*) FROM pg_tables WHERE schemaname = 'serving'") == [(0,)]
    # Issue 31, item 3: the jobs had the password in their environment only; it is in none of the
    # daemon's files (its log, the runs' settings files and Spark logs).
    secret = pgdt.server.password.encode()
    assert [str(p) for p in pgdt.root.rglob("*") if _holds(p, secret)] == []


def _holds(path: Path, secret: bytes) -> bool:
    try:
        return path.is_file() and secret in path.read_bytes()
    except OSError:  # a temporary file of a running JVM, gone meanwhile
        return False


# ---------------------------------------------------------------- forged definitions (issue 31, row 1)


def test_a_forged_definition_is_never_run_and_no_door_writes_one(daemon: Daemon, postgres: PostgresServer,
                                                                 tmp_path: Path) -> None:
    # The victim: a file outside every warehouse that only its owner reads.
    secret = "hunter2-" + uuid.uuid4().hex
    victim = tmp_path / "secret.txt"
    victim.write_text(secret + "\n")
    victim.chmod(0o600)
    reads_it = f"SELECT CAST(value AS INT) AS v FROM text.`file://{victim}`"

    def forged(query: str, signature: str | None = None) -> str:
        dt = DynamicTable(catalog="pg", database="s", name="x", query=query, freshness="1 SECOND",
                          expanded_query=query, declared_mode=RefreshMode.FULL, refresh_mode=RefreshMode.FULL,
                          state=RefreshState.INITIALIZING)
        params = store.definition_params(dt, [], time.time(), "src")
        if signature is not None:
            params["catalogd.dt.signature"] = signature  # store.SIGNATURE (spelt out: also on older code)
        return encode_comment("orders", params) or ""

    # Behind catalogd's back (what PostgreSQL access, or a comment through an older catalogd,
    # writes): two tables carry forged definitions before the daemon's (next) start, one that
    # reads the file every second, one with a valid query and a made-up signature.
    database = postgres.create_database("dtforge")
    with psycopg.connect(host=postgres.host, port=postgres.port, dbname=database, user=postgres.role,
                         password=postgres.password, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA s; CREATE TABLE s.x (v int); CREATE TABLE s.y (v int)")
        conn.execute(sql.SQL("COMMENT ON TABLE s.x IS {}").format(sql.Literal(forged(reads_it))))
        conn.execute(sql.SQL("COMMENT ON TABLE s.y IS {}").format(
            sql.Literal(forged("SELECT 1 AS v", "v1:" + "0" * 64))))
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore or ""
    config = write_config(
        tmp_path / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=tmp_path / "data",
        catalogs=[{"name": "src", "type": "hive", "default": True, "read-only": True,
                   "connection": {"hive.metastore.uris": metastore}},
                  {"name": "pg", "type": "jdbc", "base-url": f"jdbc:postgresql://{postgres.host}:{postgres.port}",
                   "default-database": database, "username": postgres.role, "password": "${PG_TEST_PASSWORD}"}],
        extra={"spark": SPARK, "dynamic-tables": {"warm-analyzer": False}})
    started = start_daemon(config, tmp_path / "data", tmp_path / "catalogd.log",
                           env={"PG_TEST_PASSWORD": postgres.password})
    shown: list[str] = []
    try:
        pg = PgDt(postgres, database, started, tmp_path)
        with CatalogClient(started.address, timeout=180.0) as c:
            # Loaded at start, refused: the refusal is in each table's history, and no run came.
            refused = {name: wait_until(lambda name=name: c.dynamic_table_history(name) or None, timeout=60)
                       for name in ("pg.s.x", "pg.s.y")}
            time.sleep(3.0)  # a forged 1 s schedule would have fired thrice by now (a bound on what is absent)
            for name, runs in refused.items():
                again = c.dynamic_table_history(name)
                shown.extend(r.error or "" for r in again)
                assert [(r.trigger, r.status) for r in again] == [("refused", RunStatus.FAILED)], again
                assert [(r.trigger, r.status) for r in runs] == [("refused", RunStatus.FAILED)]
            assert "a path or a file" in (refused["pg.s.x"][0].error or "")
            assert "not signed by catalogd" in (refused["pg.s.y"][0].error or "")
            for name in ("pg.s.x", "pg.s.y"):
                done = pg.cli("dt", "refresh", name, "--wait")
                shown.append(done.stderr + done.stdout)
                assert done.code == 1 and "permission-denied" in done.stderr and "never run" in done.stderr, done
            assert not list((tmp_path / "data").rglob("result.json"))  # no job was ever started

            # The doors a writer has: a comment holding the marker, catalogd's properties, on
            # create and alter: each refused, nothing changed.
            comment = "orders" + PROPERTIES_MARKER + json.dumps({store.FRESHNESS: "1 SECOND",
                                                                  **store.chunks(store.EXPANDED, reads_it)})
            for args in (("table", "create", "pg.s.z", "--schema", "v int", "--comment", comment),
                         ("table", "create", "pg.s.z", "--schema", "v int", "--property",
                          f"{store.FRESHNESS}=1 SECOND"),
                         ("db", "create", "pg.t", "--comment", comment)):
                done = pg.cli(*args)
                assert done.code == 1 and done.stderr.startswith("error: invalid-argument: "), done
            with pytest.raises(InvalidArgumentError, match="may not contain"):
                c.alter_table("pg.s.x", comment=comment)
            with pytest.raises(InvalidArgumentError, match="catalogd's own"):
                c.alter_table("pg.s.x", set_properties={store.FRESHNESS.upper(): "1 SECOND"})
            assert pg.query("SELECT count(*) FROM pg_tables WHERE schemaname = 's'") == [(2,)]
            assert pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = 't'") == [(0,)]
            # CREATE DYNAMIC TABLE itself: a path-based source is refused before Spark sees it.
            with pytest.raises(InvalidArgumentError, match="a path or a file"):
                c.create_dynamic_table("pg.s.w", f"SELECT CAST(value AS INT) AS v FROM src.text.`file://{victim}`",
                                       "1 day")
    finally:
        assert started.stop() == 0, started.log()[-3000:]
    log = (tmp_path / "catalogd.log").read_text(errors="replace")
    assert secret not in log and all(secret not in text for text in shown)
