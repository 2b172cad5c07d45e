"""The Spark catalog plugin (``catalogd.spark.CatalogdCatalog``): plain Spark SQL and
DataFrameWriterV2 statements on catalogd's catalogs by their own names (``main.db.t``), atomic
through catalogd's stages, with no catalogd Python helper in the job.

Most tests run on ``plugin_spark`` (the shared SparkSession's application with the plugin's
``main`` and ``scratch`` catalogs on the session daemon); the catalogd client only inspects what
the statements left (tables, stages, files). Two tests start Spark processes of their own: a
driver killed mid-CTAS, and the ``spark-sql`` shell.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.auth.audit import read_audit
from catalogd.client import CatalogClient
from catalogd.model import StageState

from .helpers import SESSION_STAGE_SECRET, Daemon, clean_env, local_path, metastore_key_file, sql

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: catalogd's table parameter naming the stage that last wrote a table (hive_codec.LAST_COMMIT).
LAST_COMMIT = "catalogd.last-commit"


# ---------------------------------------------------------------- what a statement left

def open_stages(client: CatalogClient, db: str) -> list[str]:
    """Stages of ``db`` (``main.x``) not committed (a committed REPLACE keeps a retiring stage a while)."""
    database = db.split(".", 1)[1]
    return [s.id for s in client.list_stages("main") if s.database == database and s.state is not StageState.COMMITTED]


def stage_leftovers(client: CatalogClient, db: str) -> list[str]:
    """Staging tables (any state) and staging directories left in ``db``."""
    database = db.split(".", 1)[1]
    stages = [s.staging_table for s in client.list_stages("main") if s.database == database]
    location = local_path(client.get_database(db).location)
    dirs = [p.name for p in location.iterdir() if "stage" in p.name] if location.exists() else []
    return stages + dirs


def files_in(client: CatalogClient, db: str) -> list[str]:
    """Every file and directory under ``db``'s directory."""
    location = local_path(client.get_database(db).location)
    return sorted(str(p.relative_to(location)) for p in location.rglob("*")) if location.exists() else []


def staged(client: CatalogClient, table: str) -> StageState:
    """The state of the stage that last wrote ``table``: proof that a statement went through one."""
    stage_id = client.get_table(table).properties.get(LAST_COMMIT)
    assert stage_id, f"{table} was not written through a catalogd stage: {client.get_table(table).properties}"
    return client.get_stage(stage_id).state


def condition(error: BaseException) -> str | None:
    """Spark's error condition (class) of a pyspark exception."""
    get = getattr(error, "getCondition", None)
    return get() if get is not None else None


# ---------------------------------------------------------------- statements

def test_create_and_replace_as_select(plugin_spark, client, main_db):
    t = f"{main_db}.t"
    plugin_spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (ds) COMMENT 'by the plugin' "
                     f"TBLPROPERTIES ('team'='data') AS SELECT id, CAST(id % 2 AS STRING) AS ds FROM range(4)")
    table = client.get_table(t)
    assert [c.name for c in table.columns] == ["id"] and [k.name for k in table.partition_keys] == ["ds"]
    assert table.format.value == "parquet" and table.comment == "by the plugin" and table.properties["team"] == "data"
    assert staged(client, t) is StageState.COMMITTED
    assert sql(plugin_spark, f"SELECT id, ds FROM {t} ORDER BY id") == [(0, "0"), (1, "1"), (2, "0"), (3, "1")]

    with pytest.raises(Exception) as exists:
        plugin_spark.sql(f"CREATE TABLE {t} AS SELECT 'x' AS name")
    assert condition(exists.value) == "TABLE_OR_VIEW_ALREADY_EXISTS", exists.value
    plugin_spark.sql(f"CREATE TABLE IF NOT EXISTS {t} AS SELECT 'x' AS name")
    assert sql(plugin_spark, f"SELECT count(*) FROM {t}") == [(4,)]

    plugin_spark.sql(f"CREATE OR REPLACE TABLE {t} USING orc AS SELECT 'x' AS name")
    assert client.get_table(t).format.value == "orc" and client.get_table(t).partition_keys == []
    assert staged(client, t) is StageState.COMMITTED
    assert sql(plugin_spark, f"SELECT * FROM {t}") == [("x",)]
    plugin_spark.sql(f"REPLACE TABLE {t} AS SELECT id * 10 AS id FROM range(3)")
    assert sql(plugin_spark, f"SELECT id FROM {t} ORDER BY id") == [(0,), (10,), (20,)]
    assert open_stages(client, main_db) == []


def test_inserts(plugin_spark, client, main_db):
    t = f"{main_db}.by_ds"
    plugin_spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (ds) AS "
                     "SELECT * FROM VALUES (1, 'a'), (2, 'a'), (3, 'b') AS v(id, ds)")

    def content() -> list[tuple[Any, ...]]:
        return sql(plugin_spark, f"SELECT id, ds FROM {t} ORDER BY ds, id")

    # Read first: the plugin keeps the table's file listings while catalogd's definition stays the
    # same; the append's commit (files renamed into partition b's directory) changes it.
    assert content() == [(1, "a"), (2, "a"), (3, "b")]
    plugin_spark.sql(f"INSERT INTO {t} VALUES (4, 'b')")
    assert content() == [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    assert staged(client, t) is StageState.COMMITTED

    # A static PARTITION clause replaces that partition; the others stay.
    plugin_spark.sql(f"INSERT OVERWRITE {t} PARTITION (ds = 'a') SELECT 100")
    assert content() == [(100, "a"), (3, "b"), (4, "b")]

    # Without a PARTITION clause (static mode, Spark's default) an overwrite replaces the whole table.
    plugin_spark.sql(f"INSERT OVERWRITE {t} SELECT 5, 'z'")
    assert content() == [(5, "z")]

    # A table made empty (no directory yet) reads as empty, then with its appended rows.
    empty = f"{main_db}.empty"
    plugin_spark.sql(f"CREATE TABLE {empty} (id BIGINT, ds STRING) USING parquet PARTITIONED BY (ds)")
    assert sql(plugin_spark, f"SELECT count(*) FROM {empty}") == [(0,)]
    plugin_spark.sql(f"INSERT INTO {empty} VALUES (1, 'x')")
    assert sql(plugin_spark, f"SELECT id, ds FROM {empty}") == [(1, "x")]

    # An unpartitioned table's INSERT OVERWRITE replaces it.
    flat = f"{main_db}.flat"
    plugin_spark.sql(f"CREATE TABLE {flat} AS SELECT id FROM range(5)")
    plugin_spark.sql(f"INSERT OVERWRITE {flat} SELECT 7")
    assert sql(plugin_spark, f"SELECT id FROM {flat}") == [(7,)]
    assert open_stages(client, main_db) == []


def test_insert_overwrite_with_dynamic_partitions(plugin_spark, client, main_db):
    t = f"{main_db}.dyn"
    plugin_spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (ds) AS "
                     "SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(id, ds)")
    # The partitions the rows fall in are replaced, the others stay.
    plugin_spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        plugin_spark.sql(f"INSERT OVERWRITE {t} SELECT * FROM VALUES (30, 'b'), (40, 'c') AS v(id, ds)")
    finally:
        plugin_spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert sql(plugin_spark, f"SELECT id, ds FROM {t} ORDER BY ds, id") == [(1, "a"), (30, "b"), (40, "c")]
    assert sorted(p.values[0] for p in client.list_partitions(t)) == ["a", "b", "c"]
    assert staged(client, t) is StageState.COMMITTED
    assert open_stages(client, main_db) == []


def test_dataframe_writer_v2(plugin_spark, client, main_db):
    from pyspark.sql.functions import col

    t = f"{main_db}.v2"

    def frame(*data: tuple[int, str]) -> Any:
        return plugin_spark.createDataFrame(list(data), "id bigint, ds string")

    def content() -> list[tuple[Any, ...]]:
        return sql(plugin_spark, f"SELECT id, ds FROM {t} ORDER BY ds, id")

    frame((1, "a"), (2, "b")).writeTo(t).using("parquet").partitionedBy(col("ds")).createOrReplace()
    assert [k.name for k in client.get_table(t).partition_keys] == ["ds"]
    assert content() == [(1, "a"), (2, "b")]
    frame((3, "b")).writeTo(t).append()
    assert content() == [(1, "a"), (2, "b"), (3, "b")]
    assert staged(client, t) is StageState.COMMITTED
    frame((9, "z")).writeTo(t).using("parquet").createOrReplace()
    assert content() == [(9, "z")] and client.get_table(t).partition_keys == []
    assert open_stages(client, main_db) == []


def test_dataframe_writer_v2_overwrite_partitions(plugin_spark, client, main_db):
    t = f"{main_db}.v2dyn"
    plugin_spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (ds) AS "
                     "SELECT * FROM VALUES (1L, 'a'), (2L, 'b') AS v(id, ds)")
    plugin_spark.createDataFrame([(30, "b"), (40, "c")], "id bigint, ds string").writeTo(t).overwritePartitions()
    assert sql(plugin_spark, f"SELECT id, ds FROM {t} ORDER BY ds, id") == [(1, "a"), (30, "b"), (40, "c")]
    assert staged(client, t) is StageState.COMMITTED
    assert open_stages(client, main_db) == []


def test_a_ctas_that_fails_half_way_leaves_nothing(plugin_spark, client, main_db):
    t = f"{main_db}.doomed"
    location = local_path(client.get_database(main_db).location)
    # Four tasks on two cores: three write their files at once; the last one takes 20 ms a row
    # (seconds), then raises on its last row, long after the others' files are there.
    statement = (f"CREATE TABLE {t} AS SELECT IF(id = 999, raise_error('boom'), IF(id >= 750, "
                 "id + length(java_method('java.lang.Thread', 'sleep', 20L)) * 0, id)) AS id "
                 "FROM range(0, 1000, 1, 4)")
    failure: list[BaseException] = []

    def run() -> None:
        try:
            plugin_spark.sql(statement)
        except Exception as e:
            failure.append(e)

    job = threading.Thread(target=run)
    job.start()
    try:
        wait_until(lambda: failure or any(p.name.startswith("part-") for p in location.rglob("*")), 120,
                   what="the first tasks' files")
        assert not failure, f"the CTAS failed before any file was written: {failure}"
    finally:
        job.join()
    assert failure and "boom" in str(failure[0]), failure
    assert not client.table_exists(t)
    assert client.list_tables(main_db) == []
    assert open_stages(client, main_db) == [] and stage_leftovers(client, main_db) == []
    assert files_in(client, main_db) == []


def test_four_concurrent_ctas_of_one_target(plugin_spark, client, main_db):
    t = f"{main_db}.race"
    outcomes: dict[int, str] = {}

    def job(n: int) -> None:
        try:
            plugin_spark.sql(f"CREATE TABLE {t} AS SELECT {n} AS writer, id FROM range(1000)")
            outcomes[n] = "created"
        except Exception as e:
            # The loser's error is typed: Spark's TableAlreadyExistsException (the plugin's
            # translation of catalogd's AlreadyExists at begin or commit, or Spark's own check).
            outcomes[n] = "exists" if condition(e) == "TABLE_OR_VIEW_ALREADY_EXISTS" else f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=job, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [n for n, o in outcomes.items() if o == "created"]
    assert len(winners) == 1 and sorted(outcomes.values()).count("exists") == 3, outcomes
    assert sql(plugin_spark, f"SELECT writer, count(*) FROM {t} GROUP BY writer") == [(winners[0], 1000)]
    assert open_stages(client, main_db) == [] and stage_leftovers(client, main_db) == []


def test_create_or_replace_while_a_reader_loops(plugin_spark, client, main_db):
    t = f"{main_db}.flip"
    #: Version v of the table has sizes[v] rows, every one tagged v: a read of a mixture would
    #: show two tags, or a count of none of the sizes.
    sizes = [500, 1500, 1000, 2000]

    def replace(version: int) -> None:
        plugin_spark.sql(f"CREATE OR REPLACE TABLE {t} USING parquet AS "
                         f"SELECT {version} AS v, id FROM range(0, {sizes[version]}, 1, 2)")

    replace(0)
    seen: list[tuple[int, int, int]] = []  # (replaces done when the read began, v, count)
    errors: list[str] = []
    done = [0]
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            began = done[0]
            try:
                rows = sql(plugin_spark, f"SELECT min(v), max(v), count(*) FROM {t}")
            except Exception as e:
                errors.append(f"{type(e).__name__}: {str(e)[:300]}")
                continue
            low, high, count = rows[0]
            if low != high:
                errors.append(f"a mixture of versions {low} and {high} ({count} rows)")
            seen.append((began, high, count))

    def read_since(replaces: int) -> bool:
        if errors:
            raise AssertionError(errors[:3])
        return any(began >= replaces for began, _, _ in seen)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        wait_until(lambda: read_since(0), 120, what="the reader's first read")
        for version in range(1, len(sizes)):
            replace(version)
            done[0] = version
            wait_until(lambda: read_since(done[0]), 120, what=f"a read after replace {version}")
    finally:
        stop.set()
        thread.join()
    assert errors == [], errors[:3]
    # Each read saw one whole version: the one of its start, or a later one a replace published meanwhile.
    wrong = [(began, v, count) for began, v, count in seen if v < began or count != sizes[v]]
    assert not wrong, wrong[:5]
    assert {v for _, v, _ in seen} >= {0, len(sizes) - 1}
    assert open_stages(client, main_db) == []


def test_cross_catalog_ctas_and_join(plugin_spark, client, main_db, unique_name):
    scratch_db = f"scratch.{unique_name('db')}"
    client.create_database(scratch_db)
    try:
        plugin_spark.sql(f"CREATE TABLE {main_db}.orders AS SELECT id, id * 1.5 AS amount FROM range(10)")
        plugin_spark.sql(f"CREATE TABLE {scratch_db}.big AS SELECT id, amount FROM {main_db}.orders WHERE id < 6")
        assert client.table_exists(f"{scratch_db}.big")
        assert sql(plugin_spark, f"SELECT count(*), sum(amount) FROM {scratch_db}.big") == [(6, 22.5)]
        plugin_spark.sql(f"CREATE TABLE {main_db}.back AS SELECT id * 2 AS id FROM {scratch_db}.big")
        assert staged(client, f"{main_db}.back") is StageState.COMMITTED
        assert sql(plugin_spark, f"SELECT id FROM {main_db}.back ORDER BY id") == [(i * 2,) for i in range(6)]
        joined = sql(plugin_spark, f"SELECT count(*), sum(o.amount) FROM {main_db}.orders o "
                                   f"JOIN {scratch_db}.big b ON o.id = b.id JOIN {main_db}.back k ON k.id = b.id")
        assert joined == [(3, 9.0)]  # ids 0, 2, 4
        assert open_stages(client, main_db) == []
    finally:
        client.drop_database(scratch_db, if_exists=True, cascade=True)


def test_a_dbt_style_create_or_replace_twice(plugin_spark, client, main_db):
    t = f"{main_db}.daily"
    for run in (1, 2):
        # As dbt-spark sends a table materialization: its query comment, lower case, newlines.
        plugin_spark.sql(textwrap.dedent(f"""\
            /* {{"app": "dbt", "node_id": "model.shop.daily", "run": {run}}} */
            create or replace table {t}
            using parquet
            as
            select id, id * {run} as amount
            from range(3)
        """))
        assert sql(plugin_spark, f"select amount from {t} order by id") == [(0,), (run,), (2 * run,)]
        assert staged(client, t) is StageState.COMMITTED
    assert open_stages(client, main_db) == []


def test_errors_are_spark_s_own(plugin_spark, client, main_db, unique_name):
    with pytest.raises(Exception) as missing:
        plugin_spark.sql(f"SELECT * FROM {main_db}.nope")
    assert condition(missing.value) == "TABLE_OR_VIEW_NOT_FOUND", missing.value

    with pytest.raises(Exception) as not_there:
        plugin_spark.sql(f"REPLACE TABLE {main_db}.nope AS SELECT 1 AS id")
    assert condition(not_there.value) in ("TABLE_OR_VIEW_NOT_FOUND", "CANNOT_REPLACE_MISSING_TABLE"), not_there.value

    no_db = f"main.{unique_name('nodb')}"
    with pytest.raises(Exception) as no_namespace:
        plugin_spark.sql(f"CREATE TABLE {no_db}.t AS SELECT 1 AS id")
    assert condition(no_namespace.value) == "SCHEMA_NOT_FOUND", no_namespace.value
    assert not client.database_exists(no_db)
    assert files_in(client, main_db) == [] and open_stages(client, main_db) == []


# ---------------------------------------------------------------- Spark processes of their own

#: A driver that runs one statement (argv[2]) on the Spark configuration argv[1] (JSON).
ONE_STATEMENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master("local[1]").appName("catalogd-plugin-child")
    for key, value in json.loads(sys.argv[1]).items():
        builder = builder.config(key, value)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print("ready", flush=True)
    spark.sql(sys.argv[2]).collect()
    print("done", flush=True)
""")


def errors_of(stderr: str) -> str:
    """A JVM's stderr without its stack frames (what an assertion shows)."""
    return "\n".join(line for line in stderr.splitlines() if not line.strip().startswith("at "))[-4000:]


def child_conf(client: CatalogClient, tmp: Path, **extra: str) -> dict[str, str]:
    """``catalogd spark-conf main``'s settings (the plugin for every catalog, main the default),
    with the driver's temporary files in ``tmp``."""
    from catalogd.dynamic.runner import with_tmp_dir
    from catalogd.spark.catalogs import plugin_conf

    tmp.mkdir(exist_ok=True)
    conf = plugin_conf(client, client.get_catalog("main"))
    conf.update({"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m",
                 "spark.sql.session.timeZone": "UTC", **extra})
    return with_tmp_dir(conf, tmp)


@pytest.fixture
def killable(tmp_path: Path) -> Iterator[Callable[[dict[str, str], str], subprocess.Popen[str]]]:
    """Starts ONE_STATEMENT in a process group of its own (python and its JVM); killed at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(conf: dict[str, str], statement: str) -> subprocess.Popen[str]:
        script = tmp_path / "child.py"
        script.write_text(ONE_STATEMENT)
        with (tmp_path / "child.err").open("w") as err:
            proc = subprocess.Popen([sys.executable, str(script), json.dumps(conf), statement],
                                    stdout=subprocess.DEVNULL, stderr=err, text=True, env=clean_env(),
                                    start_new_session=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def test_a_driver_killed_mid_ctas_leaves_nothing_once_its_lease_lapses(client, main_db, killable, tmp_path):
    t = f"{main_db}.slow"
    # A 5 s lease (the plugin's `lease` option) instead of catalogd's 60 s: the janitor (every
    # 10 s) aborts the stage soon after the heartbeats stop.
    conf = child_conf(client, tmp_path / "tmp", **{"spark.sql.catalog.main.lease": "5000"})
    # 200 ms per row in one task of 300 rows: a minute of writing, far longer than the test waits.
    proc = killable(conf, f"CREATE TABLE {t} AS SELECT id, java_method('java.lang.Thread', 'sleep', 200L) AS s "
                          "FROM range(0, 300, 1, 1)")
    location = local_path(client.get_database(main_db).location)

    def writing() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"the child exited with {proc.returncode}: {errors_of((tmp_path / 'child.err').read_text())}")
        files = [p for p in location.rglob("*") if p.is_file()]
        return bool(open_stages(client, main_db)) and bool(files)

    # The stage is open and the task has begun its file: the driver dies mid-write.
    wait_until(writing, 180, what="the child's stage and its first file")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert open_stages(client, main_db), "the stage ended before the lease lapsed"

    def cleaned() -> bool:
        return not open_stages(client, main_db) and not stage_leftovers(client, main_db) \
            and files_in(client, main_db) == []

    wait_until(cleaned, 120, what="the janitor to abort the dead driver's stage and delete its files")
    assert not client.table_exists(t)


def test_the_spark_sql_shell(client, main_db, tmp_path):
    from pyspark.find_spark_home import _find_spark_home

    db = main_db.split(".", 1)[1]
    conf = child_conf(client, tmp_path / "tmp")
    argv = [str(Path(_find_spark_home()) / "bin" / "spark-sql"), "--master", "local[1]"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    # `main` is the default catalog (spark-conf main): `db.t` and `main.db.t` are one table.
    argv += ["-e", f"CREATE TABLE main.{db}.shell USING parquet AS SELECT id, id * id AS sq FROM range(5); "
                   f"SELECT count(*), sum(sq) FROM {db}.shell;"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=clean_env(), cwd=tmp_path)
    assert done.returncode == 0, errors_of(done.stderr)
    assert done.stdout.split() == ["5", "30"], done.stdout
    assert staged(client, f"{main_db}.shell") is StageState.COMMITTED
    assert open_stages(client, main_db) == [] and stage_leftovers(client, main_db) == []


# ---------------------------------------------------------------- auth

TOKENS = {"etl": "etl-token-plugin-3b5d7f9a1c", "ana": "ana-token-plugin-8e6c4a2f0b"}


def test_with_auth_a_reader_s_ctas_is_refused_and_a_writer_s_audited(spark, daemon, client, main_db,
                                                                    daemon_factory, tmp_path):
    """A daemon with auth on main's metastore, reached by catalogs of the shared Spark application
    that carry a reader's and a writer's token (files). The stage's rows go through the session
    catalog (the session daemon's HMS endpoint, which has no auth): the plugin's begin and
    commit, which auth guards, go to the auth daemon."""
    env = {f"CATALOGD_PLUGIN_TEST_{p.upper()}": token for p, token in TOKENS.items()}
    authd: Daemon = daemon_factory(name="authd", env=env, catalogs=[{
        "name": "main", "type": "hive", "default": True,
        "connection": {"hive.metastore.uris": client.get_catalog("main").metastore},
        "metastore-key-file": str(metastore_key_file(daemon.data_dir)),
    }], extra={
        "auth": {"enabled": True,
                 "principals": [{"name": p, "token": f"${{CATALOGD_PLUGIN_TEST_{p.upper()}}}"} for p in TOKENS],
                 "grants": [{"principal": "etl", "catalog": "main", "role": "writer"},
                            {"principal": "ana", "catalog": "*", "role": "reader"}],
                 "throttle": {"base-delay": "0s"}},
        # Its stages are the session daemon's too (one metastore, one signing key).
        "staging": {"secret": SESSION_STAGE_SECRET},
    })
    session = spark.newSession()
    for principal, token in TOKENS.items():
        token_file = tmp_path / f"{principal}.token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        prefix = f"spark.sql.catalog.{principal}_main"
        session.conf.set(prefix, "catalogd.spark.CatalogdCatalog")
        session.conf.set(f"{prefix}.address", authd.address)
        session.conf.set(f"{prefix}.catalog", "main")
        session.conf.set(f"{prefix}.token-file", str(token_file))
    db = main_db.split(".", 1)[1]

    with pytest.raises(Exception, match="catalogd permission denied") as refused:
        session.sql(f"CREATE TABLE ana_main.{db}.t AS SELECT id FROM range(10)")
    assert "ana" in str(refused.value)
    assert not client.table_exists(f"{main_db}.t")
    assert files_in(client, main_db) == [] and open_stages(client, main_db) == []
    # A reader reads.
    assert sql(session, f"SHOW TABLES IN ana_main.{db}") == []

    session.sql(f"CREATE TABLE etl_main.{db}.t AS SELECT id FROM range(10)")
    assert sql(session, f"SELECT count(*) FROM ana_main.{db}.t") == [(10,)]
    stage_id = client.get_table(f"{main_db}.t").properties[LAST_COMMIT]

    def audited() -> set[tuple[str, str, str]]:
        entries = read_audit(authd.data_dir / "audit" / "audit.jsonl", 100_000)
        return {(e["operation"], e["principal"], e["outcome"]) for e in entries
                if stage_id in json.dumps(e) or e.get("object") == f"{main_db}.t"}

    def writer_audited() -> set[tuple[str, str, str]] | None:
        seen = audited()
        return seen if {("beginStage", "etl", "ok"), ("commitStage", "etl", "ok")} <= seen else None

    seen = wait_until(writer_audited, 30, what="the writer's stage in the audit log")
    assert ("beginStage", "ana", "denied") in seen, seen
    assert not any(principal == "ana" and outcome == "ok" for _, principal, outcome in seen), seen
    log = authd.log_path.read_text() + "".join(p.read_text() for p in (authd.data_dir / "audit").glob("*"))
    assert not any(token in log for token in TOKENS.values())
