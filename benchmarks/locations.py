#!/usr/bin/env python3
"""What location checks cost: create + drop of a table through catalogd as the catalog grows,
against the same create + drop straight on its Hive Metastore.

Every create (where may the new directory go?) and every drop (may its directory be
deleted?) reads the locations of all databases, tables and partitions of the catalog,
so the cost grows with the catalog. One run starts a real ``catalogd serve`` (one
embedded hive catalog), then for each catalog size adds sibling tables (half of them
partitioned, with ``--partitions`` partitions each, through the metastore directly) and
times ``--iterations`` create+drop pairs through catalogd and directly, alternating.

    .venv/bin/python benchmarks/locations.py [--sizes 0,100,400] [--partitions 10] [--iterations 20]

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The sibling benchmark (benchmarks/ is on sys.path when this file is run as a script).
from catalog_ops import CATALOG, DATABASE, Daemon, DirectHms, hms_table, report, summary, tear_down

from catalogd.client import CatalogClient
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column


def add_siblings(direct: DirectHms, start: int, stop: int, partitions: int) -> None:
    """Tables made straight in the metastore: even ones unpartitioned, odd ones with partitions."""
    for n in range(start, stop):
        tbl = hms_table(DATABASE, f"sibling_{n:04d}")
        if n % 2:
            tbl.partitionKeys = [hms.FieldSchema(name="ds", type="string")]
        direct.client.create_table(tbl)
        if n % 2 and partitions:
            stored = direct.client.get_table(DATABASE, tbl.tableName)
            parts = []
            for p in range(partitions):
                sd = hms.StorageDescriptor(**{**stored.sd.__dict__, "location": f"{stored.sd.location}/ds={p}"})
                parts.append(hms.Partition(values=[str(p)], dbName=DATABASE, tableName=tbl.tableName, sd=sd,
                                           parameters={}))
            direct.client.add_partitions(parts)


def run(sizes: list[int], partitions: int, iterations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-") as tmp:
        daemon = Daemon(Path(tmp))
        client: CatalogClient | None = None
        direct: DirectHms | None = None
        try:
            daemon.start()
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=120)
            info = client.get_catalog(CATALOG)
            direct = DirectHms(info.metastore or "", daemon.metastore_key_file)
            client.create_database(f"{CATALOG}.{DATABASE}")
            results = []
            have = 0
            for size in sizes:
                add_siblings(direct, have, size, partitions)
                have = max(have, size)
                through, straight = [], []
                for i in range(iterations):
                    name = f"probe_{size}_{i}"
                    for side in ((0, 1) if i % 2 else (1, 0)):
                        start = time.perf_counter_ns()
                        if side == 0:
                            client.create_table(f"{CATALOG}.{DATABASE}.{name}", [Column("id", "bigint")])
                            client.drop_table(f"{CATALOG}.{DATABASE}.{name}")
                            through.append(time.perf_counter_ns() - start)
                        else:
                            direct.client.create_table(hms_table(DATABASE, name + "_d"))
                            direct.client.drop_table(DATABASE, name + "_d", True)
                            straight.append(time.perf_counter_ns() - start)
                results.append({
                    "tables": size + 1, "partitioned_tables": size // 2, "partitions": (size // 2) * partitions,
                    "create_drop_catalogd": summary(through), "create_drop_direct": summary(straight),
                })
            return {"benchmark": "locations", "iterations": iterations, "results": results}
        finally:
            tear_down(daemon, closers=(client, direct))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,100,400", help="catalog sizes (sibling tables), ascending")
    parser.add_argument("--partitions", type=int, default=10, help="partitions of each partitioned sibling")
    parser.add_argument("--iterations", type=int, default=20, help="create+drop pairs per size and side")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    if args.iterations < 1 or any(s < 0 for s in sizes) or args.partitions < 0:
        parser.error("--iterations must be at least 1, sizes and --partitions not negative")
    return report(lambda: run(sizes, args.partitions, args.iterations), None)


if __name__ == "__main__":
    sys.exit(main())
