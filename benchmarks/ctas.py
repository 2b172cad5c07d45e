#!/usr/bin/env python3
"""Atomic CTAS through catalogd versus Spark's own (non-atomic) CTAS, and the cost of a commit.

One run starts a real ``catalogd serve`` daemon (one embedded hive catalog, free
ports, a temporary data dir; see ``catalog_ops.py``) and one local SparkSession
(``local[2]``, 2g driver) on that catalog's metastore, then measures two things:

1. **CTAS wall time.** For every row count in ``--rows``, unpartitioned and
   partitioned by ``ds`` (10 values), the same source
   ``spark.range(rows).selectExpr("id", "id * 2 AS amount", "cast(id AS string) AS name"[, ds])``
   is written ``--repeat`` times each way:

   * atomic: ``catalogd.spark.atomic_ctas(spark, "main.bench.t_atomic_N", df, ...)`` (begin a
     stage, Spark writes the hidden staging table, the daemon publishes it with one rename);
   * plain: ``df.write.format("hive").option("fileFormat", "parquet")[.partitionBy("ds")]``
     ``.saveAsTable("bench.t_plain_N")``.

   Each timing is the whole call's wall time. The two sides alternate which goes
   first; both tables are row-counted (outside the timing) and dropped with PURGE
   after every repetition. One small untimed write of each kind warms the JVM up
   first. Reported per case: the median seconds of each side and atomic/plain
   (target: at most 1.10), plus the median time of each daemon RPC inside
   ``atomic_ctas`` (the rest is the Spark job).

2. **Commit latency.** ``client.commit_stage`` of a freshly begun, empty CREATE
   stage (only the commit is timed) versus the bare metastore call it stands for: an
   ``alter_table`` rename of an equivalent one-column table, sent straight to the
   same HMS over one persistent Thrift connection. ``--commit-iterations`` timed
   rounds (after a few untimed ones), alternating sides; p50/p90 of each and the
   ratio of the p50s (target: at most 1.2).

    .venv/bin/python benchmarks/ctas.py [--rows 1000000,5000000] [--repeat 3] [--commit-iterations 50]
                                        [--output FILE]

Prints one JSON document (and writes it to FILE when --output is given). Spark and
the daemon (with its metastore) are shut down at the end, also when something fails.
The default run takes several minutes on a 2-core machine.
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

# The sibling benchmark (benchmarks/ is on sys.path when this file is run as a script).
from catalog_ops import CATALOG, DATABASE, Daemon, DirectHms, percentile, report, tear_down
from pyspark.errors import PySparkException

from catalogd.client import CatalogClient
from catalogd.model import StageState
from catalogd.spark import atomic_ctas, spark_conf_for

CTAS_TARGET = 1.10
COMMIT_TARGET = 1.2
COMMIT_WARMUP = 5
WARMUP_ROWS = 10_000
PARTITIONS = 10
DS_EXPR = f"concat('2024-03-', lpad(cast(id % {PARTITIONS} + 1 AS string), 2, '0')) AS ds"


# ---------------------------------------------------------------- helpers


class TimedClient:
    """A CatalogClient that adds up the wall time spent in each of its public methods."""

    def __init__(self, client: CatalogClient) -> None:
        self._client = client
        self.spent: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - start

        return timed


def wall(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ms_summary(samples_ns: list[int]) -> tuple[float, float]:
    ms = sorted(s / 1e6 for s in samples_ns)
    return round(percentile(ms, 0.50), 3), round(percentile(ms, 0.90), 3)


def start_spark(metastore_settings: dict[str, str], local_dir: Path) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("catalogd-bench-ctas")
        .enableHiveSupport()
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.local.dir", str(local_dir))
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in metastore_settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    return spark


# ---------------------------------------------------------------- CTAS


class Ctas:
    """Writes one source both ways into fresh tables of ``main.bench``."""

    def __init__(self, spark: Any, client: CatalogClient) -> None:
        self.spark = spark
        self.client = client
        self.serial = 0

    def source(self, rows: int, partitioned: bool) -> Any:
        columns = ["id", "id * 2 AS amount", "cast(id AS string) AS name"]
        return self.spark.range(rows).selectExpr(*columns, *([DS_EXPR] if partitioned else []))

    def atomic(self, df: Any, partitioned: bool, client: Any) -> str:
        name = f"t_atomic_{self.serial}"
        stage = atomic_ctas(self.spark, f"{CATALOG}.{DATABASE}.{name}", df,
                            partition_by=["ds"] if partitioned else None, format="parquet", client=client)
        if stage is None or stage.state is not StageState.COMMITTED:
            raise RuntimeError(f"atomic_ctas of {name} did not commit: {stage}")
        return name

    def plain(self, df: Any, partitioned: bool) -> str:
        name = f"t_plain_{self.serial}"
        self.spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
        writer = df.write.format("hive").option("fileFormat", "parquet")
        if partitioned:
            writer = writer.partitionBy("ds")
        writer.saveAsTable(f"{DATABASE}.{name}")
        return name

    def check(self, name: str, rows: int, partitioned: bool) -> None:
        """Outside the timing: the table holds every row once (and every partition)."""
        table = f"{DATABASE}.{name}"
        self.spark.catalog.refreshTable(table)
        count = self.spark.table(table).count()
        if count != rows:
            raise RuntimeError(f"{table} holds {count} rows, expected {rows}")
        if partitioned:
            parts = self.spark.sql(f"SHOW PARTITIONS {table}").count()
            if parts != min(rows, PARTITIONS):
                raise RuntimeError(f"{table} has {parts} partitions, expected {min(rows, PARTITIONS)}")

    def drop(self, atomic: str | None, plain: str | None) -> None:
        if atomic:
            self.client.drop_table(f"{CATALOG}.{DATABASE}.{atomic}", if_exists=True, purge=True)
        if plain:
            self.spark.sql(f"DROP TABLE IF EXISTS {DATABASE}.{plain} PURGE")

    def one_round(self, df: Any, rows: int, partitioned: bool, atomic_first: bool,
              rpc: TimedClient | None = None) -> tuple[float, float]:
        """One write each way (timed), checked and dropped afterwards: (atomic s, plain s)."""
        self.serial += 1
        names: dict[str, str] = {}
        times: dict[str, float] = {}

        def run_atomic() -> None:
            names["atomic"] = self.atomic(df, partitioned, rpc or self.client)

        def run_plain() -> None:
            names["plain"] = self.plain(df, partitioned)

        order = [("atomic", run_atomic), ("plain", run_plain)]
        if not atomic_first:
            order.reverse()
        try:
            for side, fn in order:
                times[side] = wall(fn)
            for name in names.values():
                self.check(name, rows, partitioned)
        finally:
            self.drop(names.get("atomic"), names.get("plain"))
        return times["atomic"], times["plain"]

    def case(self, rows: int, partitioned: bool, repeat: int, index: int) -> dict[str, Any]:
        df = self.source(rows, partitioned)
        atomic_s: list[float] = []
        plain_s: list[float] = []
        rpc_s: dict[str, list[float]] = {}
        for rep in range(repeat):
            rpc = TimedClient(self.client)
            a, p = self.one_round(df, rows, partitioned, atomic_first=(rep + index) % 2 == 0, rpc=rpc)
            atomic_s.append(a)
            plain_s.append(p)
            for method, seconds in rpc.spent.items():
                rpc_s.setdefault(method, []).append(seconds)
        atomic_med, plain_med = statistics.median(atomic_s), statistics.median(plain_s)
        ratio = atomic_med / plain_med
        return {
            "rows": rows,
            "partitioned": partitioned,
            "atomic_s": round(atomic_med, 3),
            "plain_s": round(plain_med, 3),
            "ratio": round(ratio, 3),
            "target": CTAS_TARGET,
            "met": ratio <= CTAS_TARGET,
            "overhead_s": round(atomic_med - plain_med, 3),
            "atomic_runs_s": [round(s, 3) for s in atomic_s],
            "plain_runs_s": [round(s, 3) for s in plain_s],
            # Median time of each daemon call inside atomic_ctas (heartbeats run beside the Spark job).
            "atomic_rpc_ms": {m: round(statistics.median(v) * 1000, 1) for m, v in sorted(rpc_s.items())},
            "rows_checked": True,
        }


# ---------------------------------------------------------------- commit latency


def commit_latency(client: CatalogClient, direct: DirectHms, iterations: int) -> dict[str, Any]:
    hc = direct.client
    samples: dict[str, list[int]] = {"catalogd": [], "hms": []}

    def via_catalogd(i: int) -> int:
        target = f"{CATALOG}.{DATABASE}.commit_{i}"
        stage = client.begin_stage(target, "id bigint", purpose="create")
        start = time.perf_counter_ns()
        done = client.commit_stage(stage.id)
        elapsed = time.perf_counter_ns() - start
        if done.state is not StageState.COMMITTED:
            raise RuntimeError(f"stage {stage.id} ended {done.state}: {done.message}")
        client.drop_table(target, purge=True)  # also proves the target exists
        return elapsed

    def via_hms(i: int) -> int:
        old, new = f"rename_src_{i}", f"rename_dst_{i}"
        client.create_table(f"{CATALOG}.{DATABASE}.{old}", "id bigint")
        tbl = hc.get_table(DATABASE, old)
        tbl.tableName = new
        start = time.perf_counter_ns()
        hc.alter_table(DATABASE, old, tbl)
        elapsed = time.perf_counter_ns() - start
        client.drop_table(f"{CATALOG}.{DATABASE}.{new}", purge=True)
        return elapsed

    for i in range(COMMIT_WARMUP + iterations):
        order = [("catalogd", via_catalogd), ("hms", via_hms)]
        if i % 2:
            order.reverse()
        for side, fn in order:
            elapsed = fn(i)
            if i >= COMMIT_WARMUP:
                samples[side].append(elapsed)
    cd_p50, cd_p90 = ms_summary(samples["catalogd"])
    raw_p50, raw_p90 = ms_summary(samples["hms"])
    ratio = cd_p50 / raw_p50
    return {
        "iterations": iterations,
        "catalogd_p50_ms": cd_p50,
        "catalogd_p90_ms": cd_p90,
        "hms_rename_p50_ms": raw_p50,
        "hms_rename_p90_ms": raw_p90,
        "ratio": round(ratio, 3),
        "target": COMMIT_TARGET,
        "met": ratio <= COMMIT_TARGET,
    }


# ---------------------------------------------------------------- run


def run(rows_list: list[int], repeat: int, commit_iterations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-ctas-") as tmp:
        daemon = Daemon(Path(tmp))
        client: CatalogClient | None = None
        direct: DirectHms | None = None
        spark: Any = None
        try:
            started = time.monotonic()
            daemon.start()
            startup_s = time.monotonic() - started
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=600)
            info = client.get_catalog(CATALOG)
            if not info.metastore:
                raise RuntimeError(f"catalog {CATALOG} reports no metastore URI")
            direct = DirectHms(info.metastore, daemon.metastore_key_file)
            client.create_database(f"{CATALOG}.{DATABASE}", comment="catalogd CTAS benchmark")

            started = time.monotonic()
            local_dir = Path(tmp) / "spark-local"
            local_dir.mkdir()
            spark = start_spark(spark_conf_for(info), local_dir)
            spark_startup_s = time.monotonic() - started

            ctas = Ctas(spark, client)
            for partitioned in (False, True):  # untimed: JIT, class loading, the first HMS connections
                ctas.one_round(ctas.source(WARMUP_ROWS, partitioned), WARMUP_ROWS, partitioned, atomic_first=True)
            cases = [
                ctas.case(rows, partitioned, repeat, index)
                for index, (rows, partitioned) in enumerate((r, p) for r in rows_list for p in (False, True))
            ]
            commit = commit_latency(client, direct, commit_iterations)
            leftovers = client.list_tables(f"{CATALOG}.{DATABASE}")
            if leftovers:
                raise RuntimeError(f"tables left behind in {CATALOG}.{DATABASE}: {leftovers}")
            return {
                "benchmark": "ctas",
                "repeat": repeat,
                "setup": {
                    "metastore": info.metastore,
                    "spark": spark.version,
                    "spark_master": "local[2]",
                    "daemon_startup_s": round(startup_s, 1),
                    "spark_startup_s": round(spark_startup_s, 1),
                },
                "machine": {
                    "cpu_count": os.cpu_count(),
                    "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "platform": platform.platform(),
                    "machine": platform.machine(),
                },
                "cases": cases,
                "commit": commit,
            }
        finally:
            tear_down(daemon, spark, (client, direct))


def row_counts(text: str) -> list[int]:
    try:
        counts = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of row counts, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("row counts must be positive")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=row_counts, default=[1_000_000, 5_000_000],
                        help="comma-separated row counts (default 1000000,5000000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed writes per case and side")
    parser.add_argument("--commit-iterations", type=int, default=50, help="timed commits (and renames)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.commit_iterations < 1:
        parser.error("--repeat and --commit-iterations must be at least 1")
    return report(lambda: run(args.rows, args.repeat, args.commit_iterations), args.output, (PySparkException,))


if __name__ == "__main__":
    sys.exit(main())
