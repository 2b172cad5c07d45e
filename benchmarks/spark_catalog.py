#!/usr/bin/env python3
"""The Spark catalog plugin versus Spark on catalogd's HMS endpoint alone (issue 32).

One run starts a real ``catalogd serve`` daemon (one embedded hive catalog ``main``, free
ports, a temporary data dir; see ``catalog_ops.py``) and one local SparkSession (``local[2]``,
2g driver) configured as ``catalogd spark-conf main`` configures it: the plugin's jar,
``spark.sql.catalog.main=catalogd.spark.CatalogdCatalog`` (the default catalog) and the session
catalog ``spark_catalog`` on catalogd's HMS endpoint. ``main.bench.x`` is therefore the plugin's
name of a table and ``spark_catalog.bench.x`` Spark's own Hive path to the same database. It
measures three things:

1. **CTAS wall time.** For every row count in ``--rows`` (unpartitioned), ``--repeat`` times
   each way, alternating which side goes first:

   * plugin: ``spark.sql("CREATE TABLE main.bench.t_N USING parquet AS SELECT id, id * 2 AS amount,
     cast(id AS string) AS name FROM range(rows)")`` (Spark plans AtomicCreateTableAsSelect: the
     plugin begins a catalogd stage, Spark's file writer fills the hidden staging table, the
     daemon renames it into place);
   * plain: the same rows by ``df.write.format("hive").option("fileFormat", "parquet")
     .saveAsTable("spark_catalog.bench.p_N")`` (Spark's own, non-atomic Hive CTAS through the
     endpoint).

   Both tables are row-counted (outside the timing) and dropped with PURGE after each round.
   Reported: the medians, plugin/plain (goal: at most 1.05).

2. **Planning.** A table of ``--partitions`` partitions (parquet, one int key) is made once;
   then ``--queries`` queries ``SELECT count(*), sum(v) FROM <t> WHERE p = k`` (k varying) are
   planned on each side, in alternating blocks of 10: ``spark.sql(q)`` (analysis) plus
   ``df._jdf.queryExecution().executedPlan()`` (optimization, partition pruning, physical
   planning), nothing run. ``<t>`` is ``main.bench.parts`` (the plugin) or
   ``spark_catalog.bench.parts`` (the endpoint). Reported: total and p50/p90 per query,
   plugin/endpoint of the totals (goal: at most 1.0), and, for where the plugin's time goes,
   the p50 of the catalogd calls it makes per query (``getTable``, ``listPartitions`` of the
   whole table), timed from Python's client. ``--discovery-threshold N`` sets Spark's
   ``spark.sql.sources.parallelPartitionDiscovery.threshold`` in the plugin's session first
   (a file index over more paths than that lists them with a Spark job): how much of the
   plugin's planning is that listing.

3. **A stage's begin + commit as the driver sees it.** The plugin's ``beginStage`` and
   ``commitStage`` Thrift calls, made by catalogd's Python client the way the plugin makes them
   (same daemon, same RPCs and arguments: a CREATE of a three-column table), timed together;
   ``--stage-iterations`` rounds after a few untimed ones; p50/p90. For scale, the end-to-end
   p50 of a 1-row CTAS through the plugin versus a 1-row plain saveAsTable.

    .venv/bin/python benchmarks/spark_catalog.py [--rows 1000000,5000000] [--repeat 3] [--queries 100]
                                                 [--partitions 200] [--stage-iterations 30]
                                                 [--discovery-threshold N] [--output FILE]

Prints one JSON document (and writes it to FILE when --output is given). Spark and the daemon
are shut down at the end, also when something fails. The default run takes several minutes on
a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The sibling benchmarks (benchmarks/ is on sys.path when this file is run as a script).
from catalog_ops import CATALOG, DATABASE, Daemon, percentile, report, tear_down
from ctas import row_counts, start_spark
from pyspark.errors import PySparkException

from catalogd.client import CatalogClient
from catalogd.model import StageState
from catalogd.spark.catalogs import plugin_conf

CTAS_GOAL = 1.05
PLANNING_GOAL = 1.0
WARMUP_ROWS = 10_000
BLOCK = 10
STAGE_WARMUP = 5
SMALL_CTAS_ROUNDS = 10
DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
COLUMNS = "id, id * 2 AS amount, cast(id AS string) AS name"


def wall(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ms(seconds: list[float], q: float) -> float:
    return round(percentile(sorted(s * 1000 for s in seconds), q), 2)


def endpoint_session(spark: Any) -> Any:
    """A session of the same application whose current catalog is Spark's session catalog
    (catalogd's HMS endpoint), as in a job left unmodified: ``DataFrameWriter.saveAsTable``
    takes a session-catalog table only while that catalog is the current one."""
    hms = spark.newSession()
    hms.catalog.setCurrentCatalog("spark_catalog")
    hms.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    return hms


# ---------------------------------------------------------------- 1. CTAS


class Ctas:
    """One source written both ways into fresh tables of the database ``bench``."""

    def __init__(self, spark: Any, hms: Any) -> None:
        self.spark = spark
        self.hms = hms
        self.serial = 0

    def plugin(self, rows: int) -> str:
        name = f"{CATALOG}.{DATABASE}.t_{self.serial}"
        self.spark.sql(f"CREATE TABLE {name} USING parquet AS SELECT {COLUMNS} FROM range({rows})")
        return name

    def plain(self, rows: int) -> str:
        name = f"spark_catalog.{DATABASE}.p_{self.serial}"
        df = self.hms.range(rows).selectExpr(*COLUMNS.split(", "))
        df.write.format("hive").option("fileFormat", "parquet").saveAsTable(name)
        return name

    def check(self, name: str, rows: int) -> None:
        count = self.spark.table(name).count()
        if count != rows:
            raise RuntimeError(f"{name} holds {count} rows, expected {rows}")

    def one_round(self, rows: int, plugin_first: bool) -> tuple[float, float]:
        """One write each way (timed), checked and dropped afterwards: (plugin s, plain s)."""
        self.serial += 1
        names: dict[str, str] = {}
        times: dict[str, float] = {}

        def run_plugin() -> None:
            names["plugin"] = self.plugin(rows)

        def run_plain() -> None:
            names["plain"] = self.plain(rows)

        order = [("plugin", run_plugin), ("plain", run_plain)]
        if not plugin_first:
            order.reverse()
        try:
            for side, fn in order:
                times[side] = wall(fn)
            for name in names.values():
                self.check(name, rows)
        finally:
            for name in names.values():
                self.spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
        return times["plugin"], times["plain"]

    def case(self, rows: int, repeat: int, index: int) -> dict[str, Any]:
        plugin_s: list[float] = []
        plain_s: list[float] = []
        for rep in range(repeat):
            a, p = self.one_round(rows, plugin_first=(rep + index) % 2 == 0)
            plugin_s.append(a)
            plain_s.append(p)
        plugin_med, plain_med = statistics.median(plugin_s), statistics.median(plain_s)
        ratio = plugin_med / plain_med
        return {
            "rows": rows,
            "plugin_s": round(plugin_med, 3),
            "plain_s": round(plain_med, 3),
            "ratio": round(ratio, 3),
            "goal": CTAS_GOAL,
            "met": ratio <= CTAS_GOAL,
            "plugin_runs_s": [round(s, 3) for s in plugin_s],
            "plain_runs_s": [round(s, 3) for s in plain_s],
            "rows_checked": True,
        }


# ---------------------------------------------------------------- 2. planning


def planning(spark: Any, hms: Any, client: CatalogClient, partitions: int, queries: int) -> dict[str, Any]:
    table = f"{DATABASE}.parts"
    rows = partitions * 100
    spark.sql(f"CREATE TABLE {CATALOG}.{table} USING parquet PARTITIONED BY (p) AS "
              f"SELECT id, id * 2 AS v, CAST(id % {partitions} AS INT) AS p FROM range({rows})")
    listed = client.list_partitions(f"{CATALOG}.{table}")
    if len(listed) != partitions:
        raise RuntimeError(f"{CATALOG}.{table} has {len(listed)} partitions, expected {partitions}")
    sides = {"plugin": (spark, f"{CATALOG}.{table}"), "endpoint": (hms, f"spark_catalog.{table}")}

    def plan(session: Any, name: str, k: int) -> float:
        query = f"SELECT count(*), sum(v) FROM {name} WHERE p = {k}"
        start = time.perf_counter()
        df = session.sql(query)
        df._jdf.queryExecution().executedPlan()
        return time.perf_counter() - start

    for session, name in sides.values():  # untimed: class loading, first connections, the file status cache
        for k in range(3):
            plan(session, name, k)
        session.sql(f"SELECT count(*) FROM {name} WHERE p = 1").collect()
    samples: dict[str, list[float]] = {side: [] for side in sides}
    for block in range(0, queries, BLOCK):
        order = list(sides.items()) if (block // BLOCK) % 2 == 0 else list(reversed(sides.items()))
        for side, (session, name) in order:
            for i in range(block, min(block + BLOCK, queries)):
                samples[side].append(plan(session, name, (i * 7) % partitions))

    # Where the plugin's planning time goes: its catalogd calls per query (loadTable's getTable;
    # the file index's listPartitions of every partition), timed from Python's client.
    rpc: dict[str, list[float]] = {"getTable": [], "listPartitions": []}
    for _ in range(20):
        rpc["getTable"].append(wall(lambda: client.get_table(f"{CATALOG}.{table}")))
        rpc["listPartitions"].append(wall(lambda: client.list_partitions(f"{CATALOG}.{table}")))
    plugin_total, endpoint_total = sum(samples["plugin"]), sum(samples["endpoint"])
    ratio = plugin_total / endpoint_total
    spark.sql(f"DROP TABLE {CATALOG}.{table} PURGE")
    return {
        "partitions": partitions,
        "queries": queries,
        "query": "SELECT count(*), sum(v) FROM <t> WHERE p = k  (planned: spark.sql + executedPlan)",
        "plugin_total_s": round(plugin_total, 3),
        "endpoint_total_s": round(endpoint_total, 3),
        "plugin_p50_ms": ms(samples["plugin"], 0.5),
        "plugin_p90_ms": ms(samples["plugin"], 0.9),
        "endpoint_p50_ms": ms(samples["endpoint"], 0.5),
        "endpoint_p90_ms": ms(samples["endpoint"], 0.9),
        "ratio": round(ratio, 3),
        "goal": PLANNING_GOAL,
        "met": ratio <= PLANNING_GOAL,
        "plugin_rpc_p50_ms": {call: ms(times, 0.5) for call, times in rpc.items()},
    }


# ---------------------------------------------------------------- 3. a stage from the driver


def stage_latency(spark: Any, hms: Any, client: CatalogClient, iterations: int) -> dict[str, Any]:
    begin_commit: list[float] = []
    begins: list[float] = []
    commits: list[float] = []
    for i in range(STAGE_WARMUP + iterations):
        target = f"{CATALOG}.{DATABASE}.stage_{i}"
        start = time.perf_counter()
        stage = client.begin_stage(target, "id bigint, amount bigint, name string", format="parquet",
                                   purpose="create")
        begun = time.perf_counter()
        done = client.commit_stage(stage.id)
        end = time.perf_counter()
        if done.state is not StageState.COMMITTED:
            raise RuntimeError(f"stage {stage.id} ended {done.state}: {done.message}")
        client.drop_table(target, purge=True)
        if i >= STAGE_WARMUP:
            begin_commit.append(end - start)
            begins.append(begun - start)
            commits.append(end - begun)

    small: dict[str, list[float]] = {"plugin": [], "plain": []}
    ctas = Ctas(spark, hms)
    for i in range(SMALL_CTAS_ROUNDS + 2):
        a, p = ctas.one_round(1, plugin_first=i % 2 == 0)
        if i >= 2:
            small["plugin"].append(a)
            small["plain"].append(p)
    return {
        "measured": "beginStage + commitStage of a CREATE stage, by catalogd's Python client (the RPCs the "
                    "plugin's driver makes), no rows written",
        "iterations": iterations,
        "begin_commit_p50_ms": ms(begin_commit, 0.5),
        "begin_commit_p90_ms": ms(begin_commit, 0.9),
        "begin_p50_ms": ms(begins, 0.5),
        "commit_p50_ms": ms(commits, 0.5),
        "one_row_ctas_plugin_p50_ms": ms(small["plugin"], 0.5),
        "one_row_ctas_plain_p50_ms": ms(small["plain"], 0.5),
    }


# ---------------------------------------------------------------- run


def run(rows_list: list[int], repeat: int, queries: int, partitions: int, stage_iterations: int,
        discovery_threshold: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-spark-catalog-") as tmp:
        daemon = Daemon(Path(tmp))
        client: CatalogClient | None = None
        spark: Any = None
        try:
            started = time.monotonic()
            daemon.start()
            startup_s = time.monotonic() - started
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=600)
            info = client.get_catalog(CATALOG)
            if not info.hms_endpoint:
                raise RuntimeError(f"catalog {CATALOG} reports no HMS endpoint")
            settings = plugin_conf(client, info)
            client.create_database(f"{CATALOG}.{DATABASE}", comment="catalogd Spark catalog benchmark")

            started = time.monotonic()
            local_dir = Path(tmp) / "spark-local"
            local_dir.mkdir()
            spark = start_spark(settings, local_dir)
            spark_startup_s = time.monotonic() - started

            hms = endpoint_session(spark)
            ctas = Ctas(spark, hms)
            ctas.one_round(WARMUP_ROWS, plugin_first=True)  # untimed: JIT, class loading, connections
            cases = [ctas.case(rows, repeat, index) for index, rows in enumerate(rows_list)]
            if discovery_threshold is not None:
                spark.conf.set(DISCOVERY_THRESHOLD, str(discovery_threshold))
            plans = planning(spark, hms, client, partitions, queries)
            plans["plugin_session_discovery_threshold"] = spark.conf.get(DISCOVERY_THRESHOLD, None)
            stage = stage_latency(spark, hms, client, stage_iterations)
            leftovers = client.list_tables(f"{CATALOG}.{DATABASE}")
            if leftovers:
                raise RuntimeError(f"tables left behind in {CATALOG}.{DATABASE}: {leftovers}")
            return {
                "benchmark": "spark_catalog",
                "repeat": repeat,
                "setup": {
                    "hms_endpoint": info.hms_endpoint,
                    "spark": spark.version,
                    "spark_master": "local[2]",
                    "default_catalog": settings.get("spark.sql.defaultCatalog"),
                    "daemon_startup_s": round(startup_s, 1),
                    "spark_startup_s": round(spark_startup_s, 1),
                },
                "machine": {
                    "cpu_count": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "machine": platform.machine(),
                },
                "ctas": cases,
                "planning": plans,
                "stage": stage,
            }
        finally:
            tear_down(daemon, spark, (client,))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=row_counts, default=[1_000_000, 5_000_000],
                        help="comma-separated row counts (default 1000000,5000000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed CTAS per row count and side")
    parser.add_argument("--queries", type=int, default=100, help="queries planned per side")
    parser.add_argument("--partitions", type=int, default=200, help="partitions of the planned table")
    parser.add_argument("--stage-iterations", type=int, default=30, help="timed stage begin + commit rounds")
    parser.add_argument("--discovery-threshold", type=int, default=None,
                        help="spark.sql.sources.parallelPartitionDiscovery.threshold in the plugin's session "
                             "(default: Spark's, 32)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    if min(args.repeat, args.queries, args.partitions, args.stage_iterations) < 1:
        parser.error("--repeat, --queries, --partitions and --stage-iterations must be at least 1")
    return report(lambda: run(args.rows, args.repeat, args.queries, args.partitions, args.stage_iterations,
                              args.discovery_threshold),
                  args.output, (PySparkException,))


if __name__ == "__main__":
    sys.exit(main())
