#!/usr/bin/env python3
"""Engines on catalogd's HMS endpoint against the metastore behind it, in one run: Trino 476.

Two ``catalogd serve`` daemons share one embedded Hive Metastore 2.3, as in benchmarks/hms_endpoint.py:

* ``relay``: the embedded metastore's own daemon, ``cache.ttl: 0s`` (every call passes through);
* ``cached``: a second daemon whose catalog is that metastore (remote), ``cache.ttl: 1h``.

``direct`` is the metastore itself: a plain client sends the metastore's key first, as catalogd's own
clients do; Trino cannot send it, so Trino's ``direct`` catalog goes through a local forwarder that
sends the key and then copies bytes: a loopback hop more than truly direct, which Trino pays on
every metastore call (it opens a connection per call). ``endpoint_cached_hop`` is the cached
endpoint behind the same hop (without a key): the goal compares it with ``direct``.

One Trino server (installed by ``make engines``) has three Hive catalogs, one per side, all on the
same tables (``hive.metastore-cache-ttl`` is Trino's default 0s: every query asks the metastore).
Measured, the sides alternating query by query so they share the machine's noise:

* Trino planning and running 100 short queries (a partition filter over a 20-partition table):
  total seconds per side; the goal is the cached endpoint <= 1.0x direct;
* ``get_table_req`` p50/p99 (a Hive 3+ client's first call, persistent connections): direct, through
  the endpoint uncached (the relay), through the endpoint from its cache.

    .venv/bin/python benchmarks/engines.py [--quick] [--output FILE]

Prints one JSON document with each figure next to its goal.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hms_endpoint import KEYS, Daemon, KeyForwarder, _client, _ms, _timed

from catalogd.client import CatalogClient
from catalogd.hive_idl import ttypes as hms
from catalogd.metastore.access_key import KEY_FILE, file_key
from tests.integration.trino_server import hive_catalog, running_trino

DATABASE = "enginesbench"
PARTITIONS = 20


def trino_queries(trino: Any, sides: list[str], queries: int) -> dict[str, Any]:
    """Each side's catalog runs the same ``queries`` statements, alternating, after 10 warm-up ones each."""

    def statement(side: str, i: int) -> str:
        return f"SELECT count(*), sum(id) FROM {side}.{DATABASE}.events WHERE ds = 'd{i % PARTITIONS}'"

    expected = trino.query(statement(sides[0], 0))
    for side in sides:
        for i in range(10):
            trino.query(statement(side, i))
        answer = trino.query(statement(side, 0))
        if answer != expected:
            raise RuntimeError(f"{side} answers {answer}, {sides[0]} {expected}")
    seconds = {side: 0.0 for side in sides}
    for i in range(queries):
        order = sides[i % len(sides):] + sides[:i % len(sides)]
        for side in order:
            seconds[side] += _timed(lambda s=side, n=i: trino.query(statement(s, n)))
    return {side: {"seconds": round(value, 3), "per_query_ms": round(value / queries * 1000, 1)}
            for side, value in seconds.items()}


def get_table_req_latency(ports: dict[str, int], rounds: int) -> dict[str, Any]:
    clients = {side: _client(port) for side, port in ports.items()}
    samples: dict[str, list[float]] = {side: [] for side in ports}
    request = hms.GetTableRequest(dbName=DATABASE, tblName="events")
    try:
        for client in clients.values():
            for _ in range(50):
                client.get_table_req(request)
        order = list(ports)
        for i in range(rounds):
            for side in order[i % len(order):] + order[:i % len(order)]:
                samples[side].append(_timed(lambda c=clients[side]: c.get_table_req(request)))
    finally:
        for client in clients.values():
            client.close()
    return {side: {"p50_ms": _ms(v, 0.5), "p99_ms": _ms(v, 0.99)} for side, v in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    rounds, queries = (300, 30) if args.quick else (2000, 100)
    with tempfile.TemporaryDirectory(prefix="engines-bench-") as tmp:
        workdir = Path(tmp)
        daemons: list[Daemon] = []
        forwarders: list[KeyForwarder] = []
        try:
            relay = Daemon(workdir, "relay", "    connection: {hive.metastore.uris: embedded}\n", "0s")
            daemons.append(relay)
            with CatalogClient(f"127.0.0.1:{relay.port}") as c:
                info = c.get_catalog("main")
            # The daemon's status names its backing metastore: the direct side's address.
            metastore = info.metastore or ""
            direct_port = int(metastore.rsplit(":", 1)[1])
            key_path = relay.dir / "data" / "catalogs" / "main" / "conf" / KEY_FILE
            KEYS[direct_port] = file_key(key_path)
            cached = Daemon(workdir, "cached", f"    connection: {{hive.metastore.uris: \"{metastore}\"}}\n"
                                               f"    metastore-key-file: {json.dumps(str(key_path))}\n", "1h")
            daemons.append(cached)
            forwarders.append(KeyForwarder(direct_port, KEYS[direct_port]))
            # The same hop (no key) in front of the cached endpoint: direct vs this one is the fair
            # comparison (Trino opens a connection per metastore call, and the hop costs each one).
            forwarders.append(KeyForwarder(cached.hms_port, None))
            uris = {"direct": f"thrift://127.0.0.1:{forwarders[0].port}",
                    "endpoint_uncached": f"thrift://127.0.0.1:{relay.hms_port}",
                    "endpoint_cached": f"thrift://127.0.0.1:{cached.hms_port}",
                    "endpoint_cached_hop": f"thrift://127.0.0.1:{forwarders[1].port}"}
            started = time.monotonic()
            with running_trino(workdir / "trino", {side: hive_catalog(uri) for side, uri in uris.items()}) as trino:
                trino_start = round(time.monotonic() - started, 1)
                trino.query(f"CREATE SCHEMA direct.{DATABASE}")
                trino.query(f"CREATE TABLE direct.{DATABASE}.events (id bigint, ds varchar) "
                            "WITH (format = 'PARQUET', partitioned_by = ARRAY['ds'])")
                trino.query(f"INSERT INTO direct.{DATABASE}.events SELECT x, 'd' || CAST(x % {PARTITIONS} AS varchar) "
                            "FROM UNNEST(sequence(1, 2000)) AS t(x)")
                planning = trino_queries(trino, list(uris), queries)
            latency = get_table_req_latency({"direct": direct_port, "endpoint_uncached": relay.hms_port,
                                             "endpoint_cached": cached.hms_port}, rounds)
        finally:
            for forwarder in forwarders:
                forwarder.close()
            for daemon in reversed(daemons):
                daemon.stop()
    trino_ratio = round(planning["endpoint_cached_hop"]["seconds"] / planning["direct"]["seconds"], 3)
    trino_no_hop = round(planning["endpoint_cached"]["seconds"] / planning["direct"]["seconds"], 3)
    trino_uncached = round(planning["endpoint_uncached"]["seconds"] / planning["direct"]["seconds"], 3)
    overhead = round(latency["endpoint_uncached"]["p50_ms"] - latency["direct"]["p50_ms"], 3)
    cached_ratio = round(latency["endpoint_cached"]["p50_ms"] / latency["direct"]["p50_ms"], 3)
    report = {
        "benchmark": "engines",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average": [round(x, 2) for x in os.getloadavg()]},
        "trino": {"version": "476", "start_seconds": trino_start,
                  "queries_100": {**planning, "queries": queries, "partitions": PARTITIONS}},
        "get_table_req": latency,
        "goals": {
            "trino_queries_cached_vs_direct": {"value": trino_ratio, "goal": "<= 1.0", "met": trino_ratio <= 1.0,
                                               "sides": "endpoint_cached_hop / direct (the same hop on both)"},
            "trino_queries_cached_no_hop_vs_direct": {"value": trino_no_hop, "goal": "(reported)"},
            "trino_queries_uncached_vs_direct": {"value": trino_uncached, "goal": "(reported)"},
            "get_table_req_pass_through_overhead_p50_ms": {"value": overhead, "goal": "<= 0.3", "met": overhead <= 0.3},
            "get_table_req_cached_vs_direct_p50": {"value": cached_ratio, "goal": "<= 0.1", "met": cached_ratio <= 0.1},
        },
        "median_of": {"get_table_req_rounds": rounds},
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
