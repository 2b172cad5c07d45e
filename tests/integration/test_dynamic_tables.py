"""Dynamic tables end to end: a real metastore, real Spark jobs through spark-submit,
real streaming jobs, real daemon restarts.

The tables are driven by a daemon of this module (``dtd``) whose ``main`` catalog is
a *remote* catalog on the session daemon's metastore: the session SparkSession writes
the sources and reads the results, and ``dtd`` can be restarted in seconds (no
metastore of its own to start). The session daemon never drives these tables: it
loaded its dynamic tables at start, before any existed.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from polling import holds_for, wait_until

from catalogd.client import CatalogClient
from catalogd.dynamic.store import is_dynamic as store_is_dynamic
from catalogd.errors import (
    CatalogNotFoundError,
    InvalidArgumentError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.model import RefreshMode, RefreshState, RunStatus

from .conftest import CliResult
from .helpers import (
    CATALOGD,
    Daemon,
    clean_env,
    free_port,
    metastore_key_file,
    process_alive,
    spark_rows,
    start_daemon,
    write_config,
)
from .spark_ports import block_request_answers, listening_sockets, process_tree

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 240.0
#: How often a wait reads a result table: each read is a small query of the session's Spark.
ROWS_POLL = 0.5
#: Small Spark jobs: two daemons' jobs and the session's Spark share 2 cores.
SPARK = {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m",
                                        "spark.sql.session.timeZone": "UTC"}}


class DtDaemon:
    """The module's dynamic-table daemon; ``restart`` keeps its data dir and ports."""

    def __init__(self, root: Path, metastore: str, key_file: Path) -> None:
        self.root = root
        self.metastore = metastore
        #: The key file of the session daemon's embedded metastore (``metastore``).
        self.key_file = key_file
        self.port, self.http_port = free_port(), free_port()
        self.daemon: Daemon | None = None
        self.starts = 0

    def start(self, threshold: str = "30 min") -> Daemon:
        self.starts += 1
        config = write_config(
            self.root / f"dtd-{self.starts}.yaml", port=self.port, http_port=self.http_port,
            data_dir=self.root / "data",
            catalogs=[{"name": "main", "type": "hive", "default": True,
                       "connection": {"hive.metastore.uris": self.metastore},
                       "metastore-key-file": str(self.key_file)},
                      {"name": "scratch", "type": "memory"}],
            extra={"dynamic-tables": {"freshness-threshold": threshold},
                   "spark": SPARK,
                   # Old files outlive a REPLACE for a while: a Spark read planned just before a
                   # refresh commits still finds them (with 0s it fails with fileNotExistError).
                   # A retired stage is listed as COMMITTED meanwhile.
                   "staging": {"replaced-data-retention": "30s"}},
        )
        self.daemon = start_daemon(config, self.root / "data", self.root / f"dtd-{self.starts}.log")
        return self.daemon

    def stop(self) -> int:
        assert self.daemon is not None
        code = self.daemon.stop(timeout=90)
        self.daemon = None
        return code

    def kill(self) -> None:
        """SIGKILL: no shutdown of any kind."""
        assert self.daemon is not None
        self.daemon.proc.kill()
        self.daemon.proc.wait()
        self.daemon = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def log(self) -> str:
        return (self.root / f"dtd-{self.starts}.log").read_text()


@pytest.fixture(scope="module")
def dtd(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DtDaemon]:
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore
    holder = DtDaemon(tmp_path_factory.mktemp("dtd"), metastore or "", metastore_key_file(daemon.data_dir))
    holder.start()
    yield holder
    if holder.daemon is not None:
        code = holder.stop()
        assert code == 0, holder.log()[-3000:]


@pytest.fixture
def dc(dtd: DtDaemon) -> Iterator[CatalogClient]:
    with CatalogClient(dtd.address, timeout=120.0) as c:
        yield c


@pytest.fixture
def dt_db(dc: CatalogClient, unique_name: Callable[[str], str]) -> Iterator[str]:
    name = unique_name("dt")
    dc.create_database(f"main.{name}")
    yield name
    for dt in dc.list_dynamic_tables("main", name):
        dc.drop_dynamic_table(f"main.{name}.{dt.name}", if_exists=True)
    dc.drop_database(f"main.{name}", if_exists=True, cascade=True)


def cli(dtd: DtDaemon, *args: str, timeout: float = 180.0) -> CliResult:
    import subprocess

    done = subprocess.run([str(CATALOGD), "--server", dtd.address, *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env())
    return CliResult(done.returncode, done.stdout, done.stderr)


def rest(dtd: DtDaemon, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(dtd.http + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_job(dtd: DtDaemon, job_id: str, timeout: float = JOB_TIMEOUT) -> dict[str, Any]:
    """The REST job once it has finished."""
    def finished() -> dict[str, Any] | None:
        status, job = rest(dtd, "GET", f"/v3/dynamic-tables/refresh/{job_id}")
        assert status == 200, job
        return job if job["status"] in ("SUCCEEDED", "FAILED") else None

    try:
        # A REST GET is cheap: a short poll sees the end within a quarter second.
        return wait_until(finished, timeout, f"refresh job {job_id} to finish", every=0.25)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{dtd.log()[-3000:]}") from None


@pytest.fixture
def orders(spark: Any, dt_db: str) -> str:
    """A source partitioned by ds with three days of data (different row counts per day)."""
    table = f"{dt_db}.orders"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, amount DOUBLE, ds STRING) USING parquet PARTITIONED BY (ds)")
    for n, day in enumerate(["2024-02-29", "2024-03-01", "2024-03-02"], start=1):
        spark.sql(f"INSERT INTO {table} SELECT id, id * 1.5, '{day}' FROM range({n * 10})")
    return table


# ---------------------------------------------------------------- FULL refresh

def test_rest_refresh_overwrites_one_partition_and_reads_one(dtd: DtDaemon, dc: CatalogClient, spark: Any,
                                                            dt_db: str, orders: str) -> None:
    name = f"main.{dt_db}.daily"
    created = cli(dtd, "sql", f"""
        CREATE DYNAMIC TABLE {name}
        COMMENT 'orders per day'
        PARTITIONED BY (ds)
        WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd', 'initialize' = 'on_schedule')
        FRESHNESS = INTERVAL '1' DAY
        AS SELECT ds, count(*) AS orders, sum(amount) AS total FROM {dt_db}.orders GROUP BY ds""")
    assert created.code == 0, created.stderr
    assert "FULL refresh" in created.stdout

    dt = dc.get_dynamic_table(name)
    assert dt.refresh_mode is RefreshMode.FULL and dt.declared_mode is None
    assert dt.state is RefreshState.RUNNING
    assert dt.schedule == "0 0 0 * * ? *"
    assert [(c.name, c.type) for c in dt.columns] == [("orders", "bigint"), ("total", "double")]
    assert [(c.name, c.type) for c in dt.partition_keys] == [("ds", "string")]
    assert "`" in dt.expanded_query and f"`{dt_db}`.`orders`" in dt.expanded_query
    assert dt.job_detail["partitionFormatters"] == {"ds": "yyyy-MM-dd"}
    assert dt.last_refresh is None and dt.freshness_lag is None
    # An ordinary table Spark reads: empty until the first refresh.
    assert spark_rows(spark, f"{dt_db}.daily") == []

    status, job = rest(dtd, "POST", "/v3/dynamic-tables/refresh",
                       {"tables": [name], "scheduleTime": "2024-03-02 00:00:00", "configuration": {}})
    assert status == 200, job
    assert job["jobId"] and job["clusterInfo"]["master"] == "local[1]"
    # A second request for the same table and partition joins the running refresh.
    status, again = rest(dtd, "POST", "/v3/dynamic-tables/refresh",
                         {"tables": [name], "scheduleTime": "2024-03-02 00:00:00"})
    assert status == 200
    assert again["runs"][0]["id"] == job["runs"][0]["id"]

    done = wait_job(dtd, job["jobId"])
    assert done["status"] == "SUCCEEDED", done
    run = done["runs"][0]
    assert run["partition"] == {"ds": "2024-03-01"}
    assert run["trigger"] == "api" and run["rows"] == 1
    # Only the source partition ds=2024-03-01 was read: the filter was pushed down.
    assert run["sourcePartitions"] == ["ds=2024-03-01"]
    assert run["inputFiles"] >= 1
    assert run["applicationId"]
    assert spark_rows(spark, f"{dt_db}.daily") == [(20, 20 * 19 / 2 * 1.5, "2024-03-01")]
    assert [p.spec for p in dc.list_partitions(name)] == [{"ds": "2024-03-01"}]

    described = cli(dtd, "--json", "dt", "describe", name)
    data = json.loads(described.stdout)
    assert data["last_refresh"]["status"] == "SUCCEEDED"
    assert data["last_refresh"]["schedule_time"].startswith("2024-03-02 00:00:00")
    # Data as of 2024-03-02: far outside a 1-day target today.
    assert data["freshness_lag"] > 86400 and data["within_target"] is False
    # ... and said so: as of when, set by which run, in words (issue 14).
    assert data["data_time"] == 1709337600.0  # 2024-03-02 00:00:00 UTC, the run's schedule time
    assert data["data_time_run"] == run["id"]
    assert data["within_target_reason"].startswith(
        f"the data is as of 2024-03-02 00:00:00Z, the schedule time of run {run['id']} (api, ds=2024-03-01)")
    text = cli(dtd, "dt", "describe", name).stdout
    assert re.search(r"freshness lag +\d+ years? (\d+ days? )?\(outside the 1 DAY target\)", text), text
    assert re.search(r"why outside +the data is as of 2024-03-02 00:00:00Z", text), text
    # table describe says what it is and where to look; catalogd's own properties only with --all.
    table_text = cli(dtd, "table", "describe", name).stdout
    assert f"dynamic table, stored as a MANAGED table (its query, refreshes and lag: catalogd dt describe {name})" \
        in table_text, table_text
    assert "catalogd.dt." not in table_text and "catalogd.* properties not shown" in table_text
    assert "catalogd.dt.history" in cli(dtd, "table", "describe", name, "--all").stdout
    table_json = json.loads(cli(dtd, "--json", "table", "describe", name).stdout)
    assert table_json["kind"] == "MANAGED" and "catalogd.dt.freshness" in table_json["properties"]
    history = json.loads(cli(dtd, "--json", "dt", "history", name).stdout)
    assert [(h["trigger"], h["status"]) for h in history] == [("api", "SUCCEEDED")]

    metrics = urllib.request.urlopen(f"{dtd.http}/metrics", timeout=10).read().decode()
    assert f'catalogd_dynamic_table_within_target{{table="{name}"}} 0.0' in metrics
    assert f'catalogd_dynamic_table_freshness_lag_seconds{{table="{name}"}}' in metrics


def test_failed_refresh_keeps_the_data_and_is_recorded(dtd: DtDaemon, dc: CatalogClient, spark: Any,
                                                       dt_db: str, orders: str) -> None:
    name = f"main.{dt_db}.checked"
    # The initial refresh (initialize on_create by default) runs at once.
    dt = dc.create_dynamic_table(
        name, f"SELECT ds, count(*) AS n, max(CASE WHEN amount > 1e6 THEN raise_error('amount out of range') "
              f"ELSE amount END) AS top FROM {dt_db}.orders GROUP BY ds", "1 day")
    assert dt.refresh_mode is RefreshMode.FULL
    history = wait_until(lambda: [r for r in dc.dynamic_table_history(name) if r.status.finished], JOB_TIMEOUT,
                         "the initial refresh", every=0.25)
    assert history[0].trigger == "initial" and history[0].status is RunStatus.SUCCEEDED, history[0]
    before = spark_rows(spark, f"{dt_db}.checked")
    assert [r[0] for r in before] == ["2024-02-29", "2024-03-01", "2024-03-02"]

    spark.sql(f"INSERT INTO {orders} VALUES (999, 5e6, '2024-03-02')")
    failed = cli(dtd, "dt", "refresh", name, "--wait", timeout=JOB_TIMEOUT)
    assert failed.code == 1
    assert "amount out of range" in failed.stderr.splitlines()[-1]
    assert failed.stderr.splitlines()[-1].startswith("error: refresh-failed: ")
    assert "RUNNING" in failed.stderr  # progress shown while waiting

    assert spark_rows(spark, f"{dt_db}.checked") == before
    last = dc.dynamic_table_history(name, limit=1)[0]
    assert last.status is RunStatus.FAILED and last.trigger == "manual"
    assert "amount out of range" in (last.error or "")
    # (The initial refresh's retired stage is listed COMMITTED during the data retention.)
    assert [s.id for s in dc.list_stages("main") if s.target_name == name and s.state.value != "COMMITTED"] == []


# ---------------------------------------------------------------- CONTINUOUS refresh

def test_continuous_table_follows_appends_suspend_resume_and_a_killed_job(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str) -> None:
    source = f"{dt_db}.events"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, kind STRING) USING parquet")
    spark.sql(f"INSERT INTO {source} SELECT id, 'a' FROM range(10)")
    name = f"main.{dt_db}.kinds"
    result = dc.sql(f"CREATE DYNAMIC TABLE {name} FRESHNESS = INTERVAL '10' SECOND "
                    f"AS SELECT kind, count(*) AS n FROM {source} GROUP BY kind")
    assert result.kind == "created"
    assert result.table is not None and result.table.refresh_mode is RefreshMode.CONTINUOUS
    table = f"{dt_db}.kinds"
    wait_until(lambda: spark_rows(spark, table) == [("a", 10)], JOB_TIMEOUT, "the first micro-batch", every=ROWS_POLL)

    # The supervisor takes in the job's status every half second; a busy machine can delay a trigger.
    dt = wait_until(lambda: (d := dc.get_dynamic_table(name)).job_detail["applicationId"]
                    and d.within_target is True and d, 120.0, "the job's application id and lag within target")
    assert dt.state is RefreshState.RUNNING
    assert dt.job_detail["trigger"] == "5 seconds"
    assert dt.job_detail["applicationId"] and dt.job_detail["pid"]
    assert Path(dt.job_detail["checkpoint"]).is_dir()
    # Issue 31, row 3: the job's processes listen on loopback only, and its Spark ports (driver RPC,
    # block manager) ask a client for Spark's authentication before they serve anything.
    sockets = listening_sockets(process_tree(dt.job_detail["pid"]))
    assert sockets and all(host in ("127.0.0.1", "::1") for host, _ in sockets), sockets
    assert dt.within_target is True
    # Asked while the append below is taken in (the job runs on): a port of another protocol
    # answers nothing and is given up on only after the request's 10 s timeout.
    with ThreadPoolExecutor(1) as pool:
        asking = pool.submit(block_request_answers, sockets)

        # Appends show, and the table is (again) within its freshness (10 s) once they have.
        spark.sql(f"INSERT INTO {source} SELECT id, 'b' FROM range(5)")
        wait_until(lambda: spark_rows(spark, table) == [("a", 10), ("b", 5)], JOB_TIMEOUT, "the append",
                   every=ROWS_POLL)
        wait_until(lambda: dc.get_dynamic_table(name).within_target is True, 120.0, "the lag within target after it")
        answers = asking.result(timeout=120)
    assert "served" not in answers.values() and list(answers.values()).count("sasl") >= 2, answers

    # SUSPEND stops the job: appends stay out.
    # Through catalogd.spark.sql: a dynamic-table statement goes to the daemon.
    from catalogd.spark import sql as spark_sql

    suspended = spark_sql(spark, f"ALTER DYNAMIC TABLE {name} SUSPEND", client=dc).table
    assert suspended.state is RefreshState.SUSPENDED
    pid = dt.job_detail["pid"]
    wait_until(lambda: not process_alive(pid), 60.0, "the streaming job to stop")
    spark.sql(f"INSERT INTO {source} SELECT id, 'c' FROM range(3)")
    holds_for(lambda: spark_rows(spark, table) == [("a", 10), ("b", 5)], 8.0, "the suspended table unchanged", every=1)

    # RESUME starts it again from its checkpoint and catches up.
    assert dc.resume_dynamic_table(name).state is RefreshState.RUNNING
    wait_until(lambda: spark_rows(spark, table) == [("a", 10), ("b", 5), ("c", 3)], JOB_TIMEOUT,
               "the catch-up after RESUME", every=ROWS_POLL)

    # A killed streaming job is restarted (with backoff) and keeps the table fresh.
    detail = wait_until(lambda: dc.get_dynamic_table(name).job_detail.get("pid"), 120.0, "the resumed job's pid")
    os.killpg(detail, signal.SIGKILL)
    restarted = wait_until(lambda: (d := dc.get_dynamic_table(name).job_detail)["restarts"] >= 1
                           and d.get("pid") not in (None, detail) and d, 120.0, "the restart")
    assert restarted["pid"] != detail
    spark.sql(f"INSERT INTO {source} SELECT id, 'd' FROM range(2)")
    wait_until(lambda: ("d", 2) in spark_rows(spark, table), JOB_TIMEOUT, "an append after the restart",
               every=ROWS_POLL)
    history = dc.dynamic_table_history(name)
    assert any(r.trigger == "continuous" and r.status is RunStatus.FAILED for r in history), history
    assert any(r.error == "stopped: suspended" for r in history)

    # DROP stops the job first, then drops the table and the checkpoint.
    pid = wait_until(lambda: dc.get_dynamic_table(name).job_detail.get("pid"), 120.0, "the pid")
    checkpoint = Path(dt.job_detail["checkpoint"])
    assert cli(dtd, "sql", f"DROP DYNAMIC TABLE {name}").code == 0
    assert not process_alive(pid)
    assert not checkpoint.exists()
    assert not dc.table_exists(name)
    assert cli(dtd, "sql", f"DROP DYNAMIC TABLE IF EXISTS {name}").code == 0


def _counted_source(dc: CatalogClient, spark: Any, dt_db: str, source: str, storage: str,
                    n: int) -> tuple[str, str, str]:
    """A source of ``n`` ids and a CONTINUOUS (10 s) dynamic table counting them, after its
    first micro-batch: (source, dynamic table name, its Spark name)."""
    spark.sql(f"CREATE TABLE {dt_db}.{source} (id BIGINT) {storage}")
    spark.sql(f"INSERT INTO {dt_db}.{source} SELECT id FROM range({n})")
    name = f"main.{dt_db}.{source}_count"
    dc.create_dynamic_table(name, f"SELECT count(*) AS n FROM {dt_db}.{source}", "10 seconds")
    table = f"{dt_db}.{source}_count"
    wait_until(lambda: spark_rows(spark, table) == [(n,)], JOB_TIMEOUT, "the first micro-batch", every=ROWS_POLL)
    return f"{dt_db}.{source}", name, table


def test_a_continuous_table_over_a_hive_text_table_sees_its_appends(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str) -> None:
    # Spark reads a Hive serde table as its directory (inputFiles is the table location):
    # the change detection has to look inside it.
    source, name, table = _counted_source(dc, spark, dt_db, "lines", "STORED AS TEXTFILE", 3)
    spark.sql(f"INSERT INTO {source} SELECT id FROM range(4)")
    wait_until(lambda: spark_rows(spark, table) == [(7,)], JOB_TIMEOUT, "the append", every=ROWS_POLL)
    dc.drop_dynamic_table(name)


# ---------------------------------------------------------------- restart

def test_restart_keeps_state_and_history_catches_up_and_rederives_modes(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str, orders: str) -> None:
    every10 = f"main.{dt_db}.every10"
    hourly = f"main.{dt_db}.hourly"
    daily = f"main.{dt_db}.daily_suspended"
    query = f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds"
    dc.create_dynamic_table(hourly, query, "1 hour", options={"initialize": "on_schedule"})
    dc.create_dynamic_table(daily, query, "1 day", options={"initialize": "on_schedule"})
    dc.suspend_dynamic_table(daily)
    job = dc.refresh_dynamic_tables(daily)  # a manual refresh works while suspended
    done = dc.wait_refresh_job(job.id, timeout=JOB_TIMEOUT, poll=0.25)
    assert done.status is RunStatus.SUCCEEDED, done
    history_before = dc.dynamic_table_history(daily)
    # Created last, then the daemon stops at once: its 10-second fires are missed.
    dc.create_dynamic_table(every10, query, "10 seconds", refresh_mode="full",
                            options={"initialize": "on_schedule"})
    # The schedule fires on the 10-second marks of the clock: the first one after the stop
    # begins is missed (as a fixed 11 s from here would, without waiting out the rest of the
    # 10 s; a margin for the scheduler's clock reading).
    missed_fire = (int(time.time()) // 10 + 1) * 10
    assert dtd.stop() == 0
    wait_until(lambda: time.time() > missed_fire + 0.5, 30.0, "a 10-second fire to pass while the daemon is down")

    # The threshold moves above 1 hour: `hourly` (mode derived) becomes CONTINUOUS.
    dtd.start(threshold="2 hours")
    with CatalogClient(dtd.address, timeout=120.0) as c:
        switched = c.get_dynamic_table(hourly)
        assert switched.refresh_mode is RefreshMode.CONTINUOUS
        assert switched.state is RefreshState.RUNNING
        assert "trigger" in switched.job_detail
        c.drop_dynamic_table(hourly)  # its streaming job is not needed further

        kept = c.get_dynamic_table(daily)
        assert kept.state is RefreshState.SUSPENDED and kept.refresh_mode is RefreshMode.FULL
        assert [r.id for r in c.dynamic_table_history(daily)] == [r.id for r in history_before]

        # `every10` declared FULL: it keeps its mode and gets one catch-up run.
        caught = wait_until(lambda: [r for r in c.dynamic_table_history(every10) if r.trigger == "catch-up"], 120.0,
                            "the catch-up run")
        assert len(caught) == 1
        first = c.get_dynamic_table(every10)
        assert first.refresh_mode is RefreshMode.FULL and first.state is RefreshState.RUNNING
        assert first.job_detail["nextRefresh"]
        # ... and its schedule runs again after the restart.
        scheduled = wait_until(lambda: [r for r in c.dynamic_table_history(every10) if r.trigger == "schedule"],
                               JOB_TIMEOUT, "a scheduled run", every=0.25)
        assert scheduled[0].fired is not None
        c.drop_dynamic_table(every10)
        assert c.dynamic_table_history(daily)[0].status is RunStatus.SUCCEEDED


# ---------------------------------------------------------------- bad input

def test_bad_definitions_create_nothing(dtd: DtDaemon, dc: CatalogClient, dt_db: str, orders: str) -> None:
    name = f"main.{dt_db}.bad"
    good = f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds"
    cases = [
        (f"SELECT nope FROM {dt_db}.orders", "1 day", {}, [], "nope"),
        (f"SELECT * FROM {dt_db}.missing", "1 day", {}, [], "the dynamic table reads .*missing"),
        (good, "1 day", {"partition.fields.x.date-formatter": "yyyy"}, ["ds"], "not a partition column"),
        (good, "1 day", {"partition.fields.ds.date-formatter": "EEE"}, ["ds"], "E"),
        (good, "1 day", {}, ["zz"], "zz"),
        (good, "often", {}, [], "often"),
        (good, "1 day", {"catalogd.dt.query": "x"}, [], "reserved"),
        (good, "1 day", {"initialize": "later"}, [], "on_create or on_schedule"),
    ]
    for query, freshness, options, keys, fragment in cases:
        with pytest.raises(InvalidArgumentError, match=fragment):
            dc.create_dynamic_table(name, query, freshness, partitioned_by=keys, options=options)
        assert not dc.table_exists(name)
    with pytest.raises(InvalidArgumentError, match="divisors of 60"):
        dc.create_dynamic_table(name, good, "7 minutes", refresh_mode="full")
    result = cli(dtd, "dt", "create", name, "--freshness", "5 hours", "--query", good, "--refresh-mode", "full")
    assert result.code == 1
    assert result.stderr.strip().startswith("error: invalid-argument: freshness 5 HOUR cannot be scheduled")
    assert "1, 2, 3, 4, 6, 8, 12 or 24 HOUR" in result.stderr
    assert cli(dtd, "sql", "SELECT 1").stderr.startswith("error: unsupported: ")
    # (FRESHNESS may be left out since Flink 2.x's statements: a bad one is still refused.)
    bad_sql = cli(dtd, "sql", f"CREATE DYNAMIC TABLE {name} FRESHNESS = INTERVAL '1' FORTNIGHT AS {good}")
    assert bad_sql.code == 1 and "FORTNIGHT" in bad_sql.stderr
    with pytest.raises(TableNotFoundError):
        dc.get_dynamic_table(f"main.{dt_db}.orders")  # a table, not a dynamic table
    # IF NOT EXISTS does not pass over an ordinary table of that name.
    with pytest.raises(TableAlreadyExistsError, match="not a dynamic table"):
        dc.sql(f"CREATE DYNAMIC TABLE IF NOT EXISTS main.{dt_db}.orders FRESHNESS = INTERVAL '1' DAY AS {good}")
    assert not store_is_dynamic(dc.get_table(f"main.{dt_db}.orders").properties)
    with pytest.raises(InvalidArgumentError, match="catalogd's own"):
        dc.alter_table(f"main.{dt_db}.orders", set_properties={"catalogd.dt.freshness": "1 SECOND"})
    with pytest.raises(UnsupportedError):
        dc.create_dynamic_table("scratch.default.x", "SELECT 1 AS a", "1 day")
    assert not dc.table_exists(name)


def test_a_recreated_source_is_analysed_afresh(dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str) -> None:
    source = f"{dt_db}.src"
    spark.sql(f"CREATE TABLE {source} (a BIGINT) USING parquet")
    on_schedule = {"initialize": "on_schedule"}
    first = dc.create_dynamic_table(f"main.{dt_db}.first", f"SELECT a FROM {source}", "1 day", options=on_schedule)
    assert [c.name for c in first.columns] == ["a"]
    # The analyzer's warm session saw the old table; the new column must be found.
    spark.sql(f"DROP TABLE {source}")
    spark.sql(f"CREATE TABLE {source} (a BIGINT, b STRING) USING parquet")
    second = dc.create_dynamic_table(f"main.{dt_db}.second", f"SELECT a, b FROM {source}", "1 day",
                                     options=on_schedule)
    assert [(c.name, c.type) for c in second.columns] == [("a", "bigint"), ("b", "string")]


def test_rest_errors_and_openapi(dtd: DtDaemon, dt_db: str) -> None:
    status, doc = rest(dtd, "GET", "/v3/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    assert "/v3/dynamic-tables/refresh" in doc["paths"] and "/v3/dynamic-tables/refresh/{jobId}" in doc["paths"]
    status, body = rest(dtd, "POST", "/v3/dynamic-tables/refresh", {"tables": []})
    assert status == 400 and body["error"]["kind"] == "invalid-argument"
    status, body = rest(dtd, "POST", "/v3/dynamic-tables/refresh", {"tables": [f"main.{dt_db}.none"]})
    assert status == 404 and body["error"]["kind"] == "not-found"
    status, body = rest(dtd, "POST", "/v3/dynamic-tables/refresh", {"tables": ["x"], "when": "now"})
    assert status == 400 and "when" in body["error"]["message"]
    status, body = rest(dtd, "GET", "/v3/dynamic-tables/refresh/feedbeef")
    assert status == 404
    # Settings that load code or move the job elsewhere are not for an unauthenticated port.
    for key in ("spark.jars", "spark.sql.extensions", "spark.driver.extraJavaOptions",
                "spark.hadoop.hive.metastore.uris"):
        status, body = rest(dtd, "POST", "/v3/dynamic-tables/refresh",
                            {"tables": [f"main.{dt_db}.none"], "configuration": {key: "x"}})
        assert status == 400 and key in body["error"]["message"], body
    request = urllib.request.Request(dtd.http + "/v3/dynamic-tables/refresh", data=b"{nope", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=10)
    assert e.value.code == 400
    connection = http.client.HTTPConnection("127.0.0.1", dtd.http_port, timeout=10)
    connection.putrequest("POST", "/v3/dynamic-tables/refresh")
    connection.putheader("Content-Length", "lots")
    connection.endheaders()
    answer = connection.getresponse()
    assert answer.status == 400 and "Content-Length" in json.loads(answer.read())["error"]["message"]
    connection.close()


def test_a_refresh_with_wait_answers_once_its_run_ended(dtd: DtDaemon, dc: CatalogClient, dt_db: str,
                                                         orders: str) -> None:
    """``?wait=``: a long poll woken by the run's end (one Spark job for the whole test)."""
    name = f"main.{dt_db}.waited"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {orders} GROUP BY ds", "1 day",
                            options={"initialize": "on_schedule"})
    refresh = "/v3/dynamic-tables/refresh"
    # A bad wait is refused before anything starts, on both routes.
    for wait in ("-1", "soon", "nan"):
        status, body = rest(dtd, "POST", f"{refresh}?wait={wait}", {"tables": [name]})
        assert status == 400 and body["error"]["kind"] == "invalid-argument", body
        assert "wait must be a number of seconds" in body["error"]["message"]
    status, body = rest(dtd, "GET", f"{refresh}/feedbeef?wait=-1")
    assert status == 400 and body["error"]["kind"] == "invalid-argument", body
    assert dc.dynamic_table_history(name) == []
    # A wait that lapses answers the job as it is: a spark-submit job takes longer than 0.2 s.
    status, lapsed = rest(dtd, "POST", f"{refresh}?wait=0.2", {"tables": [name]})
    assert status == 200, lapsed
    assert lapsed["status"] in ("PENDING", "RUNNING") and lapsed["runs"][0]["ended"] is None, lapsed
    # A waited request that joins the run answers once it ended: SUCCEEDED with its end, never without.
    status, done = rest(dtd, "POST", f"{refresh}?wait={JOB_TIMEOUT:.0f}", {"tables": [name]},
                        timeout=JOB_TIMEOUT + 30)
    assert status == 200, done
    assert done["runs"][0]["id"] == lapsed["runs"][0]["id"]
    assert done["status"] == "SUCCEEDED" and done["runs"][0]["ended"] is not None, done
    # The job is over: a waited GET answers at once (a wait above the maximum is cut, not refused).
    status, again = rest(dtd, "GET", f"{refresh}/{lapsed['jobId']}?wait=100000", timeout=JOB_TIMEOUT + 30)
    assert status == 200 and again["status"] == "SUCCEEDED" and again["runs"][0]["ended"] is not None, again
    assert [r.status for r in dc.dynamic_table_history(name)] == [RunStatus.SUCCEEDED]
    # The Thrift long poll: the finished job at once.
    assert dc.get_refresh_job(lapsed["jobId"], wait=30.0).status is RunStatus.SUCCEEDED


def test_a_refresh_setting_outside_the_allowlist_is_refused_by_name_and_runs_nothing(
        dtd: DtDaemon, dc: CatalogClient, dt_db: str, orders: str, unique_name: Callable[[str], str]) -> None:
    name = f"main.{dt_db}.tuned"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {orders} GROUP BY ds", "1 day",
                            options={"initialize": "on_schedule"})
    # A marker in every refused value: had any reached a job, it would be in a properties file.
    marker = unique_name("refused")
    # Each key was let through by the old prefix check (spark.executor.*, spark.sql.*): they
    # load code or decide where data is committed.
    for key in ("spark.executor.plugins", "spark.sql.queryExecutionListeners",
                "spark.sql.streaming.streamingQueryListeners", "spark.sql.sources.commitProtocolClass",
                "spark.executor.resource.gpu.discoveryScript", "spark.sql.streaming.checkpointLocation"):
        status, body = rest(dtd, "POST", "/v3/dynamic-tables/refresh",
                            {"tables": [name], "configuration": {"spark.executor.memory": "512m", key: marker}})
        assert status == 400, body
        assert body["error"]["kind"] == "invalid-argument" and f"key {key} may not be set" in body["error"]["message"]
    # The same check on the Thrift path (dt refresh --conf).
    refused = cli(dtd, "dt", "refresh", name, "--conf", "spark.sql.shuffle.partitions=4",
                  "--conf", f"spark.executor.plugins={marker}")
    assert refused.code == 1, refused
    # Only the refused key is named as refused; the allowed one beside it is not.
    assert "invalid-argument" in refused.stderr and "key spark.executor.plugins may not be set" in refused.stderr

    def nothing_ran() -> bool:
        written = [p for p in (dtd.root / "data").rglob("*.properties") if marker in p.read_text(errors="replace")]
        return not written and dc.dynamic_table_history(name) == [] and dc.get_dynamic_table(name).last_refresh is None

    holds_for(nothing_ran, 3.0, "no refresh of the refused requests")


def _group_alive(pgid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def test_a_daemon_killed_with_sigkill_takes_its_streaming_job_along(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str) -> None:
    source, name, table = _counted_source(dc, spark, dt_db, "clicks", "USING parquet", 4)
    pid = wait_until(lambda: dc.get_dynamic_table(name).job_detail.get("pid"), 120.0, "the job's pid")

    dtd.kill()
    # Two streaming jobs on one table after the restart would be wrong: the old one dies with the daemon.
    wait_until(lambda: not _group_alive(pid), 60.0, "the orphaned job to die")

    dtd.start()
    with CatalogClient(dtd.address, timeout=120.0) as c:
        restarted = wait_until(lambda: c.get_dynamic_table(name).job_detail.get("pid"), 120.0,
                               "the job to start again")
        assert restarted != pid
        spark.sql(f"INSERT INTO {source} SELECT id FROM range(3)")
        wait_until(lambda: spark_rows(spark, table) == [(7,)], JOB_TIMEOUT, "an append after the restart",
                   every=ROWS_POLL)
        history = c.dynamic_table_history(name)
        killed = [r for r in history if r.error == "the daemon stopped during the run"]
        assert len(killed) == 1 and killed[0].status is RunStatus.FAILED

        # A file rewritten in place (same name, other rows: an outside tool) is a change too.
        victim = urllib.parse.urlparse(sorted(spark.table(source).inputFiles())[0]).path
        before = spark.read.parquet(f"file://{victim}").count()
        scratch = Path(victim).parent.parent / f"_rewrite_{dt_db}"
        spark.range(100, 105).coalesce(1).write.parquet(f"file://{scratch}")
        os.replace(next(scratch.glob("part-*.parquet")), victim)
        Path(victim).with_name(f".{Path(victim).name}.crc").unlink(missing_ok=True)  # Hadoop's checksum
        shutil.rmtree(scratch)
        wait_until(lambda: spark_rows(spark, table) == [(7 - before + 5,)], JOB_TIMEOUT, "the rewritten file",
                   every=ROWS_POLL)
        c.drop_dynamic_table(name)
    assert not _group_alive(restarted)


def test_an_initial_refresh_cut_off_by_sigkill_runs_again_at_the_next_start(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str, orders: str) -> None:
    name = f"main.{dt_db}.first_day"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds", "1 day")
    wait_until(lambda: any(r.trigger == "initial" and r.status is RunStatus.RUNNING
                           for r in dc.dynamic_table_history(name)), 120.0, "the initial run to start")

    dtd.kill()
    assert spark_rows(spark, f"{dt_db}.first_day") == []

    dtd.start()
    with CatalogClient(dtd.address, timeout=120.0) as c:
        done = wait_until(lambda: [r for r in c.dynamic_table_history(name)
                                   if r.trigger == "initial" and r.status.finished and r.error is None],
                          JOB_TIMEOUT, "the initial run again", every=0.25)
        assert done[0].status is RunStatus.SUCCEEDED, done
        cut = [r for r in c.dynamic_table_history(name) if r.error == "the daemon stopped during the run"]
        assert len(cut) == 1 and cut[0].trigger == "initial" and cut[0].status is RunStatus.FAILED
        assert [r[0] for r in spark_rows(spark, f"{dt_db}.first_day")] == ["2024-02-29", "2024-03-01", "2024-03-02"]
        c.drop_dynamic_table(name)


def test_a_live_reload_adds_and_removes_the_catalogs_whose_tables_it_drives(
        dtd: DtDaemon, dc: CatalogClient, dt_db: str, orders: str, daemon_factory: Callable[..., Daemon],
        run_cli: Callable[..., CliResult]) -> None:
    name = f"main.{dt_db}.reloaded"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds", "1 day",
                            options={"initialize": "on_schedule"})
    dc.suspend_dynamic_table(name)  # `dtd` keeps still; the other daemon refreshes it by hand
    # `dtd`'s stage key: it signed the table's definition, and a daemon runs only definitions
    # signed with its deployment's key (staging.secret).
    key = (dtd.root / "data" / "secrets" / "stage.key").read_text().strip()
    other = daemon_factory(name="dt-reload", catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                           extra={"spark": SPARK, "staging": {"secret": key}})
    main = {"name": "main", "type": "hive", "connection": {"hive.metastore.uris": dtd.metastore},
            "metastore-key-file": str(dtd.key_file)}

    def reload(catalogs: list[dict[str, Any]]) -> None:
        config = yaml.safe_load(other.config_path.read_text())
        config["catalogs"] = catalogs
        other.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        done = run_cli("config", "reload", server=other.address)
        assert done.code == 0, done.stderr

    with CatalogClient(other.address, timeout=120.0) as c:
        reload([{"name": "scratch", "type": "memory", "default": True}, main])
        # Driven at once, not at the next start: its state came from HMS, a refresh runs here.
        assert c.get_dynamic_table(name).state is RefreshState.SUSPENDED
        done = c.wait_refresh_job(c.refresh_dynamic_tables(name).id, timeout=JOB_TIMEOUT, poll=0.25)
        assert done.status is RunStatus.SUCCEEDED, done
        assert done.runs[0].trigger == "manual"

        # Replaced (another default database): let go, then driven from the new catalog.
        reload([{"name": "scratch", "type": "memory", "default": True}, {**main, "default-database": dt_db}])
        assert other.log_path.read_text().count("no longer driven from it") == 1
        assert c.resume_dynamic_table(name).state is RefreshState.RUNNING  # only a driven table resumes
        assert c.suspend_dynamic_table(name).state is RefreshState.SUSPENDED

        reload([{"name": "scratch", "type": "memory", "default": True}])
        with pytest.raises(CatalogNotFoundError):
            c.refresh_dynamic_tables(name)
        assert other.log_path.read_text().count("no longer driven from it") == 2
    assert [r.status for r in dc.dynamic_table_history(name)] == [RunStatus.SUCCEEDED]


def test_alter_changes_schedule_and_mode(dtd: DtDaemon, dc: CatalogClient, dt_db: str, orders: str) -> None:
    name = f"main.{dt_db}.altered"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds", "1 day",
                            options={"initialize": "on_schedule"})
    hourly = json.loads(cli(dtd, "dt", "alter", name, "--freshness", "2 hours", "--json").stdout)
    assert (hourly["freshness"], hourly["refresh_mode"], hourly["schedule"]) == ("2 HOUR", "FULL", "0 0 0/2 * * ? *")
    assert hourly["declared_mode"] is None
    # 2 hours >= the 30 min threshold stays FULL; declaring CONTINUOUS starts a streaming job.
    suspended = json.loads(cli(dtd, "--json", "dt", "suspend", name).stdout)
    assert suspended["state"] == "SUSPENDED"
    switched = json.loads(cli(dtd, "--json", "dt", "alter", name, "--refresh-mode", "continuous").stdout)
    assert (switched["refresh_mode"], switched["declared_mode"], switched["state"]) == (
        "CONTINUOUS", "CONTINUOUS", "SUSPENDED")
    assert switched["schedule"] is None and switched["job_detail"]["trigger"] == "3600 seconds"
    # A FULL refresh needs a freshness a schedule can keep: refused, nothing changed.
    refused = cli(dtd, "dt", "alter", name, "--refresh-mode", "full", "--freshness", "7 hours")
    assert refused.code == 1 and "1, 2, 3, 4, 6, 8, 12 or 24 HOUR" in refused.stderr
    assert dc.get_dynamic_table(name).freshness == "2 HOUR"
    usage = cli(dtd, "dt", "alter", name)
    assert usage.code == 2 and usage.stderr.startswith("error: usage: ")
    assert cli(dtd, "dt", "drop", name).code == 0


def test_drop_during_a_refresh_stops_it_and_nothing_comes_back(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str, orders: str) -> None:
    name = f"main.{dt_db}.short_lived"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds", "1 day")
    # The initial refresh runs; drop once its Spark session is up.
    wait_until(lambda: any(r.application_id and r.status is RunStatus.RUNNING
                           for r in dc.dynamic_table_history(name)), JOB_TIMEOUT, "the initial run's Spark session")
    dropped = cli(dtd, "dt", "drop", name, timeout=120)
    assert dropped.code == 0, dropped.stderr
    assert not dc.table_exists(name)
    # The stopped job neither commits nor leaves a stage that could.
    holds_for(lambda: not dc.table_exists(name), 10.0, "the dropped table gone", every=1)
    live = [st for st in dc.list_stages("main")
            if st.target_name == name and st.state.value not in ("ABORTED", "COMMITTED")]
    assert live == []
    # The name is free for a new dynamic table.
    again = dc.create_dynamic_table(name, f"SELECT ds FROM {dt_db}.orders", "1 day",
                                    options={"initialize": "on_schedule"})
    assert [c.name for c in again.columns] == ["ds"] and again.last_refresh is None
    dc.drop_dynamic_table(name)


# ---------------------------------------------------------------- through the HMS endpoint

def test_the_hms_endpoint_protects_a_dynamic_table_and_drops_it_as_dt_drop_does(
        dtd: DtDaemon, dc: CatalogClient, spark: Any, dt_db: str, orders: str) -> None:
    from hmsclient import hmsclient

    from catalogd.hive_idl import ttypes

    name = f"main.{dt_db}.guarded"
    dc.create_dynamic_table(name, f"SELECT ds, count(*) AS n FROM {dt_db}.orders GROUP BY ds", "1 day",
                            options={"initialize": "on_schedule"})
    # Spark (on the session daemon's endpoint) cannot change its metadata: catalogd refreshes it.
    # (Files are another matter: an INSERT into an unpartitioned table makes no metastore call.)
    with pytest.raises(Exception, match="dynamic table"):
        spark.sql(f"ALTER TABLE {dt_db}.guarded ADD COLUMNS (extra STRING)")
    with pytest.raises(Exception, match="dynamic table"):
        spark.sql(f"ALTER TABLE {dt_db}.guarded SET TBLPROPERTIES ('a' = 'b')")
    assert "a" not in dc.get_table(name).properties
    # Dropped through the endpoint of the daemon that drives it: dropped as `dt drop` is.
    config = yaml.safe_load((dtd.root / f"dtd-{dtd.starts}.yaml").read_text())
    with hmsclient.HMSClient(host="127.0.0.1", port=config["server"]["hms-port"]) as hms:
        table = hms.get_table(dt_db, "guarded")
        table.parameters = {k: v for k, v in table.parameters.items() if not k.startswith("catalogd.")}
        with pytest.raises(ttypes.MetaException, match="dynamic table"):
            hms.alter_table(dt_db, "guarded", table)
        hms.drop_table(dt_db, "guarded", True)
    assert not dc.table_exists(name)
    assert name not in {f"main.{dt_db}.{t.name}" for t in dc.list_dynamic_tables("main", dt_db)}
    assert "dropped" in dtd.log()[-20000:]
