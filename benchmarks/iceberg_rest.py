#!/usr/bin/env python3
"""catalogd's Iceberg REST catalog against the Hive Metastore doors, in one run.

One ``catalogd serve`` daemon (one embedded hive catalog ``main``, free ports, a temporary data
dir, the daemon's default cache). Measured:

* ``load``: ``loadTable`` p50/p99 of one Iceberg table (10 snapshots) through the REST door
  (pyiceberg's ``RestCatalog.load_table``; the HTTP connection is kept) against pyiceberg's
  ``HiveCatalog.load_table`` straight from the embedded metastore (its own port, the
  metastore's key sent first as catalogd's own clients do; pyiceberg opens a connection per
  operation). Both parse the same metadata file; the sides alternate call by call.
  Goal: REST / direct p50 <= 1.0.
* ``appenders``: 8 appenders (processes) on one table for ``--seconds`` (default 60): 4 through
  REST and 4 through pyiceberg's ``HiveCatalog`` on catalogd's HMS endpoint at once, each
  appending one row per commit and retrying a commit that lost the race (reload, append
  again; pyiceberg itself retries a conflicting append 4 times first). Commits/s counts the time
  the writers took (the last commit in flight when the time is up ends after it). Every commit
  a writer was told succeeded (its snapshot id) must be in the table's final history (goal:
  0 lost); commits/s against an HMS-only run (8 ``HiveCatalog`` appenders on the endpoint,
  another table, the same time): goal within 1.2x. Before them, one append at a time through
  each door (alternating): what an uncontended commit costs.
* ``transaction``: a 3-table ``POST /v1/{prefix}/transactions/commit`` (raw HTTP, one
  ``set-properties`` update per table) p50/p99, next to a 1-table one.

    .venv/bin/python benchmarks/iceberg_rest.py [--seconds 60] [--loads 300] [--transactions 100] [--output FILE]

Prints one JSON document with each figure next to its goal (and writes it to FILE). The daemon
(and with it the embedded metastore) is shut down at the end, also when something fails.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import multiprocessing
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

CATALOG = "main"
NAMESPACE = "icebench"
START_TIMEOUT = 300.0
STOP_TIMEOUT = 60.0
#: pyiceberg's HiveCatalog waits for the HMS lock (its defaults give up after ~1 minute of 8 writers).
HIVE_LOCK = {"lock-check-retries": "200", "lock-check-min-wait-time": "0.05", "lock-check-max-wait-time": "1"}


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the benchmark dies, so no daemon is left behind."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Daemon:
    """A ``catalogd serve`` child process with one embedded hive catalog."""

    def __init__(self, workdir: Path) -> None:
        self.data_dir = workdir / "data"
        self.config_path = workdir / "catalogd.yaml"
        self.log_path = workdir / "catalogd.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = self.http_port = self.hms_port = 0

    def start(self) -> None:
        # Port 0: the daemon binds free ports itself and writes them to <data-dir>/catalogd.json.
        self.config_path.write_text(
            "server:\n  host: 127.0.0.1\n  port: 0\n  http-port: 0\n  hms-port: 0\n"
            f"  data-dir: {json.dumps(str(self.data_dir))}\n  log-level: warning\n"
            f"catalogs:\n  - name: {CATALOG}\n    type: hive\n    connection:\n      hive.metastore.uris: embedded\n"
            "dynamic-tables: {warm-analyzer: false}\n")
        cmd = [sys.executable, "-m", "catalogd.cli", "serve", "--config", str(self.config_path)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=_die_with_parent)
        state_file = self.data_dir / "catalogd.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"catalogd exited with code {self.process.returncode}:\n{self.log_tail()}")
            if not self.http_port and state_file.exists():
                try:
                    state = json.loads(state_file.read_text())
                    self.port, self.http_port = int(state["port"]), int(state["http_port"])
                    self.hms_port = int(state["hms_port"])
                except (ValueError, KeyError):
                    pass  # written right now; read it again
            if self.http_port and self._ready():
                return
            time.sleep(0.25)
        raise RuntimeError(f"catalogd was not ready within {START_TIMEOUT:.0f}s:\n{self.log_tail()}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/readyz", timeout=5) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @property
    def rest_uri(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/iceberg"

    @property
    def hms_uri(self) -> str:
        return f"thrift://127.0.0.1:{self.hms_port}"

    def stop(self) -> None:
        """SIGTERM (a clean shutdown that also stops the metastore), SIGKILL if it hangs."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"catalogd did not stop within {STOP_TIMEOUT:.0f}s; killing it", file=sys.stderr)
            proc.kill()
            proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# ---------------------------------------------------------------- clients


def rest_catalog(uri: str) -> Any:
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("rest", uri=uri, warehouse=CATALOG)


def hive_catalog(uri: str) -> Any:
    """pyiceberg's HiveCatalog on catalogd's HMS endpoint."""
    from pyiceberg.catalog.hive import HiveCatalog

    return HiveCatalog("hms", uri=uri, **HIVE_LOCK)


def direct_catalog(metastore: str, key_file: Path) -> Any:
    """pyiceberg's HiveCatalog on the embedded metastore itself, sending its key on each connection."""
    from pyiceberg.catalog.hive import HiveCatalog, _HiveClient
    from thrift.transport import TSocket, TTransport

    from catalogd.metastore.access_key import file_key, send_key

    key = file_key(key_file)

    class KeyedSocket(TSocket.TSocket):  # type: ignore[misc]
        def open(self) -> None:
            super().open()
            send_key(self.handle, key)

    class KeyedClient(_HiveClient):  # type: ignore[misc]
        def _init_thrift_transport(self) -> Any:
            parts = urlparse(self._uri)
            return TTransport.TBufferedTransport(KeyedSocket(parts.hostname, parts.port))

    catalog = HiveCatalog("direct", uri=metastore)
    catalog._client = KeyedClient(metastore)
    return catalog


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 3)


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("writer", pa.string()), ("n", pa.int64())])


def _row(writer: str, n: int) -> Any:
    import pyarrow as pa

    return pa.table({"writer": [writer], "n": [n]}, schema=_schema())


# ---------------------------------------------------------------- load


def bench_load(daemon: Daemon, metastore: str, key_file: Path, loads: int, warmup: int) -> dict[str, Any]:
    rest = rest_catalog(daemon.rest_uri)
    table = rest.create_table(f"{NAMESPACE}.loaded", _schema())
    for n in range(10):  # a table with some history: its metadata file lists 10 snapshots
        table.append(_row("load", n))
    direct = direct_catalog(metastore, key_file)
    assert direct.load_table(f"{NAMESPACE}.loaded").metadata_location == \
        rest.load_table(f"{NAMESPACE}.loaded").metadata_location
    sides: dict[str, list[float]] = {"rest": [], "direct": []}
    catalogs = {"rest": rest, "direct": direct}
    for i in range(warmup + loads):
        order = ("rest", "direct") if i % 2 == 0 else ("direct", "rest")
        for side in order:
            start = time.perf_counter()
            catalogs[side].load_table(f"{NAMESPACE}.loaded")
            elapsed = time.perf_counter() - start
            if i >= warmup:
                sides[side].append(elapsed)
    rest_p50, direct_p50 = _ms(sides["rest"], 0.5), _ms(sides["direct"], 0.5)
    return {
        "loads": loads,
        "rest_ms": {"p50": rest_p50, "p99": _ms(sides["rest"], 0.99)},
        "direct_hive_catalog_ms": {"p50": direct_p50, "p99": _ms(sides["direct"], 0.99)},
        "ratio_p50": round(rest_p50 / direct_p50, 3),
        "goal_ratio_p50": "<= 1.0",
        "met": rest_p50 <= direct_p50,
    }


# ---------------------------------------------------------------- appenders


def _append_worker(kind: str, uri: str, table: str, writer: str, seconds: float, ready: Any, out: Any) -> None:
    """One appender process: commits one row at a time until the time is up; a commit that lost
    the race (the table moved since it was loaded) is retried on the table as it is now."""
    from pyiceberg.exceptions import CommitFailedException

    catalog = rest_catalog(uri) if kind == "rest" else hive_catalog(uri)
    tbl = catalog.load_table(table)
    acked: list[int] = []
    #: Seconds each acknowledged append took (pyiceberg's own retries included).
    durations: list[float] = []
    conflicts = errors = 0
    last_error = ""
    ready.wait()  # every writer loaded: they start together
    started = time.time()
    end = started + seconds
    n = 0
    while time.time() < end:
        attempt = time.perf_counter()
        try:
            tbl.append(_row(writer, n))
        except CommitFailedException:
            conflicts += 1
            tbl = catalog.load_table(table)
            continue
        except Exception as e:  # counted and shown: a benchmark reports what failed, it does not stop
            errors += 1
            last_error = f"{type(e).__name__}: {e}"[:300]
            time.sleep(0.1)
            tbl = catalog.load_table(table)
            continue
        snapshot = tbl.metadata.current_snapshot_id
        assert snapshot is not None
        acked.append(snapshot)
        durations.append(time.perf_counter() - attempt)
        n += 1
    # The last commit may end after the time is up: the rate counts the time the writers took.
    out.put({"kind": kind, "writer": writer, "acked": acked, "conflicts": conflicts, "errors": errors,
             "last_error": last_error, "elapsed": time.time() - started,
             "durations": durations})


def _run_appenders(daemon: Daemon, table: str, kinds: list[str], seconds: float) -> dict[str, Any]:
    rest = rest_catalog(daemon.rest_uri)
    created = rest.create_table(f"{NAMESPACE}.{table}", _schema())
    before = len(created.metadata.snapshots)
    uris = {"rest": daemon.rest_uri, "hms": daemon.hms_uri}
    # Spawned, not forked: this process runs pyarrow's and the HTTP client's threads already.
    context = multiprocessing.get_context("spawn")
    ready, out = context.Barrier(len(kinds)), context.Queue()
    workers = [context.Process(target=_append_worker, daemon=True,
                               args=(kind, uris[kind], f"{NAMESPACE}.{table}", f"{kind}-{i}", seconds, ready, out))
               for i, kind in enumerate(kinds)]
    for worker in workers:
        worker.start()
    results = []
    deadline = time.monotonic() + seconds + START_TIMEOUT
    while len(results) < len(workers):
        if time.monotonic() > deadline or (not any(w.is_alive() for w in workers) and out.empty()):
            raise RuntimeError(f"appenders: {len(results)} of {len(workers)} reported; daemon log:\n"
                               f"{daemon.log_tail()}")
        with contextlib.suppress(Exception):
            results.append(out.get(timeout=1.0))
    for worker in workers:
        worker.join(30)
    final = rest_catalog(daemon.rest_uri).load_table(f"{NAMESPACE}.{table}")
    history = {s.snapshot_id for s in final.metadata.snapshots}
    acked = [s for r in results for s in r["acked"]]
    lost = [s for s in acked if s not in history]
    per_kind: dict[str, dict[str, Any]] = {}
    for r in results:
        k = per_kind.setdefault(r["kind"], {"writers": 0, "commits": 0, "conflicts": 0, "errors": 0,
                                            "durations": []})
        k["writers"] += 1
        k["durations"] += r["durations"]
        k["commits"] += len(r["acked"])
        k["conflicts"] += r["conflicts"]
        k["errors"] += r["errors"]
        if r["last_error"]:
            k["last_error"] = r["last_error"]
    for k in per_kind.values():
        durations = k.pop("durations")
        k["append_ms_p50"] = _ms(durations, 0.5) if durations else None
    rows = final.scan().to_arrow().num_rows
    elapsed = max(r["elapsed"] for r in results)
    return {
        "seconds": seconds,
        "elapsed_s": round(elapsed, 1),
        "acknowledged_commits": len(acked),
        "snapshots_in_history": len(history) - before,
        "rows": rows,
        "lost_commits": len(lost),
        "commits_per_s": round(len(acked) / elapsed, 3),
        "by_door": per_kind,
    }


def bench_single_appends(daemon: Daemon, count: int = 20) -> dict[str, Any]:
    """One appender at a time, the doors alternating on one table: what an uncontended append costs
    through each (the window a concurrent writer's commit can fall into)."""
    rest = rest_catalog(daemon.rest_uri)
    rest.create_table(f"{NAMESPACE}.appended_alone", _schema())
    catalogs = {"rest": rest, "hms": hive_catalog(daemon.hms_uri)}
    sides: dict[str, list[float]] = {"rest": [], "hms": []}
    for i in range(count + 2):
        for side, catalog in catalogs.items():
            table = catalog.load_table(f"{NAMESPACE}.appended_alone")
            start = time.perf_counter()
            table.append(_row(side, i))
            if i >= 2:  # the first two warm up
                sides[side].append(time.perf_counter() - start)
    return {"appends": count, "rest_ms_p50": _ms(sides["rest"], 0.5), "hms_endpoint_ms_p50": _ms(sides["hms"], 0.5)}


def bench_appenders(daemon: Daemon, seconds: float) -> dict[str, Any]:
    alone = bench_single_appends(daemon)
    mixed = _run_appenders(daemon, "appended_mixed", ["rest", "hms"] * 4, seconds)
    hms_only = _run_appenders(daemon, "appended_hms", ["hms"] * 8, seconds)
    ratio = hms_only["commits_per_s"] / mixed["commits_per_s"] if mixed["commits_per_s"] else float("inf")
    return {
        "one_at_a_time": alone,
        "rest_and_hms": mixed,
        "hms_only": hms_only,
        "lost_commits": mixed["lost_commits"] + hms_only["lost_commits"],
        "goal_lost_commits": 0,
        "hms_only_over_mixed_commits_per_s": round(ratio, 3),
        "goal_commits_per_s_ratio": "<= 1.2 (the mixed run within 1.2x of HMS-only)",
        "met": mixed["lost_commits"] == 0 and hms_only["lost_commits"] == 0 and ratio <= 1.2,
    }


# ---------------------------------------------------------------- transactions


def _post(url: str, body: dict[str, Any]) -> int:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return int(reply.status)


def bench_transactions(daemon: Daemon, count: int, warmup: int) -> dict[str, Any]:
    rest = rest_catalog(daemon.rest_uri)
    names = [f"txn_{i}" for i in range(3)]
    for name in names:
        rest.create_table(f"{NAMESPACE}.{name}", _schema())
    url = f"{daemon.rest_uri}/v1/{CATALOG}/transactions/commit"

    def change(name: str, i: int) -> dict[str, Any]:
        return {"identifier": {"namespace": [NAMESPACE], "name": name}, "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"bench.round": str(i)}}]}

    sides: dict[str, list[float]] = {"three_tables": [], "one_table": []}
    for i in range(warmup + count):
        for side, tables in (("three_tables", names), ("one_table", names[:1])):
            start = time.perf_counter()
            status = _post(url, {"table-changes": [change(name, i) for name in tables]})
            elapsed = time.perf_counter() - start
            assert status == 204, status
            if i >= warmup:
                sides[side].append(elapsed)
    rounds = {name: rest.load_table(f"{NAMESPACE}.{name}").properties.get("bench.round") for name in names}
    assert set(rounds.values()) == {str(warmup + count - 1)}, rounds
    return {
        "commits": count,
        "three_tables_ms": {"p50": _ms(sides["three_tables"], 0.5), "p99": _ms(sides["three_tables"], 0.99)},
        "one_table_ms": {"p50": _ms(sides["one_table"], 0.5), "p99": _ms(sides["one_table"], 0.99)},
        "goal": "report the p50 (no target)",
    }


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=60.0, help="each appenders run's length (default 60)")
    parser.add_argument("--loads", type=int, default=300, help="timed loadTable calls per side (default 300)")
    parser.add_argument("--transactions", type=int, default=100, help="timed transactions per kind (default 100)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()

    from catalogd.client import CatalogClient
    from catalogd.metastore.access_key import KEY_FILE

    started = time.time()
    with tempfile.TemporaryDirectory(prefix="catalogd-iceberg-bench-") as tmp:
        daemon = Daemon(Path(tmp))
        try:
            daemon.start()
            with CatalogClient(f"127.0.0.1:{daemon.port}") as client:
                metastore = client.get_catalog(CATALOG).metastore or ""
            key_file = daemon.data_dir / "catalogs" / CATALOG / "conf" / KEY_FILE
            rest_catalog(daemon.rest_uri).create_namespace(NAMESPACE)
            result: dict[str, Any] = {
                "benchmark": "iceberg_rest",
                "command": " ".join(["benchmarks/iceberg_rest.py", *sys.argv[1:]]),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]},
            }
            phases = {
                "load": lambda: bench_load(daemon, metastore, key_file, args.loads, warmup=max(10, args.loads // 10)),
                "appenders": lambda: bench_appenders(daemon, args.seconds),
                "transaction": lambda: bench_transactions(daemon, args.transactions,
                                                          warmup=max(5, args.transactions // 10)),
            }
            for name, phase in phases.items():
                phase_start = time.monotonic()
                result[name] = phase()
                result[name]["phase_seconds"] = round(time.monotonic() - phase_start, 1)
            result["seconds_total"] = round(time.time() - started, 1)
        finally:
            daemon.stop()
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
