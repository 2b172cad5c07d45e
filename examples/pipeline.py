#!/usr/bin/env python3
"""A small daily pipeline on catalogd: a source table, a dynamic table over it, one refresh.

1. writes ``sales.orders`` (partitioned by ``ds``, three days 2024-02-29..2024-03-02)
   atomically with ``atomic_ctas``;
2. creates the daily dynamic table ``sales.daily_totals`` with ``CREATE DYNAMIC TABLE``
   (one partition per day, ``initialize = on_schedule``: nothing runs until asked);
3. refreshes the day 2024-03-01 through the REST API, as a workflow scheduler would
   (``scheduleTime`` 2024-03-02 00:00:00 minus the 1 day freshness picks ds=2024-03-01),
   and polls the job until it ends;
4. reads the dynamic table with Spark and prints it.

With ``make run`` going (Thrift 9190, HTTP 9191)::

    .venv/bin/python examples/pipeline.py [--server HOST:PORT] [--http PORT] [--catalog main]

Running it again replaces the source and refreshes the same partition again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from catalogd.client import CatalogClient
from catalogd.errors import CatalogError
from catalogd.spark import atomic_ctas, session_builder

DAYS = ["2024-02-29", "2024-03-01", "2024-03-02"]
ROWS_PER_DAY = 1000
SCHEDULE_TIME = "2024-03-02 00:00:00"


def rest(method: str, url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One JSON call; an error answer ({"error": {"kind", "message"}}) raises RuntimeError."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as e:
        try:
            error = json.loads(e.read()).get("error", {})
        except ValueError:
            error = {}
        raise RuntimeError(f"{method} {url}: HTTP {e.code} {error.get('kind', '')}: {error.get('message', e)}") from e


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=os.environ.get("CATALOGD_SERVER") or "localhost:9190",
                        help="the daemon's Thrift HOST:PORT (default $CATALOGD_SERVER or localhost:9190)")
    parser.add_argument("--http", type=int, default=9191, help="the daemon's HTTP port (default 9191)")
    parser.add_argument("--catalog", default="main", help="a hive catalog of the daemon (default main)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the refresh")
    args = parser.parse_args(argv)
    host = args.server.rpartition(":")[0].strip("[]") or "localhost"
    base = f"http://{host}:{args.http}"
    source, target = f"{args.catalog}.sales.orders", f"{args.catalog}.sales.daily_totals"

    client = CatalogClient(args.server)
    spark = None
    try:
        # 1. The source: one Spark session on the catalog's metastore, an atomic CTAS.
        client.create_database(f"{args.catalog}.sales", comment="catalogd example", if_not_exists=True)
        spark = (session_builder(args.catalog, client).master("local[2]").appName("catalogd example pipeline")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        days = ", ".join(f"'{d}'" for d in DAYS)
        orders = (f"SELECT id, cast(round(rand(7) * 100, 2) AS decimal(10,2)) AS amount, "
                  f"concat('customer_', id % 50) AS customer, element_at(array({days}), cast(id % 3 AS int) + 1) AS ds "
                  f"FROM range({ROWS_PER_DAY * len(DAYS)})")
        stage = atomic_ctas(spark, source, orders, partition_by=["ds"], mode="replace", client=client)
        print(f"wrote {source}: {ROWS_PER_DAY * len(DAYS)} rows in {len(DAYS)} partitions"
              + (f" (stage {stage.id} {stage.state.value})" if stage is not None else ""))

        # 2. The dynamic table (IF NOT EXISTS: a second run keeps the one it made).
        result = client.sql(f"""
            CREATE DYNAMIC TABLE IF NOT EXISTS {target}
            COMMENT 'orders and revenue per day'
            PARTITIONED BY (ds)
            WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd', 'initialize' = 'on_schedule')
            FRESHNESS = INTERVAL '1' DAY
            AS SELECT ds, count(*) AS orders, sum(amount) AS total, count(DISTINCT customer) AS customers
               FROM sales.orders GROUP BY ds""")
        print(f"{result.kind}: {result.message}")

        # 3. A refresh through the REST API, as Airflow & co would trigger it.
        job = rest("POST", f"{base}/v3/dynamic-tables/refresh",
                   {"tables": [target], "scheduleTime": SCHEDULE_TIME, "configuration": {}})
        print(f"refresh job {job['jobId']}: {job['status']}, partitions "
              f"{[run['partition'] for run in job['runs']]}, on {job['clusterInfo'].get('master')}")
        deadline = time.monotonic() + args.timeout
        last = None
        while job["status"] not in ("SUCCEEDED", "FAILED"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"refresh job {job['jobId']} did not end within {args.timeout:.0f}s")
            time.sleep(2)
            job = rest("GET", f"{base}/v3/dynamic-tables/refresh/{job['jobId']}")
            phase = (job["status"], job["runs"][0].get("phase"))
            if phase != last:
                print(f"  {phase[0].lower()}" + (f" ({phase[1]})" if phase[1] else ""))
                last = phase
        if job["status"] == "FAILED":
            raise RuntimeError(f"refresh job {job['jobId']} failed: {job.get('error')}")
        for run in job["runs"]:
            print(f"refreshed {run['table']} {run['partition']}: {run['rows']} rows in "
                  f"{run['ended'] - run['started']:.1f}s, read {run['inputFiles']} files of "
                  f"{run['sourcePartitions']} (application {run['applicationId']})")

        # 4. Read it back: only the refreshed day is there (on_schedule made nothing else).
        table = target.split(".", 1)[1]
        spark.catalog.refreshTable(table)
        spark.table(table).orderBy("ds").show(truncate=False)
        dt = client.get_dynamic_table(target)
        print(f"{dt.full_name}: {dt.refresh_mode.value}, {dt.state.value}, schedule {dt.schedule}, "
              f"within target: {dt.within_target}")
        return 0
    except (CatalogError, RuntimeError, OSError) as e:
        print(f"pipeline failed: {e}", file=sys.stderr)
        return 1
    finally:
        if spark is not None:
            spark.stop()
        client.close()


if __name__ == "__main__":
    sys.exit(main())
