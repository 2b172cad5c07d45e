#!/usr/bin/env python3
"""Atomic CTAS into PostgreSQL through a jdbc catalog versus Spark's plain ``df.write.jdbc``, and
the cost of a REPLACE commit versus the plain renames.

One run starts a real PostgreSQL server (Debian's ``initdb``/``pg_ctl`` in a temporary
directory, as the tests do: ``tests/integration/postgres.py``), a real ``catalogd serve`` daemon
with a memory default catalog and a jdbc catalog ``pg`` on a fresh database of that server, and
one local SparkSession (``local[2]``, 2g driver, the PostgreSQL JDBC driver from
``libpostgresql-jdbc-java`` on its classpath), then measures:

1. **CTAS wall time**, ``--rows`` rows of
   ``spark.range(rows, numPartitions=2).selectExpr("id", "id * 2 AS amount", "cast(id AS string) AS name")``,
   ``--repeat`` times each way, alternating which goes first:

   * atomic: ``catalogd.spark.atomic_ctas(spark, "pg.bench.t_atomic_N", df)`` (begin a stage, Spark's
     JDBC source writes the hidden staging table, the daemon renames it into place in one transaction);
   * plain: ``df.write.jdbc(url, "bench.t_plain_N", mode="errorifexists")`` with the same connection
     properties (``reWriteBatchedInserts=true``).

   Each timing is the whole call; both tables are counted (untimed) and dropped after every
   repetition. One small untimed write each way warms the JVM first. Reported: the median
   seconds of each side and atomic/plain (goal: at most 1.10).

2. **REPLACE commit time.** ``client.commit_stage`` of a REPLACE stage (1,000 rows staged,
   untimed) onto a 1,000-row table, versus the plain SQL it stands for, sent straight to
   PostgreSQL on one persistent connection: the same swap in one transaction (``ALTER TABLE t
   RENAME TO t_old; ALTER TABLE new RENAME TO t; DROP TABLE t_old; COMMIT``), and a single
   ``ALTER TABLE ... RENAME`` (autocommit). ``--commit-iterations`` timed rounds after a few
   untimed ones, alternating; p50/p90 of each and the ratios of the p50s (goal: at most 1.2).

    .venv/bin/python benchmarks/jdbc.py [--rows 1000000] [--repeat 3] [--commit-iterations 40] [--output FILE]

Prints one JSON document (and writes it to FILE). Spark, the daemon and PostgreSQL are stopped
at the end, also when something fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from catalog_ops import Daemon, percentile, report, tear_down

from catalogd.client import CatalogClient
from catalogd.config.models import DEFAULT_JDBC_DRIVER_JAR
from catalogd.model import StagePurpose
from catalogd.spark import atomic_ctas
from catalogd.spark_common import jdbc_properties

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from integration.postgres import running_postgres  # noqa: E402 - the tests' PostgreSQL server start

SCHEMA = "bench"


class JdbcDaemon(Daemon):
    """A daemon with a memory default catalog and the jdbc catalog ``pg``."""

    def __init__(self, workdir: Path, server: Any, database: str) -> None:
        super().__init__(workdir)
        self.server, self.database = server, database

    def config(self) -> str:
        base = super().config().split("catalogs:\n")[0]
        return base + (
            "catalogs:\n"
            "  - {name: scratch, type: memory, default: true}\n"
            f"  - name: pg\n    type: jdbc\n    base-url: jdbc:postgresql://{self.server.host}:{self.server.port}\n"
            f"    default-database: {self.database}\n    username: {self.server.role}\n"
            "    password: ${BENCH_PG_PASSWORD}\n"
        )


def _spark(local_dir: str) -> Any:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("catalogd-bench-jdbc")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
               .config("spark.local.dir", local_dir).config("spark.jars", str(DEFAULT_JDBC_DRIVER_JAR))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def _ctas(spark: Any, client: CatalogClient, conn: Any, rows: int, repeat: int) -> dict[str, Any]:
    info = client.get_catalog("pg")
    props = jdbc_properties(spark, info)
    url = info.metastore
    assert url is not None

    def source(n: int) -> Any:
        return spark.range(0, n, 1, 2).selectExpr("id", "id * 2 AS amount", "cast(id AS string) AS name")

    def atomic(name: str, n: int) -> float:
        start = time.perf_counter()
        atomic_ctas(spark, f"pg.{SCHEMA}.{name}", source(n), client=client)
        return time.perf_counter() - start

    def plain(name: str, n: int) -> float:
        start = time.perf_counter()
        source(n).write.jdbc(url, f"{SCHEMA}.{name}", mode="errorifexists", properties=props)
        return time.perf_counter() - start

    def check_and_drop(name: str, n: int) -> None:
        count = conn.execute(f"SELECT count(*) FROM {SCHEMA}.{name}").fetchone()[0]
        if count != n:
            raise RuntimeError(f"{name} holds {count} rows, expected {n}")
        conn.execute(f"DROP TABLE {SCHEMA}.{name}")

    atomic("warm_a", 1000)
    plain("warm_p", 1000)
    check_and_drop("warm_a", 1000)
    check_and_drop("warm_p", 1000)
    times: dict[str, list[float]] = {"atomic": [], "plain": []}
    for i in range(repeat):
        order = [("atomic", atomic), ("plain", plain)]
        if i % 2:
            order.reverse()
        for side, write in order:
            name = f"t_{side}_{i}"
            times[side].append(write(name, rows))
            check_and_drop(name, rows)
    a, p = statistics.median(times["atomic"]), statistics.median(times["plain"])
    return {"rows": rows, "repeat": repeat, "atomic_s": times["atomic"], "plain_s": times["plain"],
            "atomic_median_s": round(a, 3), "plain_median_s": round(p, 3), "ratio": round(a / p, 3),
            "goal": 1.10, "met": a / p <= 1.10}


def _commit(client: CatalogClient, conn: Any, iterations: int) -> dict[str, Any]:
    def table_with_rows(name: str) -> None:
        conn.execute(f"CREATE TABLE {SCHEMA}.{name} (n bigint, v int)")
        conn.execute(f"INSERT INTO {SCHEMA}.{name} SELECT g, 1 FROM generate_series(1, 1000) g")

    def catalogd_replace() -> float:
        stage = client.begin_stage(f"pg.{SCHEMA}.served", "n bigint, v int", purpose=StagePurpose.REPLACE)
        conn.execute(f"INSERT INTO {stage.spark_table} SELECT g, 2 FROM generate_series(1, 1000) g")
        start = time.perf_counter()
        client.commit_stage(stage.id)
        return time.perf_counter() - start

    def plain_swap() -> float:
        table_with_rows("plain_new")
        start = time.perf_counter()
        with conn.transaction():
            conn.execute(f"ALTER TABLE {SCHEMA}.plain RENAME TO plain_old")
            conn.execute(f"ALTER TABLE {SCHEMA}.plain_new RENAME TO plain")
            conn.execute(f"DROP TABLE {SCHEMA}.plain_old")
        return time.perf_counter() - start

    def plain_rename() -> float:
        table_with_rows("single_new")
        start = time.perf_counter()
        conn.execute(f"ALTER TABLE {SCHEMA}.single_new RENAME TO single")
        elapsed = time.perf_counter() - start
        conn.execute(f"DROP TABLE {SCHEMA}.single")
        return elapsed

    client.create_table(f"pg.{SCHEMA}.served", "n bigint, v int")
    table_with_rows("plain")
    samples: dict[str, list[float]] = {"catalogd": [], "swap": [], "rename": []}
    sides = [("catalogd", catalogd_replace), ("swap", plain_swap), ("rename", plain_rename)]
    for i in range(iterations + 3):
        for side, run in (sides if i % 2 == 0 else list(reversed(sides))):
            elapsed = run()
            if i >= 3:
                samples[side].append(elapsed)
    out: dict[str, Any] = {"iterations": iterations}
    for side, values in samples.items():
        ordered = sorted(values)
        out[f"{side}_p50_ms"] = round(percentile(ordered, 0.5) * 1000, 3)
        out[f"{side}_p90_ms"] = round(percentile(ordered, 0.9) * 1000, 3)
    out["ratio_vs_swap"] = round(out["catalogd_p50_ms"] / out["swap_p50_ms"], 2)
    out["ratio_vs_rename"] = round(out["catalogd_p50_ms"] / out["rename_p50_ms"], 2)
    out["goal"] = 1.2
    out["met_vs_swap"] = out["ratio_vs_swap"] <= 1.2
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commit-iterations", type=int, default=40)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    def measure() -> dict[str, Any]:
        import psycopg

        with running_postgres("bench") as server, tempfile.TemporaryDirectory(prefix="catalogd-bench-jdbc-") as tmp:
            database = server.create_database("bench")
            os.environ["BENCH_PG_PASSWORD"] = server.password
            daemon = JdbcDaemon(Path(tmp), server, database)
            spark = None
            conn = None
            try:
                daemon.start()
                spark = _spark(str(Path(tmp) / "spark"))
                spark.conf.set("spark.catalogd.jdbc.pg.password", server.password)
                conn = psycopg.connect(host=server.host, port=server.port, dbname=database, user=server.role,
                                       password=server.password, autocommit=True)
                with CatalogClient(f"127.0.0.1:{daemon.port}", timeout=300.0) as client:
                    client.create_database(f"pg.{SCHEMA}")
                    ctas = _ctas(spark, client, conn, args.rows, args.repeat)
                    commit = _commit(client, conn, args.commit_iterations)
                return {"benchmark": "jdbc", "command": " ".join(["benchmarks/jdbc.py", *sys.argv[1:]]),
                        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                        "ctas": ctas, "replace_commit": commit}
            finally:
                tear_down(daemon, spark, (conn,))

    return report(measure, args.output)


if __name__ == "__main__":
    sys.exit(main())
