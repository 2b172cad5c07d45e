#!/usr/bin/env python3
"""What a stage's begin and commit cost on a hive catalog: wall time from a client, and metastore calls.

One run starts a real ``catalogd serve`` daemon (one embedded hive catalog, free ports, a
temporary data dir; see ``catalog_ops.py``) whose metastore client counts its calls: the daemon
runs with ``MetastoreClient.call`` wrapped to log each call's thread, method and duration to a
file (nothing else of the daemon changes). Then, for each purpose in ``--purposes``
(OVERWRITE_PARTITIONS, REPLACE, APPEND), on its own target (parquet, partitioned by ``ds``,
``--partitions`` partitions), ``--iterations`` rounds of:

* ``client.begin_stage`` (timed; the calls it makes counted),
* one staged partition added to the staging table straight through the metastore, as Spark's
  ``insertInto`` adds it (untimed; APPEND: into an existing partition, with one small file),
* ``client.commit_stage`` (timed; the calls it makes counted).

The calls are split by thread: those of the Thrift worker that answered the RPC (``thrift-worker-*``:
the caller's critical path), those of the stage housekeeping worker, and the rest (the location
index's background reads). Before each round the benchmark waits until no call was logged for
``SETTLE`` seconds, so a round's background work is counted with it and not with the next one.

Then the scaling check: OVERWRITE_PARTITIONS commits with ``--few`` and with ``--many`` other
stages open in the same database (REPLACE stages on another table, long lease), measured in the
same run: a commit whose cost grows with the database's stages shows it here.

    .venv/bin/python benchmarks/stage_commit.py [--iterations 30] [--partitions 30]
        [--purposes OVERWRITE_PARTITIONS,REPLACE,APPEND] [--few 10] [--many 500] [--retention 10m]
        [--output FILE]

Prints one JSON document (p50/p90 in ms, calls per begin and per commit by method). Takes a few
minutes on a 2-core machine, most of it opening the ``--many`` stages.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from catalog_ops import CATALOG, Daemon, DirectHms, _die_with_parent, percentile, report, tear_down

from catalogd.client import CatalogClient
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column, StagePurpose

DATABASE = "stagebench"
SCHEMA = [Column("id", "bigint"), Column("v", "string")]
KEYS = [Column("ds", "string")]
#: A round starts once no metastore call was logged for this long (the last round's background work is over).
SETTLE = 0.5
#: The threads of the daemon's Thrift server: the ones that answer the client's RPCs.
CALLER = "thrift-worker-"
HOUSEKEEPING = "stage-housekeeping-"

#: Run in the daemon's interpreter before ``catalogd.cli``: logs every metastore call.
_COUNTING = """
import os, runpy, sys, threading, time
import catalogd.metastore.client as m
_call = m.MetastoreClient.call
_log = open(os.environ["CATALOGD_BENCH_CALLS"], "a", buffering=1)
_lock = threading.Lock()
def call(self, method, *args, **kwargs):
    start = time.perf_counter()
    try:
        return _call(self, method, *args, **kwargs)
    finally:
        line = f"{threading.current_thread().name}\\t{method}\\t{(time.perf_counter() - start) * 1000:.3f}\\n"
        with _lock:
            _log.write(line)
m.MetastoreClient.call = call
sys.argv = ["catalogd", "serve", "--config", sys.argv[1]]
runpy.run_module("catalogd.cli", run_name="__main__")
"""


class CountingDaemon(Daemon):
    """The benchmark daemon, its metastore calls logged to ``calls_path``."""

    def __init__(self, workdir: Path, retention: str) -> None:
        super().__init__(workdir)
        self.retention = retention
        self.calls_path = workdir / "calls.tsv"

    def config(self) -> str:
        # No janitor pass during the run (it would add calls of its own); retention as asked.
        return super().config() + (
            "staging:\n"
            "  janitor-interval: 1h\n"
            f"  replaced-data-retention: {self.retention}\n"
        )

    def start(self) -> None:
        self.config_path.write_text(self.config())
        self.calls_path.touch()
        cmd = [sys.executable, "-c", _COUNTING, str(self.config_path)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent, env={**os.environ, "CATALOGD_BENCH_CALLS": str(self.calls_path)},
                # Not the caller's directory: `python -c` puts it first on sys.path, before PYTHONPATH
                # (a checkout's catalogd there would be run instead of the one asked for).
                cwd=self.workdir,
            )
        self._wait_ready()

    def mark(self) -> int:
        return self.calls_path.stat().st_size

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until no call was logged for ``SETTLE`` seconds (or ``timeout`` passed)."""
        deadline = time.monotonic() + timeout
        size = self.mark()
        while time.monotonic() < deadline:
            time.sleep(SETTLE)
            now = self.mark()
            if now == size:
                return
            size = now

    def calls_since(self, offset: int) -> list[tuple[str, str, float]]:
        with open(self.calls_path, "rb") as f:
            f.seek(offset)
            text = f.read().decode()
        rows = []
        for line in text.splitlines():
            thread, method, ms = line.split("\t")
            rows.append((thread, method, float(ms)))
        return rows


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(percentile(ordered, 0.5), 2), "p90_ms": round(percentile(ordered, 0.9), 2),
            "samples": len(ordered)}


def _calls(rounds: list[list[tuple[str, str, float]]]) -> dict[str, Any]:
    """Calls per round: the median count, and per method the mean count (one decimal)."""
    counts = sorted(len(r) for r in rounds)
    methods: collections.Counter[str] = collections.Counter()
    ms = 0.0
    for r in rounds:
        methods.update(method for _, method, _ in r)
        ms += sum(t for _, _, t in r)
    n = max(len(rounds), 1)
    return {"median": percentile([float(c) for c in counts], 0.5) if counts else 0,
            "metastore_ms_mean": round(ms / n, 2),
            "by_method": {m: round(c / n, 1) for m, c in sorted(methods.items())}}


def _stage_partition(direct: DirectHms, stage_table: str, location: str, value: str, file: bool) -> None:
    """Add one partition to the staging table as Spark's insertInto would (with a file for an APPEND)."""
    tbl = direct.client.get_table(DATABASE, stage_table)
    sd = hms.StorageDescriptor(**tbl.sd.__dict__)
    sd.location = f"{location.rstrip('/')}/ds={value}"
    path = sd.location.removeprefix("file:")
    os.makedirs(path, exist_ok=True)
    if file:
        Path(path, f"part-{time.time_ns()}.parquet").write_bytes(b"PAR1")
    direct.client.add_partition(hms.Partition(values=[value], dbName=DATABASE, tableName=stage_table,
                                              createTime=int(time.time()), lastAccessTime=0, sd=sd, parameters={}))


def _rounds(daemon: CountingDaemon, client: CatalogClient, direct: DirectHms, target: str, purpose: StagePurpose,
            iterations: int, warmup: int) -> dict[str, Any]:
    begin_ms: list[float] = []
    commit_ms: list[float] = []
    begin_calls: list[list[tuple[str, str, float]]] = []
    commit_calls: list[list[tuple[str, str, float]]] = []
    housekeeping: list[list[tuple[str, str, float]]] = []
    others: list[list[tuple[str, str, float]]] = []
    for i in range(warmup + iterations):
        value = "d00" if purpose is StagePurpose.APPEND else f"d{i % 3:02d}"
        daemon.settle()
        mark = daemon.mark()
        started = time.perf_counter()
        replace = purpose is StagePurpose.REPLACE
        stage = client.begin_stage(f"{CATALOG}.{DATABASE}.{target}", SCHEMA if replace else None,
                                   KEYS if replace else None, purpose=purpose)
        begun = time.perf_counter()
        began = [c for c in daemon.calls_since(mark) if c[0].startswith(CALLER)]
        assert stage.staging_table and stage.location
        _stage_partition(direct, stage.staging_table, stage.location, value, purpose is StagePurpose.APPEND)
        mark = daemon.mark()
        started_commit = time.perf_counter()
        client.commit_stage(stage.id)
        ended = time.perf_counter()
        daemon.settle()
        committed = daemon.calls_since(mark)
        if i < warmup:
            continue
        begin_ms.append((begun - started) * 1000)
        commit_ms.append((ended - started_commit) * 1000)
        begin_calls.append(began)
        commit_calls.append([c for c in committed if c[0].startswith(CALLER)])
        housekeeping.append([c for c in committed if c[0].startswith(HOUSEKEEPING)])
        others.append([c for c in committed if not c[0].startswith((CALLER, HOUSEKEEPING))])
    return {"begin": _ms(begin_ms), "commit": _ms(commit_ms), "calls_per_begin": _calls(begin_calls),
            "calls_per_commit": _calls(commit_calls), "housekeeping_calls_per_commit": _calls(housekeeping),
            "other_background_calls_per_commit": _calls(others)}


def _table(client: CatalogClient, name: str, partitions: int) -> None:
    client.create_table(f"{CATALOG}.{DATABASE}.{name}", SCHEMA, partitioned_by=KEYS)
    for p in range(partitions):
        client.add_partition(f"{CATALOG}.{DATABASE}.{name}", {"ds": f"d{p:02d}"})


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"host": platform.node(), "load_average": os.getloadavg(), "iterations": args.iterations,
                              "partitions": args.partitions, "retention": args.retention}
    with tempfile.TemporaryDirectory(prefix="catalogd-stage-bench-") as tmp:
        daemon = CountingDaemon(Path(tmp), args.retention)
        client: CatalogClient | None = None
        direct: DirectHms | None = None
        try:
            daemon.start()
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=120)
            info = client.get_catalog(CATALOG)
            direct = DirectHms(info.metastore or "", daemon.metastore_key_file)
            client.create_database(f"{CATALOG}.{DATABASE}")
            for name in args.purposes.split(","):
                purpose = StagePurpose.parse(name)
                target = f"t_{purpose.value.lower()}"
                _table(client, target, args.partitions)
                result[purpose.value] = _rounds(daemon, client, direct, target, purpose, args.iterations, 3)
            # Scaling: the same commit with few, then many, other stages open in the database.
            _table(client, "t_scale", args.partitions)
            client.create_table(f"{CATALOG}.{DATABASE}.other", SCHEMA)
            scale: dict[str, Any] = {}
            opened = 0
            for count in (args.few, args.many):
                while opened < count:
                    client.begin_stage(f"{CATALOG}.{DATABASE}.other", SCHEMA, purpose=StagePurpose.REPLACE,
                                       lease=3000)
                    opened += 1
                scale[f"{count}_other_stages"] = _rounds(daemon, client, direct, "t_scale",
                                                         StagePurpose.OVERWRITE_PARTITIONS, args.iterations // 2, 2)
            result["scaling"] = scale
        finally:
            tear_down(daemon, closers=(direct, client))
    result["load_average_after"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--purposes", default="OVERWRITE_PARTITIONS,REPLACE,APPEND")
    parser.add_argument("--few", type=int, default=10)
    parser.add_argument("--many", type=int, default=500)
    parser.add_argument("--retention", default="10m")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    return report(lambda: run(args), args.output)


if __name__ == "__main__":
    sys.exit(main())
