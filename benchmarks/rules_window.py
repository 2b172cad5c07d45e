#!/usr/bin/env python3
"""How soon catalogd's location rules know a directory: claimed through catalogd, or behind its back.

A location claimed through any of catalogd's surfaces (the Thrift API, the HMS endpoint) must
count at once: the next claim of the same directory is refused. One made straight in the
metastore (behind catalogd's back) counts only once catalogd reads that table's directories
again: this measures that window.

One run starts a real ``catalogd serve`` (one embedded hive catalog) and, ``--trials`` times:

* endpoint: a partition added through the HMS endpoint at a new directory, then at once a
  table created at that directory through the Thrift API: refused (``known_at_once``);
* behind its back: the rules are warmed (a create+drop through catalogd reads every table),
  a partition is added at a new directory straight in the metastore, and a table created
  at that directory through catalogd is retried every ``--poll`` seconds until refused;
  ``window_s`` is the time from the direct write to the first refusal.

    .venv/bin/python benchmarks/rules_window.py [--trials 3] [--poll 0.5]

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The sibling benchmark (benchmarks/ is on sys.path when this file is run as a script).
from catalog_ops import CATALOG, DATABASE, Daemon, DirectHms, report, tear_down
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport import TSocket, TTransport

from catalogd.client import CatalogClient
from catalogd.errors import PermissionDeniedError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column


def endpoint_client(port: int) -> tuple[Any, Any]:
    """A plain HMS client on catalogd's HMS endpoint (transport, client)."""
    socket = TSocket.TSocket("127.0.0.1", port)
    socket.setTimeout(60_000)
    transport = TTransport.TBufferedTransport(socket)
    transport.open()
    return transport, ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(transport))


def partition_at(table: hms.Table, value: str, location: str) -> hms.Partition:
    sd = hms.StorageDescriptor(**{**table.sd.__dict__, "location": location})
    return hms.Partition(values=[value], dbName=table.dbName, tableName=table.tableName, sd=sd, parameters={})


def refused(client: CatalogClient, name: str, location: str) -> bool:
    """Whether catalogd refuses a table at ``location`` (one it accepts is dropped again)."""
    table = f"{CATALOG}.{DATABASE}.{name}"
    try:
        client.create_table(table, [Column("id", "bigint")], location=location)
    except PermissionDeniedError:
        return True
    client.drop_table(table)
    return False


def run(trials: int, poll: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-") as tmp:
        daemon = Daemon(Path(tmp))
        client: CatalogClient | None = None
        direct: DirectHms | None = None
        transport = None
        try:
            daemon.start()
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=120)
            direct = DirectHms(client.get_catalog(CATALOG).metastore or "", daemon.metastore_key_file)
            state = json.loads((daemon.data_dir / "catalogd.json").read_text())
            transport, endpoint = endpoint_client(int(state["hms_port"]))
            client.create_database(f"{CATALOG}.{DATABASE}")
            client.create_table(f"{CATALOG}.{DATABASE}.b", [Column("id", "bigint")],
                                partitioned_by=[Column("ds", "string")])
            b = direct.client.get_table(DATABASE, "b")
            database_dir = direct.client.get_database(DATABASE).locationUri.rstrip("/")
            at_once, windows = [], []
            for trial in range(trials):
                # Through the endpoint: known to the very next claim.
                endpoint.add_partition(partition_at(b, f"e{trial}", f"{database_dir}/endpoint_{trial}"))
                at_once.append(refused(client, f"probe_e{trial}", f"{database_dir}/endpoint_{trial}"))
                # Behind catalogd's back: the rules have just read every table (a create+drop).
                refused(client, f"warm_{trial}", f"{database_dir}/warm_{trial}")
                start = time.monotonic()
                direct.client.add_partition(partition_at(b, f"d{trial}", f"{database_dir}/direct_{trial}"))
                attempt = 0
                while not refused(client, f"probe_d{trial}_{attempt}", f"{database_dir}/direct_{trial}"):
                    attempt += 1
                    time.sleep(poll)
                windows.append(round(time.monotonic() - start, 2))
            return {
                "benchmark": "rules_window",
                "trials": trials,
                "poll_s": poll,
                "endpoint_claims_known_at_once": all(at_once),
                "behind_catalogds_back_window_s": windows,
                "behind_catalogds_back_window_max_s": max(windows),
            }
        finally:
            tear_down(daemon, closers=(client, direct, transport))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between claims (behind its back)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    return report(lambda: run(args.trials, args.poll), args.output)


if __name__ == "__main__":
    sys.exit(main())
