"""Dynamic tables on the warm engine (``spark.engine: connect``): refreshes run in sessions
of a Spark Connect server the daemon starts and supervises (real JVMs, a real metastore).

One daemon with its Connect server serves the whole test session (``connect_dtd``); its
``main`` catalog is a remote catalog on the session daemon's metastore, so the session
SparkSession writes the sources and reads the results. Its ``pg`` catalog is a jdbc catalog on a
database of the session's PostgreSQL server (its password given to the daemon in its environment).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from polling import holds_for, wait_until

from catalogd.client import CatalogClient
from catalogd.dynamic.connect import WARMUP_DIR, WARMUP_ROUNDS
from catalogd.model import RefreshMode, RefreshState, RunStatus

from .helpers import (
    Daemon,
    free_port,
    metastore_key_file,
    process_alive,
    sorted_rows,
    spark_rows,
    start_daemon,
    write_config,
)
from .postgres import PostgresServer
from .spark_ports import block_request_answers, listening_sockets, process_tree

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 240.0
SPARK = {"master": "local[1]", "engine": "connect",
         "conf": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m",
                  "spark.sql.session.timeZone": "UTC"}}


class ConnectDaemon:
    def __init__(self, root: Path, daemon: Daemon, http_port: int, postgres: PostgresServer, pg_database: str) -> None:
        self.root = root
        self.daemon = daemon
        self.http = f"http://127.0.0.1:{http_port}"
        self.postgres = postgres
        self.pg_database = pg_database

    @property
    def server_dir(self) -> Path:
        return self.root / "data" / "dynamic" / "connect" / "server-0"

    def server_pid(self) -> int | None:
        try:
            pid = int((self.server_dir / "server.pid").read_text())
        except (OSError, ValueError):
            return None
        return pid if process_alive(pid) else None

    def log(self) -> str:
        return (self.root / "daemon.log").read_text(errors="replace")


@pytest.fixture(scope="session")
def connect_dtd(daemon: Daemon, postgres: PostgresServer,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectDaemon]:
    """A daemon on the connect engine: its Connect server starts with it (one per test session)."""
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore or ""
    root = tmp_path_factory.mktemp("connect-dtd")
    port, http_port = free_port(), free_port()
    pg_database = postgres.create_database("connectdt")
    config = write_config(
        root / "catalogd.yaml", port=port, http_port=http_port, data_dir=root / "data",
        catalogs=[{"name": "main", "type": "hive", "default": True,
                   "connection": {"hive.metastore.uris": metastore},
                   "metastore-key-file": str(metastore_key_file(daemon.data_dir))},
                  {"name": "pg", "type": "jdbc", "base-url": f"jdbc:postgresql://{postgres.host}:{postgres.port}",
                   "default-database": pg_database, "username": postgres.role, "password": "${PG_TEST_PASSWORD}"}],
        extra={"spark": SPARK, "staging": {"replaced-data-retention": "30s"}})
    started = start_daemon(config, root / "data", root / "daemon.log", env={"PG_TEST_PASSWORD": postgres.password})
    holder = ConnectDaemon(root, started, http_port, postgres, pg_database)
    yield holder
    assert started.stop(timeout=90) == 0, holder.log()[-3000:]
    # The daemon stopped its server with it.
    pid_file = holder.server_dir / "server.pid"
    if pid_file.exists():
        assert not process_alive(int(pid_file.read_text()))


@pytest.fixture
def cc(connect_dtd: ConnectDaemon) -> Iterator[CatalogClient]:
    with CatalogClient(connect_dtd.daemon.address, timeout=120.0) as c:
        yield c


@pytest.fixture
def cdb(cc: CatalogClient, unique_name: Callable[[str], str]) -> Iterator[str]:
    name = unique_name("cdt")
    cc.create_database(f"main.{name}")
    yield name
    for dt in cc.list_dynamic_tables("main", name):
        cc.drop_dynamic_table(f"main.{name}.{dt.name}", if_exists=True)
    cc.drop_database(f"main.{name}", if_exists=True, cascade=True)


def rest(cd: ConnectDaemon, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(cd.http + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_job(cd: ConnectDaemon, job_id: str) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        status, job = rest(cd, "GET", f"/v3/dynamic-tables/refresh/{job_id}")
        assert status == 200, job
        return job if job["status"] in ("SUCCEEDED", "FAILED") else None

    try:
        return wait_until(finished, JOB_TIMEOUT, f"refresh job {job_id} to finish", every=0.5)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{cd.log()[-3000:]}") from None


def refresh(cd: ConnectDaemon, name: str, **body: Any) -> dict[str, Any]:
    status, job = rest(cd, "POST", "/v3/dynamic-tables/refresh", {"tables": [name], **body})
    assert status == 200, job
    return job


@pytest.fixture
def orders(spark: Any, cdb: str) -> str:
    table = f"{cdb}.orders"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, amount DOUBLE, ds STRING) USING parquet PARTITIONED BY (ds)")
    for n, day in enumerate(["2024-03-01", "2024-03-02"], start=1):
        spark.sql(f"INSERT INTO {table} SELECT id, id * 1.5, '{day}' FROM range({n * 10})")
    return table


def test_full_and_partition_refreshes_run_in_the_connect_server(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str, orders: str) -> None:
    server = wait_until(connect_dtd.server_pid, 180, "the Connect server to start with the daemon", every=0.5)
    daily = f"main.{cdb}.daily"
    cc.create_dynamic_table(daily, f"SELECT ds, count(*) AS n, sum(amount) AS total FROM {orders} GROUP BY ds",
                            "1 day", partitioned_by=["ds"],
                            options={"partition.fields.ds.date-formatter": "yyyy-MM-dd", "initialize": "on_schedule"})
    job = refresh(connect_dtd, daily, scheduleTime="2024-03-03 00:00:00")
    assert job["clusterInfo"]["submitter"].startswith("spark-connect")
    done = wait_job(connect_dtd, job["jobId"])
    assert done["status"] == "SUCCEEDED", done
    run = done["runs"][0]
    assert run["partition"] == {"ds": "2024-03-02"} and run["rows"] == 1
    assert run["sourcePartitions"] == ["ds=2024-03-02"]
    assert run["applicationId"]
    assert spark_rows(spark, f"{cdb}.daily") == [(20, 20 * 19 / 2 * 1.5, "2024-03-02")]
    # The server warmed up (spark.connect-warmup, on by default) before it took the run; its
    # scratch files are gone.
    start = json.loads((connect_dtd.server_dir / "warmup.json").read_text())
    assert start["warmup"] and start["error"] is None and len(start["rounds_s"]) == WARMUP_ROUNDS, start
    assert not (connect_dtd.server_dir / WARMUP_DIR).exists()

    # A FULL refresh of the whole table, and a second one: each in a session of its own on the same server.
    everything = refresh(connect_dtd, daily)
    first = wait_job(connect_dtd, everything["jobId"])
    assert first["status"] == "SUCCEEDED", first
    second = wait_job(connect_dtd, refresh(connect_dtd, daily)["jobId"])
    assert second["status"] == "SUCCEEDED", second
    assert first["runs"][0]["applicationId"] == second["runs"][0]["applicationId"] == run["applicationId"]
    assert sorted(spark_rows(spark, f"{cdb}.daily")) == [(10, 67.5, "2024-03-01"), (20, 285.0, "2024-03-02")]
    assert connect_dtd.server_pid() == server  # no new application per run
    assert [s for s in cc.list_stages("main") if s.target_name == daily and s.state.value == "OPEN"] == []


def test_a_query_that_fails_analysis_aborts_the_stage_begun_beside_it(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str, orders: str) -> None:
    # The stage begins while the query is analysed: when the analysis fails, the stage is
    # aborted by its writer and the table keeps its old data.
    name = f"main.{cdb}.totals"
    cc.create_dynamic_table(name, f"SELECT ds, sum(amount) AS total FROM {orders} GROUP BY ds", "1 day",
                            options={"initialize": "on_schedule"})
    # Outside catalogd, the source is made again without the column: still a table of its
    # catalog (the run starts), but the stored query no longer analyses.
    spark.sql(f"DROP TABLE {orders}")
    spark.sql(f"CREATE TABLE {orders} (id BIGINT, ds STRING) USING parquet PARTITIONED BY (ds)")
    done = wait_job(connect_dtd, refresh(connect_dtd, name)["jobId"])
    assert done["status"] == "FAILED", done
    assert "UNRESOLVED_COLUMN" in done["runs"][0]["error"], done
    # The stage begun beside the analysis was aborted by its writer: none is left (the unit
    # tests of job.py show the order: begun, then aborted).
    assert [s for s in cc.list_stages("main") if s.target_name == name] == []
    assert spark_rows(spark, f"{cdb}.totals") == []


_STARTED = re.compile(r"Spark Connect server started at: \S*?:(\d+)")


def _connect_servers(cd: ConnectDaemon) -> list[tuple[int, int]]:
    """(pid, gRPC port) of each Connect server of the daemon that listens now."""
    found = []
    for pid_file in sorted((cd.root / "data" / "dynamic" / "connect").glob("server-*/server.pid")):
        pid = int(pid_file.read_text())
        ports = _STARTED.findall((pid_file.parent / "job.log").read_text(errors="replace"))
        if process_alive(pid) and ports:
            found.append((pid, int(ports[-1])))
    return found


def test_the_connect_server_s_ports_are_on_loopback_and_refuse_an_unauthenticated_block_fetch(
        connect_dtd: ConnectDaemon) -> None:
    """Issue 31, row 3: the server's driver RPC and block manager listened on the machine's address
    without spark.authenticate, and a client with no credential fetched broadcast blocks from them.
    Now every socket its process tree listens on is a loopback one, and each Spark port (all but the
    gRPC one, which asks for the server's token) answers a block request with no credential by
    asking for Spark's SASL authentication, never with a block or a "not found"."""
    def spark_ports() -> tuple[int, list[tuple[str, int]], int] | None:
        for pid, grpc in _connect_servers(connect_dtd):
            sockets = listening_sockets(process_tree(pid))
            if len(sockets) >= 3:  # gRPC, driver RPC, block manager: the server is up
                return pid, sockets, grpc
        return None

    pid, sockets, grpc = wait_until(spark_ports, 240, "a Connect server with its ports open", every=1)
    assert all(host in ("127.0.0.1", "::1") for host, _ in sockets), (pid, sockets)
    answers = block_request_answers([(host, port) for host, port in sockets if port != grpc])
    assert "served" not in answers.values() and list(answers.values()).count("sasl") >= 2, answers
    # What the server was started with: Spark makes the secret itself (a local master), so none is written.
    settings = (connect_dtd.server_dir / "spark.properties").read_text().splitlines()
    assert "spark.authenticate true" in settings and not [s for s in settings if "secret" in s], settings
    # The gRPC port's token is in the server's environment only (readable by its own user alone),
    # in none of the daemon's files.
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    token = next(v.split(b"=", 1)[1] for v in environ if v.startswith(b"SPARK_CONNECT_AUTHENTICATE_TOKEN="))
    assert len(token) >= 24 and Path(f"/proc/{pid}/environ").stat().st_mode & 0o077 == 0
    assert [str(p) for p in connect_dtd.root.rglob("*") if _holds(p, token)] == [], "the token is in these files"


def test_the_server_is_catalogd_s_own_and_its_grpc_port_refuses_a_client_without_the_token(
        connect_dtd: ConnectDaemon) -> None:
    """catalogd starts its own server class (``catalogd.connect.ConnectServer``: sessions on one
    class loader) in place of Spark's, and it keeps Spark's token check: a client that does not
    send the token gets no session, whatever it asks."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    pid, grpc = wait_until(lambda: (_connect_servers(connect_dtd) or [None])[0], 240, "a Connect server listening",
                           every=1)
    command = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    assert b"catalogd.connect.ConnectServer" in command and command[-1].endswith(b"catalogd-connect.jar"), command
    stranger = RemoteSession.builder.remote(f"sc://127.0.0.1:{grpc}").create()
    try:
        # Without the token check the query would answer a row: this raises only if it is refused.
        with pytest.raises(SparkConnectGrpcException, match=r"(?i)unauthenticated|authenticat|token"):
            stranger.sql("SELECT 1").collect()
    finally:
        stranger.client.close()


def test_a_jdbc_dynamic_table_refreshes_in_the_connect_server_and_its_password_is_in_no_file(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str, orders: str) -> None:
    """Issue 31, row 12: every refresh of a jdbc dynamic table on the connect engine FAILED with "no
    password was provided" (the password went in as a session setting, which the server hands
    back to its client redacted). Now it refreshes, and the password is in none of the daemon's
    files (its log, the runs' and servers' settings and logs, where a JDBC option would be as part
    of the logged plan) but the server's own PostgreSQL password file (0600, in its 0700 directory)."""
    pg = connect_dtd.postgres
    name = f"pg.{cdb}.totals"
    cc.create_database(f"pg.{cdb}")
    try:
        cc.create_dynamic_table(name, f"SELECT ds, count(*) AS n, sum(amount) AS total FROM main.{orders} "
                                      "GROUP BY ds", "1 day", "FULL", options={"initialize": "on_schedule"})
        done = wait_job(connect_dtd, refresh(connect_dtd, name)["jobId"])
        assert done["status"] == "SUCCEEDED", done
        assert done["runs"][0]["rows"] == 2
        with psycopg.connect(host=pg.host, port=pg.port, dbname=connect_dtd.pg_database, user=pg.role,
                             password=pg.password, autocommit=True) as conn:
            rows = conn.execute(f'SELECT ds, n, total FROM "{cdb}".totals ORDER BY ds').fetchall()
        assert rows == [("2024-03-01", 10, 67.5), ("2024-03-02", 20, 285.0)]
    finally:
        cc.drop_dynamic_table(name, if_exists=True)
        cc.drop_database(f"pg.{cdb}", if_exists=True, cascade=True)
    secret = pg.password.encode()
    holding = [p for p in connect_dtd.root.rglob("*") if _holds(p, secret)]
    assert [p.name for p in holding] == ["pgpass"], [str(p) for p in holding]
    assert stat.S_IMODE(holding[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(holding[0].parent.stat().st_mode) == 0o700


def _holds(path: Path, secret: bytes) -> bool:
    try:
        return path.is_file() and secret in path.read_bytes()
    except OSError:  # a temporary file of a running JVM, gone meanwhile
        return False


def _data_files(location: str) -> list[str]:
    root = Path(location.removeprefix("file:"))
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))


def test_an_incremental_continuous_table_reads_only_the_new_files_each_trigger(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str) -> None:
    source = f"{cdb}.clicks"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, kind STRING) USING parquet PARTITIONED BY (kind)")
    spark.sql(f"INSERT INTO {source} SELECT id, 'a' FROM range(0, 40, 1, 3)")  # three files
    location = cc.get_table(f"main.{source}").location or ""
    initial = len(_data_files(location))
    assert initial >= 2
    name = f"main.{cdb}.even_clicks"
    cc.create_dynamic_table(name, f"SELECT id, upper(kind) AS kind FROM {source} WHERE id % 2 = 0", "4 seconds")
    table = f"{cdb}.even_clicks"
    dt = cc.get_dynamic_table(name)
    assert dt.refresh_mode is RefreshMode.CONTINUOUS
    assert dt.job_detail["refresh"] == "incremental", dt.job_detail
    assert "reads only the files added since the last one" in str(dt.job_detail["refreshWhy"])
    wait_until(lambda: len(spark_rows(spark, table)) == 20, JOB_TIMEOUT, "the first trigger", every=1)

    # Two appends of one file each (a new partition, then one more file in the first): each trigger
    # that commits reads that file alone (Spark's own inputFiles of the trigger's query).
    for batch, (first, kind) in enumerate(((100, "b"), (200, "a")), start=1):
        spark.sql(f"INSERT INTO {source} SELECT id, '{kind}' FROM range({first}, {first + 10}, 1, 1)")
        wait_until(lambda n=batch: len(spark_rows(spark, table)) == 20 + 5 * n, JOB_TIMEOUT,
                   f"append {batch}", every=1)
    assert len(_data_files(location)) == initial + 2
    assert spark_rows(spark, table) == sorted([(i, "A") for i in (*range(0, 40, 2), *range(200, 210, 2))]
                                              + [(i, "B") for i in range(100, 110, 2)])

    def runs() -> list[Any] | None:
        found = [r for r in cc.dynamic_table_history(name) if r.trigger in ("append", "recompute")]
        return found if len(found) >= 3 else None

    recorded = sorted(wait_until(runs, 60, "the triggers recorded as runs", every=0.5), key=lambda r: r.started)
    assert [(r.trigger, r.status, r.input_files, r.rows) for r in recorded] == [
        ("recompute", RunStatus.SUCCEEDED, initial, 20),
        ("append", RunStatus.SUCCEEDED, 1, 5), ("append", RunStatus.SUCCEEDED, 1, 5)], recorded
    last = cc.get_dynamic_table(name).job_detail["lastTrigger"]
    assert last["mode"] == "append" and last["input_files"] == 1 and last["source_files"] == initial + 2, last

    # ALTER ... AS on a CONTINUOUS table (FLIP-492): a new column, appended; its streaming query is
    # stopped and started again from scratch, and the new job writes every row with the new column.
    altered = cc.sql(f"ALTER MATERIALIZED TABLE {name} AS "
                     f"SELECT id, upper(kind) AS kind, id * 10 AS tenfold FROM {source} WHERE id % 2 = 0")
    assert altered.kind == "altered"
    assert "used by a new streaming job; columns added: tenfold bigint" in altered.message, altered.message
    assert [c.name for c in cc.get_table(name).columns] == ["id", "kind", "tenfold"]
    ids = [*range(0, 40, 2), *range(100, 110, 2), *range(200, 210, 2)]
    wait_until(lambda: sorted(r[0::2] for r in spark_rows(spark, table)) == [(i, i * 10) for i in ids],
               JOB_TIMEOUT, "every row again, with the new column", every=1)
    assert cc.get_dynamic_table(name).job_detail["refresh"] == "incremental"
    cc.drop_dynamic_table(name)


def test_an_aggregating_continuous_table_merges_each_trigger_s_new_files_into_its_state(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str) -> None:
    source = f"{cdb}.sales"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, kind STRING, amount DECIMAL(10,2)) USING parquet")
    spark.sql(f"INSERT INTO {source} SELECT id, IF(id % 2 = 0, 'a', 'b'), id * 1.25 FROM range(0, 30, 1, 3)")
    location = cc.get_table(f"main.{source}").location or ""
    initial = len(_data_files(location))
    query = (f"SELECT kind, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, min(id) AS low, "
             f"max(id) AS high, count_if(amount > 10) AS big FROM {source} WHERE id % 5 <> 0 "
             "GROUP BY kind HAVING count(*) > 2")
    name = f"main.{cdb}.by_kind"
    cc.create_dynamic_table(name, query, "4 seconds")
    dt = cc.get_dynamic_table(name)
    assert dt.job_detail["refresh"] == "incremental", dt.job_detail
    assert "merges that into the per-group state" in str(dt.job_detail["refreshWhy"])
    table = f"{cdb}.by_kind"

    def matches() -> bool:
        # The table holds what the query gives over the whole source now, to the last decimal.
        return spark_rows(spark, table) == sorted_rows(spark.sql(query).collect())

    wait_until(matches, JOB_TIMEOUT, "the first trigger", every=1)
    # New rows for both groups, and a group that crosses HAVING's threshold on the second append.
    for batch, (first, kind) in enumerate(((100, "a"), (200, "c"), (300, "c")), start=1):
        spark.sql(f"INSERT INTO {source} SELECT id, IF(id % 3 = 0, '{kind}', 'b'), id * 0.5 "
                  f"FROM range({first}, {first + 6}, 1, 1)")
        wait_until(lambda n=batch: len([r for r in cc.dynamic_table_history(name) if r.trigger == "merge"]) >= n
                   and matches(), JOB_TIMEOUT, f"merge {batch}", every=1)
    assert {r[0] for r in spark_rows(spark, table)} == {"a", "b", "c"}
    merges = [r for r in cc.dynamic_table_history(name) if r.trigger == "merge"]
    # Each merge read the one new file (Spark's inputFiles of its partial aggregate), not the source.
    assert [(r.status, r.input_files) for r in merges] == [(RunStatus.SUCCEEDED, 1)] * 3, merges
    last = cc.get_dynamic_table(name).job_detail["lastTrigger"]
    assert last["mode"] == "merge" and last["source_files"] == initial + 3, last
    # One state version is kept: each trigger's new one replaces the one before.
    states = list(connect_dtd.root.joinpath("data").rglob("by_kind/checkpoint/state"))
    assert len(states) == 1 and [p.name for p in states[0].iterdir()] == ["4"], states
    cc.drop_dynamic_table(name)


def test_merged_aggregations_keep_null_groups_and_global_aggregates_over_a_partitioned_source(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str) -> None:
    source = f"{cdb}.visits"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, kind STRING, ds STRING) USING parquet PARTITIONED BY (ds)")
    spark.sql(f"INSERT INTO {source} SELECT id, IF(id % 3 = 0, NULL, 'k' || (id % 2)), '2024-03-01' "
              "FROM range(0, 12, 1, 2)")
    queries = {
        "by_kind": f"SELECT kind, count(*) AS n, sum(id) AS total, max(ds) AS last_day FROM {source} GROUP BY kind",
        "overall": f"SELECT count(*) AS n, avg(id) AS mean, min(kind) AS first_kind FROM {source}",
    }
    for short, query in queries.items():
        assert cc.create_dynamic_table(f"main.{cdb}.{short}", query, "4 seconds").job_detail["refresh"] \
            == "incremental"

    def matches(short: str) -> bool:
        return spark_rows(spark, f"{cdb}.{short}") == sorted_rows(spark.sql(queries[short]).collect())

    for short in queries:
        wait_until(lambda s=short: matches(s), JOB_TIMEOUT, f"{short}'s first trigger", every=1)
    # A new partition with a NULL group and a new group: merged into the state, NULL with NULL.
    spark.sql(f"INSERT INTO {source} SELECT id, IF(id % 2 = 0, NULL, 'k9'), '2024-03-02' FROM range(20, 26, 1, 1)")
    for short in queries:
        wait_until(lambda s=short: any(r.trigger == "merge" for r in cc.dynamic_table_history(f"main.{cdb}.{s}"))
                   and matches(s), JOB_TIMEOUT, f"{short}'s merge", every=1)
    assert len([r for r in spark_rows(spark, f"{cdb}.by_kind") if r[0] is None]) == 1
    for short in queries:
        cc.drop_dynamic_table(f"main.{cdb}.{short}")


def test_a_connect_server_killed_mid_run_fails_the_run_and_is_restarted(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str, orders: str) -> None:
    name = f"main.{cdb}.slow"
    # Each row costs the server's JVM about half a second (a million lambda calls that depend on
    # the row, so nothing is folded ahead): the run is still writing when the server is killed.
    # (reflect('java.lang.Thread', 'sleep', ...) did this before; a definition may not call Java.)
    cc.create_dynamic_table(
        name, f"SELECT id, ds, length(CAST(aggregate(sequence(1, id + 1500), 0L, "
              f"(a, x) -> a + aggregate(sequence(1, x), 0L, (b, y) -> b + y)) AS STRING)) "
              f"AS pause FROM {orders}", "1 day", options={"initialize": "on_schedule"})
    killed = wait_until(connect_dtd.server_pid, 180, "the Connect server", every=0.5)
    job = refresh(connect_dtd, name)

    def writing() -> bool:
        _, current = rest(connect_dtd, "GET", f"/v3/dynamic-tables/refresh/{job['jobId']}")
        assert current["status"] in ("PENDING", "RUNNING"), current
        return current["runs"][0].get("phase") == "writing"

    wait_until(writing, JOB_TIMEOUT, "the run to write", every=0.2)
    os.kill(killed, signal.SIGKILL)
    done = wait_job(connect_dtd, job["jobId"])
    assert done["status"] == "FAILED"
    assert "Spark Connect server died during the run" in done["runs"][0]["error"], done
    # Nothing of it is in the table, and its stage is not left open.
    assert spark_rows(spark, f"{cdb}.slow") == []
    assert [s for s in cc.list_stages("main") if s.target_name == name and s.state.value == "OPEN"] == []
    history = cc.dynamic_table_history(name)
    assert history[0].status is RunStatus.FAILED

    restarted = wait_until(lambda: (pid := connect_dtd.server_pid()) != killed and pid, 180,
                           "the Connect server restarted", every=0.5)
    assert restarted and process_alive(restarted)
    again = wait_job(connect_dtd, refresh(connect_dtd, name)["jobId"])
    assert again["status"] == "SUCCEEDED", again
    assert len(spark_rows(spark, f"{cdb}.slow")) == 30
    assert "the Spark Connect server (pid" in connect_dtd.log()


def test_continuous_tables_are_queries_in_the_one_server_suspend_and_drop_touch_only_theirs(
        connect_dtd: ConnectDaemon, cc: CatalogClient, spark: Any, cdb: str) -> None:
    source = f"{cdb}.events"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, kind STRING) USING parquet")
    spark.sql(f"INSERT INTO {source} SELECT id, 'a' FROM range(10)")
    server = wait_until(connect_dtd.server_pid, 180, "the Connect server", every=0.5)
    names = ["kept", "paused", "dropped"]
    for short in names:
        created = cc.create_dynamic_table(f"main.{cdb}.{short}", f"SELECT kind, count(*) AS n FROM {source} "
                                          "GROUP BY kind", "10 seconds")
        assert created.refresh_mode is RefreshMode.CONTINUOUS
    for short in names:
        wait_until(lambda s=short: spark_rows(spark, f"{cdb}.{s}") == [("a", 10)], JOB_TIMEOUT,
                   f"{short}'s first micro-batch", every=1)
    # Every table's job is a query in the one server: no application of its own.
    for short in names:
        detail = cc.get_dynamic_table(f"main.{cdb}.{short}").job_detail
        assert detail["pid"] == server and detail["engine"] == "connect", detail

    assert cc.suspend_dynamic_table(f"main.{cdb}.paused").state is RefreshState.SUSPENDED
    cc.drop_dynamic_table(f"main.{cdb}.dropped")
    assert not cc.table_exists(f"main.{cdb}.dropped")
    spark.sql(f"INSERT INTO {source} SELECT id, 'b' FROM range(5)")
    wait_until(lambda: spark_rows(spark, f"{cdb}.kept") == [("a", 10), ("b", 5)], JOB_TIMEOUT,
               "the kept table to follow the append", every=1)
    holds_for(lambda: spark_rows(spark, f"{cdb}.paused") == [("a", 10)], 6.0, "the suspended table unchanged",
              every=1)
    assert connect_dtd.server_pid() == server
    assert cc.resume_dynamic_table(f"main.{cdb}.paused").state is RefreshState.RUNNING
    wait_until(lambda: spark_rows(spark, f"{cdb}.paused") == [("a", 10), ("b", 5)], JOB_TIMEOUT,
               "the resumed table to catch up", every=1)
