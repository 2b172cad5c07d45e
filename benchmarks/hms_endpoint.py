#!/usr/bin/env python3
"""catalogd's HMS endpoint against the metastore behind it, in one run.

Two ``catalogd serve`` daemons share one embedded Hive Metastore 2.3:

* ``relay``: the embedded metastore's own daemon, ``cache.ttl: 0s`` (every call passes through);
* ``cached``: a second daemon whose catalog is that metastore (remote), ``cache.ttl: 1h``.

``direct`` is a plain HMS client on the metastore itself, sending the metastore's key first as
catalogd's own clients do (an embedded metastore serves no connection without it); Spark's
metastore client cannot send it, so Spark's ``direct`` side goes through a local forwarder
that sends the key and then copies bytes both ways (a loopback hop more than truly direct,
which makes the direct side a little slower). Every measurement alternates the
sides round by round, so they share the machine's noise. Measured:

* ``get_table`` p50/p99 (persistent connections): direct, through the endpoint uncached
  (the relay), through the endpoint from its cache, and the **floor**: a bare Python Thrift
  server (``EchoServer``) answering the same reply bytes to the same client, so the cached
  figure is a ratio to what any Python server must spend as well as to the metastore;
* ``get_partitions`` of a 2,000-partition table (direct vs the relay);
* 32 concurrent clients (processes, each its own connection) doing ``get_table`` for a few
  seconds: operations per second, direct vs the cached endpoint (and the echo floor);
* Spark planning of 100 queries (different partition filters) over a 200-partition table,
  one Spark application per side (child processes), direct vs the cached endpoint.

    .venv/bin/python benchmarks/hms_endpoint.py [--quick] [--output FILE]

Prints one JSON document with each figure next to its goal.
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
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport import TSocket, TTransport

from catalogd.client import CatalogClient
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.metastore.access_key import KEY_FILE, KeySource, file_key, send_key
from catalogd.metastore.messages import CALL, REPLY, MessageStream, ProtocolError, encode, header, parse_message

#: The key each direct port takes first (the embedded metastore's); ports not here take none.
KEYS: dict[int, KeySource] = {}

DATABASE = "hmsbench"
START_TIMEOUT = 300.0


def _die_with_parent() -> None:
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Daemon:
    def __init__(self, workdir: Path, name: str, catalog: str, ttl: str) -> None:
        self.dir = workdir / name
        self.dir.mkdir(parents=True)
        self.port, self.http_port, self.hms_port = _free_port(), _free_port(), _free_port()
        config = (
            "server:\n  host: 127.0.0.1\n"
            f"  port: {self.port}\n  http-port: {self.http_port}\n  hms-port: {self.hms_port}\n"
            f"  data-dir: {json.dumps(str(self.dir / 'data'))}\n  log-level: warning\n"
            f"catalogs:\n  - name: main\n    type: hive\n    default: true\n{catalog}"
            f"cache: {{ttl: {ttl}}}\n"
            "dynamic-tables: {warm-analyzer: false}\n"
        )
        (self.dir / "catalogd.yaml").write_text(config)
        self.log = open(self.dir / "catalogd.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "catalogd"), "serve", "--config", str(self.dir / "catalogd.yaml")],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon {name} exited; see {self.dir / 'catalogd.log'}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"daemon {name} not ready within {START_TIMEOUT:.0f}s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class _Client(ThriftHiveMetastore.Client):  # type: ignore[misc]
    """A metastore client with the C-accelerated binary protocol: it decodes a reply about as
    fast as a JVM client (Spark's) does, so the figures are the servers', not the client's
    (hmsclient's pure-Python protocol spends ~0.2 ms decoding one table)."""

    def __init__(self, port: int) -> None:
        sock = TSocket.TSocket("127.0.0.1", port)
        self._transport = TTransport.TBufferedTransport(sock)
        self._transport.open()
        send_key(sock.handle, KEYS.get(port))
        super().__init__(TBinaryProtocolAccelerated(self._transport))

    def close(self) -> None:
        self._transport.close()


def _client(port: int) -> Any:
    return _Client(port)


def _serving(serve: Any) -> socket.socket:
    """A loopback listener whose connections are each given to ``serve`` on a thread of their own."""
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(sock,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


class KeyForwarder:
    """A loopback port that sends ``key`` to ``port`` first, then copies bytes both ways (for Spark,
    whose metastore client cannot send the key)."""

    def __init__(self, port: int, key: KeySource) -> None:
        self._target, self._key = port, key
        self._listener = _serving(self._forward)
        self.port = int(self._listener.getsockname()[1])

    def _forward(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self._target))
        send_key(upstream, self._key)
        for a, b in ((client, upstream), (upstream, client)):
            a.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._copy, args=(a, b), daemon=True).start()

    @staticmethod
    def _copy(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._listener.close()


class EchoServer:
    """The floor of a cached read: a bare Thrift server in Python that answers every call with
    the same reply bytes catalogd's cache answers (its seqid set), one thread per connection as
    the endpoint has, and the same message reader (``MessageStream``), with nothing else: no
    routing, no rules, no cache lookup. What catalogd costs above it is catalogd's."""

    def __init__(self, reply: bytes) -> None:
        answer = parse_message(reply)
        self._name, self._body = answer.name, answer.body
        self._listener = _serving(self._serve)
        self.port = int(self._listener.getsockname()[1])

    def _serve(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = MessageStream(sock.recv, 1 << 20)
        with contextlib.suppress(OSError, EOFError, ProtocolError):
            while True:
                call = stream.read_message()
                sock.sendall(header(self._name, REPLY, call.seqid) + self._body)
        sock.close()

    def close(self) -> None:
        self._listener.close()


def _recorded_reply(port: int) -> bytes:
    """The bytes of one ``get_table`` reply of the endpoint on ``port``, as a client receives them."""
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        sock.sendall(encode("get_table", CALL, 1, ThriftHiveMetastore.get_table_args(DATABASE, "wide")))
        stream = MessageStream(sock.recv, 1 << 24)
        return stream.read_message().raw
    finally:
        sock.close()


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 3)


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# ---------------------------------------------------------------- set-up


def _sd(location: str, columns: int = 10) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(f"c{i}", "string", f"column {i}") for i in range(columns)],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        compressed=False, numBuckets=-1,
        serdeInfo=hms.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                                {"serialization.format": "1"}),
        bucketCols=[], sortCols=[], parameters={},
        skewedInfo=hms.SkewedInfo([], [], {}), storedAsSubDirectories=False,
    )


def _make_table(direct: Any, warehouse: str, name: str, partitions: int) -> None:
    location = f"{warehouse}/{DATABASE}.db/{name}"
    table = hms.Table(tableName=name, dbName=DATABASE, owner="bench", sd=_sd(location),
                      partitionKeys=[hms.FieldSchema("ds", "string", None)] if partitions else [],
                      parameters={"EXTERNAL": "FALSE"}, tableType="MANAGED_TABLE")
    direct.create_table(table)
    batch = []
    for i in range(partitions):
        ds = f"2024-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}-{i}"
        batch.append(hms.Partition(values=[ds], dbName=DATABASE, tableName=name,
                                   sd=_sd(f"{location}/ds={ds}"), parameters={"numFiles": "1", "totalSize": "1024"}))
        if len(batch) == 500:
            direct.add_partitions(batch)
            batch = []
    if batch:
        direct.add_partitions(batch)


# ---------------------------------------------------------------- measurements


def get_table_latency(ports: dict[str, int], rounds: int) -> dict[str, Any]:
    clients = {side: _client(port) for side, port in ports.items()}
    samples: dict[str, list[float]] = {side: [] for side in ports}
    try:
        for client in clients.values():
            for _ in range(50):
                client.get_table(DATABASE, "wide")
        order = list(ports)
        for i in range(rounds):
            for side in order[i % len(order):] + order[:i % len(order)]:
                samples[side].append(_timed(lambda c=clients[side]: c.get_table(DATABASE, "wide")))
    finally:
        for client in clients.values():
            client.close()
    return {side: {"p50_ms": _ms(v, 0.5), "p99_ms": _ms(v, 0.99)} for side, v in samples.items()}


def get_partitions_latency(ports: dict[str, int], rounds: int) -> dict[str, Any]:
    clients = {side: _client(port) for side, port in ports.items()}
    samples: dict[str, list[float]] = {side: [] for side in ports}
    sizes = {}
    try:
        for side, client in clients.items():
            sizes[side] = len(client.get_partitions(DATABASE, "parts2000", -1))
        for i in range(rounds):
            for side in (list(ports) if i % 2 == 0 else list(reversed(list(ports)))):
                samples[side].append(_timed(lambda c=clients[side]: c.get_partitions(DATABASE, "parts2000", -1)))
    finally:
        for client in clients.values():
            client.close()
    return {side: {"p50_ms": _ms(v, 0.5), "p99_ms": _ms(v, 0.99), "partitions": sizes[side]}
            for side, v in samples.items()}


def _hammer(port: int, seconds: float, start_at: float, out: Any) -> None:
    client = _client(port)
    client.get_table(DATABASE, "wide")
    while time.time() < start_at:
        time.sleep(0.001)
    count = 0
    end = start_at + seconds
    while time.time() < end:
        client.get_table(DATABASE, "wide")
        count += 1
    client.close()
    out.put(count)


def throughput(port: int, clients: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    start_at = time.time() + 3.0
    procs = [ctx.Process(target=_hammer, args=(port, seconds, start_at, out)) for _ in range(clients)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join()
    return round(total / seconds, 1)


PLANNER = textwrap.dedent("""
    import json, sys, time
    from pyspark.sql import SparkSession
    uri, queries = sys.argv[1], int(sys.argv[2])
    spark = (SparkSession.builder.master("local[1]").appName("plan").enableHiveSupport()
             .config("spark.ui.enabled", "false").config("spark.hadoop.hive.metastore.uris", uri)
             .config("spark.hadoop.hive.metastore.filter.hook",
                     "org.apache.hadoop.hive.ql.security.authorization.plugin.AuthorizationMetaStoreFilterHook")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    def plan(i):
        df = spark.sql(f"SELECT c0, count(*) FROM hmsbench.parts200 WHERE ds = '{DAYS[i % len(DAYS)]}' GROUP BY c0")
        df._jdf.queryExecution().executedPlan()
    DAYS = [r[0].split("=", 1)[1] for r in spark.sql("SHOW PARTITIONS hmsbench.parts200").collect()]
    for i in range(10):
        plan(i)
    start = time.perf_counter()
    for i in range(queries):
        plan(i)
    print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
""")


def spark_planning(uris: dict[str, str], queries: int, workdir: Path) -> dict[str, Any]:
    script = workdir / "planner.py"
    script.write_text(PLANNER)
    result = {}
    for side, uri in uris.items():
        done = subprocess.run([sys.executable, str(script), uri, str(queries)], capture_output=True, text=True,
                              timeout=900, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        line = next((x for x in done.stdout.splitlines() if x.startswith("{")), None)
        if line is None:
            raise RuntimeError(f"planner on {side} failed: {done.stderr[-2000:]}")
        result[side] = {"seconds": round(json.loads(line)["seconds"], 3)}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (about a minute)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    rounds, part_rounds, seconds, queries = (300, 5, 3.0, 30) if args.quick else (2000, 20, 8.0, 100)
    with tempfile.TemporaryDirectory(prefix="hms-bench-") as tmp:
        workdir = Path(tmp)
        daemons: list[Daemon] = []
        try:
            relay = Daemon(workdir, "relay", "    connection: {hive.metastore.uris: embedded}\n", "0s")
            daemons.append(relay)
            with CatalogClient(f"127.0.0.1:{relay.port}") as c:
                info = c.get_catalog("main")
            metastore = info.metastore or ""
            direct_port = int(metastore.rsplit(":", 1)[1])
            KEYS[direct_port] = file_key(relay.dir / "data" / "catalogs" / "main" / "conf" / KEY_FILE)
            key_file = json.dumps(str(relay.dir / "data" / "catalogs" / "main" / "conf" / KEY_FILE))
            cached = Daemon(workdir, "cached", f"    connection: {{hive.metastore.uris: \"{metastore}\"}}\n"
                                               f"    metastore-key-file: {key_file}\n", "1h")
            daemons.append(cached)
            direct = _client(direct_port)
            warehouse = (info.warehouse or "").rstrip("/")
            direct.create_database(hms.Database(name=DATABASE, locationUri=f"{warehouse}/{DATABASE}.db",
                                                parameters={}))
            _make_table(direct, warehouse, "wide", 0)
            _make_table(direct, warehouse, "parts2000", 2000)
            _make_table(direct, warehouse, "parts200", 200)
            direct.close()
            echo = EchoServer(_recorded_reply(cached.hms_port))
            ports = {"direct": direct_port, "endpoint_uncached": relay.hms_port,
                     "endpoint_cached": cached.hms_port, "echo_floor": echo.port}
            latency = get_table_latency(ports, rounds)
            partitions = get_partitions_latency({"direct": direct_port, "endpoint": relay.hms_port}, part_rounds)
            ops = {"direct": throughput(direct_port, 32, seconds),
                   "endpoint_cached": throughput(cached.hms_port, 32, seconds),
                   "echo_floor": throughput(echo.port, 32, seconds)}
            echo.close()
            forwarder = KeyForwarder(direct_port, KEYS[direct_port])
            planning = spark_planning({"direct": f"thrift://127.0.0.1:{forwarder.port}",
                                       "endpoint_cached": f"thrift://127.0.0.1:{cached.hms_port}"},
                                      queries, workdir)
        finally:
            for daemon in reversed(daemons):
                daemon.stop()
    overhead = round(latency["endpoint_uncached"]["p50_ms"] - latency["direct"]["p50_ms"], 3)
    cached_ratio = round(latency["endpoint_cached"]["p50_ms"] / latency["direct"]["p50_ms"], 3)
    parts_ratio = round(partitions["endpoint"]["p50_ms"] / partitions["direct"]["p50_ms"], 3)
    ops_ratio = round(ops["endpoint_cached"] / ops["direct"], 2)
    floor_p50 = round(latency["endpoint_cached"]["p50_ms"] / latency["echo_floor"]["p50_ms"], 2)
    floor_p99 = round(latency["endpoint_cached"]["p99_ms"] / latency["echo_floor"]["p99_ms"], 2)
    plan_ratio = round(planning["endpoint_cached"]["seconds"] / planning["direct"]["seconds"], 3)
    report = {
        "benchmark": "hms_endpoint",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average": [round(x, 2) for x in os.getloadavg()]},
        "get_table": latency,
        "get_partitions_2000": partitions,
        "clients_32_ops_per_second": {**ops, "clients": "32 processes, persistent connections"},
        "spark_planning_100_queries": {**planning, "queries": queries, "partitions": 200},
        "goals": {
            "pass_through_overhead_p50_ms": {"value": overhead, "goal": "<= 0.3", "met": overhead <= 0.3},
            "cached_get_table_vs_direct_p50": {"value": cached_ratio, "goal": "<= 0.1", "met": cached_ratio <= 0.1},
            "get_partitions_2000_vs_direct_p50": {"value": parts_ratio, "goal": "<= 1.2", "met": parts_ratio <= 1.2},
            "clients_32_throughput_vs_direct": {"value": ops_ratio, "goal": ">= 6", "met": ops_ratio >= 6},
            "cached_get_table_vs_echo_floor_p50": {"value": floor_p50, "goal": "<= 3", "met": floor_p50 <= 3},
            "cached_get_table_vs_echo_floor_p99": {"value": floor_p99, "goal": "<= 3", "met": floor_p99 <= 3},
            "spark_planning_vs_direct": {"value": plan_ratio, "goal": "<= 1.0", "met": plan_ratio <= 1.0},
        },
        "median_of": {"get_table_rounds": rounds, "get_partitions_rounds": part_rounds},
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
