#!/usr/bin/env python3
"""What a write costs through catalogd as the catalog grows, against the same write on the metastore directly.

For each catalog size (``--sizes``, default 100, 1,000 and 10,000 tables of ``--partitions``
partitions each, written straight into one embedded metastore) one run measures, through
catalogd and directly, alternating:

- create+drop of a table (Thrift API against ``create_table`` + ``drop_table(deleteData)``), p50/p95;
- add+drop of a partition (Thrift API against ``add_partition`` + ``drop_partition(deleteData)``);
- the first create+drop after ``--idle`` seconds of nothing (the old location cache lived 30 s);
- ``db drop --cascade`` of a database of 100 tables, against dropping the 100 tables and the
  database on the metastore directly (medians of ``--cascade-rounds`` rounds, alternating which
  side goes first), and against HMS's own ``drop_database(cascade)`` (once);
- ``add_partitions`` of 1,000 partitions (explicit locations, as Hive's MSCK gives them) through
  the HMS endpoint against the metastore directly;
- the daemon's ready time on a started catalog (``/readyz``), its RSS (the daemon, and the
  metastore's JVM apart) and its CPU while idle.

A populated catalog is kept in ``--cache-dir`` (one daemon data dir per size) and reused by
later runs: populating 10,000 tables takes minutes.

    .venv/bin/python benchmarks/scale.py [--sizes 100,1000,10000] [--partitions 20] [--iterations 40]
        [--idle 35] [--cascade-rounds 3] [--cache-dir ~/.cache/catalogd-scale] [--output FILE] [--populate-only]

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The sibling benchmark (benchmarks/ is on sys.path when this file is run as a script).
from catalog_ops import Daemon, DirectHms, hms_table, report, summary

from catalogd.client import CatalogClient
from catalogd.errors import CatalogError
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column

CATALOG = "main"  # catalog_ops.Daemon's catalog
DATABASE = "scale"
PROBE_DB = "probe"
BULK_TABLES = 100
BULK_PARTITIONS = 1000
POPULATE_THREADS = 3
#: A socket timeout for the metastore calls timed here (1,000 partitions at once took over 60 s
#: on a loaded machine).
SLOW_CALL_MS = 600_000


def progress(out: dict[str, Any]) -> None:
    """What is measured so far, on stderr (a run cut short keeps its figures)."""
    print(json.dumps({"so_far": out}), file=sys.stderr, flush=True)


def partitioned(database: str, name: str) -> hms.Table:
    tbl = hms_table(database, name)
    tbl.partitionKeys = [hms.FieldSchema(name="ds", type="string")]
    return tbl


def partitions_of(stored: hms.Table, values: range, explicit: bool) -> list[hms.Partition]:
    """Partitions of ``stored`` (in its directory; ``explicit``: the location given, as MSCK does)."""
    parts = []
    for v in values:
        location = f"{stored.sd.location}/ds={v}" if explicit else None
        sd = hms.StorageDescriptor(**{**stored.sd.__dict__, "location": location})
        parts.append(hms.Partition(values=[str(v)], dbName=stored.dbName, tableName=stored.tableName, sd=sd,
                                   parameters={}))
    return parts


def populate(uri: str, key_file: Path, database: str, names: list[str], partitions: int) -> None:
    """Tables (with their partitions) written straight into the metastore, on a few connections."""
    lock = threading.Lock()
    todo = list(names)
    failures: list[BaseException] = []

    def work() -> None:
        direct = DirectHms(uri, key_file)
        try:
            while True:
                with lock:
                    if not todo or failures:
                        return
                    name = todo.pop()
                direct.client.create_table(partitioned(database, name))
                if partitions:
                    stored = direct.client.get_table(database, name)
                    direct.client.add_partitions(partitions_of(stored, range(partitions), explicit=False))
        except BaseException as e:  # reported by the caller
            failures.append(e)
        finally:
            direct.close()

    threads = [threading.Thread(target=work) for _ in range(POPULATE_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"populating failed: {failures[0]!r}")


class ScaleDaemon(Daemon):
    """The benchmark's daemon: one embedded hive catalog, in a kept data dir."""

    def start(self) -> None:
        # A restart: the ports are the new process's (read again from its state file).
        self.port = self.http_port = 0
        (self.data_dir / "catalogd.json").unlink(missing_ok=True)
        super().start()

    @property
    def hms_port(self) -> int:
        return int(json.loads((self.data_dir / "catalogd.json").read_text())["hms_port"])

    def pids(self) -> tuple[int, list[int]]:
        assert self.process is not None
        pid = self.process.pid
        children = [int(c) for c in (Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
        return pid, children


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alternate(iterations: int, through: Callable[[int], None], direct: Callable[[int], None]) -> dict[str, Any]:
    mine: list[int] = []
    theirs: list[int] = []
    for i in range(iterations):
        for side in ((0, 1) if i % 2 else (1, 0)):
            start = time.perf_counter_ns()
            (through if side == 0 else direct)(i)
            (mine if side == 0 else theirs).append(time.perf_counter_ns() - start)
    a, b = summary(mine), summary(theirs)
    return {"catalogd": a, "direct": b, "p50_ratio": round(a["p50_ms"] / b["p50_ms"], 2),
            "p95_ratio": round(a["p95_ms"] / b["p95_ms"], 2)}


def first_write(daemon: ScaleDaemon) -> float:
    """When the first judged write (a create and drop) succeeded, retried while the daemon is
    still reading the catalog's locations (time.monotonic())."""
    with CatalogClient(f"127.0.0.1:{daemon.port}", timeout=600) as client:
        while True:
            try:
                if PROBE_DB not in client.list_databases(CATALOG):
                    client.create_database(f"{CATALOG}.{PROBE_DB}")
                client.create_table(f"{CATALOG}.{PROBE_DB}.first", [Column("id", "bigint")])
                client.drop_table(f"{CATALOG}.{PROBE_DB}.first")
                return time.monotonic()
            except CatalogError as e:  # the first pass not done yet (metastore-unavailable)
                if "still being read" not in str(e):
                    raise
                time.sleep(0.5)


def measure_size(cache: Path, size: int, partitions: int, iterations: int, idle: float,
                 populate_only: bool, no_populate: bool, cascade_rounds: int = 3) -> dict[str, Any]:
    workdir = cache / f"tables-{size}-parts-{partitions}"
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / "populated"
    out: dict[str, Any] = {"tables": size, "partitions_per_table": partitions}
    daemon = ScaleDaemon(workdir)
    if not marker.exists() and not no_populate:
        daemon.start()
        try:
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=600)
            uri = client.get_catalog(CATALOG).metastore or ""
            if DATABASE not in client.list_databases(CATALOG):
                client.create_database(f"{CATALOG}.{DATABASE}")
            have = set(client.list_tables(f"{CATALOG}.{DATABASE}"))
            client.close()
            start = time.monotonic()
            populate(uri, daemon.metastore_key_file, DATABASE,
                     [f"t{n:05d}" for n in range(size) if f"t{n:05d}" not in have], partitions)
            out["populate_s"] = round(time.monotonic() - start, 1)
            marker.write_text(f"{size} tables, {partitions} partitions each\n")
        finally:
            daemon.stop()
    if populate_only:
        return out
    # A first start on the catalog (no saved location index): ready, then the first judged
    # write waits for the first pass over the catalog.
    index = workdir / "data" / "catalogs" / CATALOG / "locations.json"
    index.unlink(missing_ok=True)
    start = time.monotonic()
    daemon.start()
    out["first_start"] = {"ready_s": round(time.monotonic() - start, 2),
                          "first_write_s": round(first_write(daemon) - start, 2)}
    daemon.stop()
    # The start measured: a restart, the index saved by the last run.
    start = time.monotonic()
    daemon.start()
    out["ready_s"] = round(time.monotonic() - start, 2)
    out["first_write_after_start_s"] = round(first_write(daemon) - start, 2)
    progress(out)
    client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=600)
    uri = client.get_catalog(CATALOG).metastore or ""
    out["tables"] = len(client.list_tables(f"{CATALOG}.{DATABASE}"))
    direct = DirectHms(uri, daemon.metastore_key_file)
    direct.socket.setTimeout(SLOW_CALL_MS)
    endpoint: DirectHms | None = None
    try:
        for db in client.list_databases(CATALOG):
            if db == PROBE_DB or db.startswith("bulk_"):  # left by an interrupted run
                client.drop_database(f"{CATALOG}.{db}", cascade=True)
        client.create_database(f"{CATALOG}.{PROBE_DB}")

        def through_create_drop(i: int) -> None:
            name = f"{CATALOG}.{PROBE_DB}.c{i}"
            client.create_table(name, [Column("id", "bigint")])
            client.drop_table(name)

        def direct_create_drop(i: int) -> None:
            direct.client.create_table(hms_table(PROBE_DB, f"d{i}"))
            direct.client.drop_table(PROBE_DB, f"d{i}", True)

        out["create_drop"] = alternate(iterations, through_create_drop, direct_create_drop)
        progress(out)

        client.create_table(f"{CATALOG}.{PROBE_DB}.pc", [Column("id", "bigint")],
                            partitioned_by=[Column("ds", "string")])
        direct.client.create_table(partitioned(PROBE_DB, "pd"))

        def through_partition(i: int) -> None:
            client.add_partition(f"{CATALOG}.{PROBE_DB}.pc", {"ds": str(i)})
            client.drop_partition(f"{CATALOG}.{PROBE_DB}.pc", {"ds": str(i)})

        pd = direct.client.get_table(PROBE_DB, "pd")

        def direct_partition(i: int) -> None:
            direct.client.add_partition(partitions_of(pd, range(i, i + 1), explicit=False)[0])
            direct.client.drop_partition(PROBE_DB, "pd", [str(i)], True)

        out["add_drop_partition"] = alternate(iterations, through_partition, direct_partition)

        # Idle: nothing asked of the daemon; its CPU meanwhile is the idle CPU.
        pid, children = daemon.pids()
        cpu0, wall0 = cpu_seconds(pid), time.monotonic()
        time.sleep(idle)
        out["idle_cpu_percent"] = round(100 * (cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0), 2)
        first: dict[str, float] = {}
        start = time.perf_counter()
        through_create_drop(10_000)
        first["catalogd_ms"] = round((time.perf_counter() - start) * 1000, 2)
        start = time.perf_counter()
        direct_create_drop(10_000)
        first["direct_ms"] = round((time.perf_counter() - start) * 1000, 2)
        out["first_create_drop_after_idle"] = {"idle_s": idle, **first}
        progress(out)

        # db drop --cascade of 100 tables: through catalogd, and directly (table by table),
        # alternating which goes first over --cascade-rounds rounds (one pair alone is noise on a
        # busy machine: the medians are compared); HMS's own cascade once.
        mine: list[float] = []
        theirs: list[float] = []
        for r in range(cascade_rounds):
            for db in (f"bulk_c{r}", f"bulk_d{r}"):
                client.create_database(f"{CATALOG}.{db}")
                populate(uri, daemon.metastore_key_file, db, [f"b{n:03d}" for n in range(BULK_TABLES)], 0)

            def through_cascade(db: str = f"bulk_c{r}") -> None:
                client.drop_database(f"{CATALOG}.{db}", cascade=True)

            def direct_cascade(db: str = f"bulk_d{r}") -> None:
                for n in range(BULK_TABLES):
                    direct.client.drop_table(db, f"b{n:03d}", True)
                direct.client.drop_database(db, True, False)

            for side in ((0, 1) if r % 2 else (1, 0)):
                start = time.perf_counter()
                (through_cascade if side == 0 else direct_cascade)()
                (mine if side == 0 else theirs).append(time.perf_counter() - start)
        client.create_database(f"{CATALOG}.bulk_h")
        populate(uri, daemon.metastore_key_file, "bulk_h", [f"b{n:03d}" for n in range(BULK_TABLES)], 0)
        start = time.perf_counter()
        direct.client.drop_database("bulk_h", True, True)
        cascade_s = time.perf_counter() - start
        catalogd_s, direct_s = statistics.median(mine), statistics.median(theirs)
        out["db_drop_cascade_100"] = {"catalogd_s": round(catalogd_s, 3), "direct_tables_s": round(direct_s, 3),
                                      "direct_hms_cascade_s": round(cascade_s, 3),
                                      "ratio_to_tables": round(catalogd_s / direct_s, 2),
                                      "ratio_to_hms_cascade": round(catalogd_s / cascade_s, 2),
                                      "rounds": {"catalogd_s": [round(x, 3) for x in mine],
                                                 "direct_tables_s": [round(x, 3) for x in theirs]}}
        progress(out)

        # add_partitions of 1,000 through the HMS endpoint against the metastore directly.
        # Opened now: the endpoint closes a connection idle for long.
        endpoint = DirectHms(f"thrift://127.0.0.1:{daemon.hms_port}")
        endpoint.socket.setTimeout(SLOW_CALL_MS)
        timings = {}
        for side, conn, name in (("endpoint", endpoint, "ape"), ("direct", direct, "apd"),
                                 ("endpoint2", endpoint, "ape2"), ("direct2", direct, "apd2")):
            direct.client.create_table(partitioned(PROBE_DB, name))
            stored = direct.client.get_table(PROBE_DB, name)
            parts = partitions_of(stored, range(BULK_PARTITIONS), explicit=True)
            start = time.perf_counter()
            conn.client.add_partitions(parts)
            timings[side] = time.perf_counter() - start
        endpoint_s = min(timings["endpoint"], timings["endpoint2"])
        direct_s = min(timings["direct"], timings["direct2"])
        out["add_partitions_1000_endpoint"] = {"endpoint_s": round(endpoint_s, 3), "direct_s": round(direct_s, 3),
                                               "ratio": round(endpoint_s / direct_s, 2),
                                               "runs": {k: round(v, 3) for k, v in timings.items()}}
        pid, children = daemon.pids()
        out["rss_mib"] = {"daemon": rss_mib(pid), "metastore_jvm": sum(rss_mib(c) for c in children)}
        client.drop_database(f"{CATALOG}.{PROBE_DB}", cascade=True)
    finally:
        for closer in (client, direct, endpoint):
            if closer is not None:
                closer.close()
        daemon.stop()
    return out


def run(sizes: list[int], partitions: int, iterations: int, idle: float, cache: Path,
        populate_only: bool, no_populate: bool, cascade_rounds: int = 3) -> dict[str, Any]:
    results = []
    for size in sizes:
        results.append(measure_size(cache, size, partitions, iterations, idle, populate_only, no_populate,
                                    cascade_rounds))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return {"benchmark": "scale", "iterations": iterations, "cpus": os.cpu_count(), "sizes": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="catalog sizes in tables, comma-separated")
    parser.add_argument("--partitions", type=int, default=20, help="partitions of every table")
    parser.add_argument("--iterations", type=int, default=40, help="timed iterations per operation and side")
    parser.add_argument("--idle", type=float, default=35.0, help="seconds of idle before the first write")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "catalogd-scale",
                        help="where populated catalogs are kept between runs")
    parser.add_argument("--populate-only", action="store_true", help="only populate the catalogs")
    parser.add_argument("--no-populate", action="store_true",
                        help="measure the catalogs as far as they are populated (the JSON gives the tables found)")
    parser.add_argument("--cascade-rounds", type=int, default=3,
                        help="rounds of the db drop --cascade comparison (alternating which side goes first)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    return report(lambda: run(sizes, args.partitions, args.iterations, args.idle, args.cache_dir,
                              args.populate_only, args.no_populate, args.cascade_rounds), args.output)


if __name__ == "__main__":
    sys.exit(main())
