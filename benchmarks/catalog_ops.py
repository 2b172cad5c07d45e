#!/usr/bin/env python3
"""Latency of catalog operations through catalogd versus straight against its Hive Metastore.

One run starts a real ``catalogd serve`` daemon (one embedded hive catalog, free
ports, a temporary data dir), creates a database with a 20-column table and 100
sibling tables, then times each operation both through catalogd (the Python
``CatalogClient``) and directly against the same HMS (one persistent
``ThriftHiveMetastore.Client`` connection). The two sides alternate which goes
first on every iteration so neither gets a warmer cache or a quieter machine.
Operations are timed one after the other (all get_table rounds, then all
list_tables rounds, ...); ``--mixed`` runs every operation in every iteration
instead, so reads also follow a create+drop (noisier: the metastore is still
busy with the DDL).

``auth`` compares ``get_table`` through two more daemons that differ only in ``auth.enabled``
(both serve a remote catalog on the first daemon's metastore; each client keeps one
connection, which authenticated once): what authentication and the role check add per call.

    .venv/bin/python benchmarks/catalog_ops.py [--iterations 300] [--warmup 30] [--output FILE] [--mixed]
                                               [--cache-ttl 0s]
    .venv/bin/python benchmarks/catalog_ops.py --tls [--iterations 2000] [--warmup 200]

``--cache-ttl`` sets the daemon's ``cache.ttl`` (default: the daemon's own, 1 s):
``0s`` times catalogd's reads uncached (every one goes to the metastore), a long
TTL (``1h``) times them answered from the metadata cache.

``--tls`` measures what TLS adds instead: two daemons on one memory catalog (the backend does
not matter for the transport), one plain and one with ``server.tls`` (a self-signed certificate
made with openssl), and ``get_table`` on one persistent connection to each, alternating.

``--kerberos`` measures what Kerberos adds on the HMS endpoint: a real MIT KDC in a temporary
directory (tests/integration/kdc.py), two daemons on one memory catalog, one plain and one with
``auth.kerberos``; the set-up of a connection (connect, SASL GSSAPI with a ticket from the cache,
the first call) and a call on an open connection (``get_database``), against plain TCP, alternating.

``--guessing`` measures wrong tokens per second that the daemon checks, on one Thrift API
connection as fast as it answers, with the back-off off (``auth.throttle.base-delay: 0s``) and
on (the defaults), ``--seconds`` each.

    .venv/bin/python benchmarks/catalog_ops.py --kerberos [--iterations 300] [--warmup 30]
    .venv/bin/python benchmarks/catalog_ops.py --guessing [--seconds 10]

Prints one JSON document (and writes it to FILE when --output is given). The
daemon (and with it the embedded metastore) is shut down at the end, also when
something fails.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import platform
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport import TSocket, TTransport

from catalogd.client import CatalogClient
from catalogd.errors import CatalogError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.metastore.access_key import KEY_FILE, file_key, send_key
from catalogd.model import Column

CATALOG = "main"
DATABASE = "bench"
TABLE = "orders"
SIBLINGS = 100
START_TIMEOUT = 300.0
STOP_TIMEOUT = 60.0

#: 20 columns of the usual kinds (what a fact table looks like).
COLUMNS = [
    Column("id", "bigint", "primary key"),
    Column("customer_id", "bigint"),
    Column("order_ts", "timestamp"),
    Column("order_date", "date"),
    Column("status", "string", "open, shipped or closed"),
    Column("amount", "decimal(12,2)", "in EUR"),
    Column("tax", "decimal(12,2)"),
    Column("discount", "double"),
    Column("quantity", "int"),
    Column("is_gift", "boolean"),
    Column("channel", "varchar(32)"),
    Column("country", "char(2)"),
    Column("note", "string"),
    Column("payload", "binary"),
    Column("tags", "array<string>"),
    Column("attributes", "map<string,string>"),
    Column("address", "struct<street:string,city:string,zip:string>"),
    Column("line_items", "array<struct<sku:string,qty:int,price:decimal(10,2)>>"),
    Column("score", "float"),
    Column("flags", "smallint"),
]

PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
PARQUET_INPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
PARQUET_OUTPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"


# ---------------------------------------------------------------- daemon


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the benchmark dies, so no daemon is left behind."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Daemon:
    """A ``catalogd serve`` child process with one embedded hive catalog."""

    def __init__(self, workdir: Path, cache_ttl: str | None = None) -> None:
        self.workdir = workdir
        self.cache_ttl = cache_ttl
        self.data_dir = workdir / "data"
        self.config_path = workdir / "catalogd.yaml"
        self.log_path = workdir / "catalogd.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.http_port = 0
        self.tls = False

    def config(self) -> str:
        """The daemon's YAML; subclasses add sections."""
        # Port 0: the daemon binds free ports itself and writes them to <data-dir>/catalogd.json.
        return (
            "server:\n"
            "  host: 127.0.0.1\n"
            "  port: 0\n"
            "  http-port: 0\n"
            "  hms-port: 0\n"
            f"  data-dir: {json.dumps(str(self.data_dir))}\n"
            "  log-level: warning\n"
            "catalogs:\n"
            f"  - name: {CATALOG}\n"
            "    type: hive\n"
            "    connection:\n"
            "      hive.metastore.uris: embedded\n"
        ) + (f"cache:\n  ttl: {self.cache_ttl}\n" if self.cache_ttl else "")

    @property
    def metastore_key_file(self) -> Path:
        """The key file of the catalog's embedded metastore (a direct client sends the key first)."""
        return self.data_dir / "catalogs" / CATALOG / "conf" / KEY_FILE

    def start(self) -> None:
        self.config_path.write_text(self.config())
        cmd = [sys.executable, "-m", "catalogd.cli", "serve", "--config", str(self.config_path)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        assert self.process is not None
        state_file = self.data_dir / "catalogd.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"catalogd exited with code {self.process.returncode}:\n{self.log_tail()}")
            if not self.http_port and state_file.exists():
                try:
                    state = json.loads(state_file.read_text())
                    self.port, self.http_port = int(state["port"]), int(state["http_port"])
                except (ValueError, KeyError):
                    pass  # written right now; read it again
            if self.http_port and self._ready():
                return
            time.sleep(0.25)
        raise RuntimeError(f"catalogd was not ready within {START_TIMEOUT:.0f}s:\n{self.log_tail()}")

    def _ready(self) -> bool:
        scheme, context = ("https", ssl._create_unverified_context()) if self.tls else ("http", None)
        try:
            with urllib.request.urlopen(f"{scheme}://127.0.0.1:{self.http_port}/readyz", timeout=5,
                                        context=context) as reply:
                return reply.status == 200
        except (urllib.error.URLError, OSError):
            return False

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


class RemoteDaemon(Daemon):
    """A daemon whose catalog is a remote one on ``metastore``; with ``auth``, one admin principal."""

    def __init__(self, workdir: Path, metastore: str, auth: bool, key_file: Path) -> None:
        super().__init__(workdir)
        self.metastore = metastore
        self.auth = auth
        self.key_file = key_file

    def config(self) -> str:
        text = super().config().replace(
            "hive.metastore.uris: embedded",
            f"hive.metastore.uris: {self.metastore}\n    metastore-key-file: {json.dumps(str(self.key_file))}")
        if self.auth:
            # The token comes from the environment the daemon inherits, not from the file.
            text += ("auth:\n  enabled: true\n  principals:\n"
                     f"    - name: bench\n      token: ${{{AUTH_TOKEN_ENV}}}\n"
                     "  grants:\n    - {principal: bench, catalog: \"*\", role: admin}\n")
        return text


AUTH_TOKEN_ENV = "CATALOGD_BENCH_TOKEN"


def measure_auth(metastore: str, key_file: Path, workdir: Path, iterations: int, warmup: int) -> dict[str, Any]:
    """``get_table`` through a daemon with auth off and one with auth on, alternating, one connection each."""
    import secrets

    token = secrets.token_hex(24)
    os.environ[AUTH_TOKEN_ENV] = token
    daemons = {"off": RemoteDaemon(workdir / "auth-off", metastore, auth=False, key_file=key_file),
               "on": RemoteDaemon(workdir / "auth-on", metastore, auth=True, key_file=key_file)}
    clients: dict[str, CatalogClient] = {}
    try:
        for side, daemon in daemons.items():
            daemon.workdir.mkdir()
            daemon.start()
            clients[side] = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=60, token=token if side == "on" else "")
        name = f"{CATALOG}.{DATABASE}.{TABLE}"
        samples: dict[str, list[int]] = {"off": [], "on": []}
        for i in range(warmup + iterations):
            order = ["off", "on"] if i % 2 == 0 else ["on", "off"]
            for side in order:
                elapsed = timed(lambda _i, c=clients[side]: c.get_table(name), i)
                if i >= warmup:
                    samples[side].append(elapsed)
        off, on = summary(samples["off"]), summary(samples["on"])
        added = round(on["p50_ms"] - off["p50_ms"], 4)
        return {"get_table": {"auth_off": off, "auth_on": on, "added_p50_ms": added},
                "target": {"added_p50_max_ms": 0.2, "met": added <= 0.2}}
    finally:
        for c in clients.values():
            c.close()
        for daemon in daemons.values():
            daemon.stop()
        os.environ.pop(AUTH_TOKEN_ENV, None)


# ---------------------------------------------------------------- direct HMS


class DirectHms:
    """One persistent connection to the metastore, as a well-written HMS client would keep.

    ``key_file``: an embedded metastore's key file (``Daemon.metastore_key_file``), sent first as
    catalogd's own clients do; None for catalogd's HMS endpoint.
    """

    def __init__(self, uri: str, key_file: Path | None = None) -> None:
        host, port = uri.split(",")[0].removeprefix("thrift://").rsplit(":", 1)
        self.socket = TSocket.TSocket(host, int(port))
        self.socket.setTimeout(60_000)
        self.transport = TTransport.TBufferedTransport(self.socket)
        self.client = ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(self.transport))
        self.transport.open()
        send_key(self.socket.handle, file_key(key_file) if key_file is not None else None)

    def close(self) -> None:
        self.transport.close()


def hms_table(database: str, name: str) -> hms.Table:
    """The HMS table catalogd creates for a managed parquet table with COLUMNS."""
    sd = hms.StorageDescriptor(
        cols=[hms.FieldSchema(name=c.name, type=c.type, comment=c.comment) for c in COLUMNS],
        location=None,
        inputFormat=PARQUET_INPUT,
        outputFormat=PARQUET_OUTPUT,
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib=PARQUET_SERDE, parameters={}),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )
    return hms.Table(
        tableName=name, dbName=database, owner=None, createTime=int(time.time()), lastAccessTime=0, retention=0,
        sd=sd, partitionKeys=[], parameters={}, tableType="MANAGED_TABLE",
    )


# ---------------------------------------------------------------- measuring


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def summary(samples_ns: list[int]) -> dict[str, float]:
    ms = sorted(s / 1e6 for s in samples_ns)
    return {
        "p50_ms": round(percentile(ms, 0.50), 4),
        "p95_ms": round(percentile(ms, 0.95), 4),
        "mean_ms": round(sum(ms) / len(ms), 4),
        "samples": len(ms),
    }


def timed(fn: Callable[[int], Any], i: int) -> int:
    start = time.perf_counter_ns()
    fn(i)
    return time.perf_counter_ns() - start


def run(iterations: int, warmup: int, mixed: bool = False, cache_ttl: str | None = None,
        auth: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-") as tmp:
        daemon = Daemon(Path(tmp), cache_ttl)
        client: CatalogClient | None = None
        direct: DirectHms | None = None
        try:
            started = time.monotonic()
            daemon.start()
            startup_s = time.monotonic() - started
            client = CatalogClient(f"127.0.0.1:{daemon.port}", timeout=60)
            info = client.get_catalog(CATALOG)
            if not info.metastore:
                raise RuntimeError(f"catalog {CATALOG} reports no metastore URI")
            direct = DirectHms(info.metastore, daemon.metastore_key_file)

            client.create_database(f"{CATALOG}.{DATABASE}", comment="catalogd benchmark")
            client.create_table(f"{CATALOG}.{DATABASE}.{TABLE}", COLUMNS, comment="the table read in the benchmark")
            for n in range(SIBLINGS):
                client.create_table(f"{CATALOG}.{DATABASE}.sibling_{n:03d}", COLUMNS)
            expected_tables = SIBLINGS + 1

            hc = direct.client

            def catalogd_create_drop(i: int) -> None:
                name = f"{CATALOG}.{DATABASE}.tmp_catalogd_{i}"
                client.create_table(name, COLUMNS)
                client.drop_table(name)

            def direct_create_drop(i: int) -> None:
                name = f"tmp_direct_{i}"
                hc.create_table(hms_table(DATABASE, name))
                hc.drop_table(DATABASE, name, True)

            ops: dict[str, tuple[Callable[[int], Any], Callable[[int], Any]]] = {
                "get_table": (
                    lambda i: client.get_table(f"{CATALOG}.{DATABASE}.{TABLE}"),
                    lambda i: hc.get_table(DATABASE, TABLE),
                ),
                "list_tables": (
                    lambda i: client.list_tables(f"{CATALOG}.{DATABASE}"),
                    lambda i: hc.get_all_tables(DATABASE),
                ),
                "get_database": (
                    lambda i: client.get_database(f"{CATALOG}.{DATABASE}"),
                    lambda i: hc.get_database(DATABASE),
                ),
                "create_drop_table": (catalogd_create_drop, direct_create_drop),
            }

            # Both sides answer the same thing before anything is timed.
            got = client.get_table(f"{CATALOG}.{DATABASE}.{TABLE}")
            raw = hc.get_table(DATABASE, TABLE)
            if [c.name for c in got.columns] != [f.name for f in raw.sd.cols] or len(got.columns) != len(COLUMNS):
                raise RuntimeError("catalogd and HMS disagree about the benchmark table's columns")
            listed = client.list_tables(f"{CATALOG}.{DATABASE}")
            if len(listed) != expected_tables or sorted(hc.get_all_tables(DATABASE)) != listed:
                raise RuntimeError(f"expected {expected_tables} tables, catalogd lists {len(listed)}")

            samples: dict[str, dict[str, list[int]]] = {op: {"catalogd": [], "direct": []} for op in ops}

            def one_round(op: str, i: int) -> None:
                via_catalogd, via_direct = ops[op]
                # Alternate which side goes first, so neither always follows the other.
                order = [("catalogd", via_catalogd), ("direct", via_direct)]
                if i % 2:
                    order.reverse()
                for side, fn in order:
                    elapsed = timed(fn, i)
                    if i >= warmup:
                        samples[op][side].append(elapsed)

            if mixed:
                # Every iteration runs every operation (a get_table right after a create+drop).
                for i in range(warmup + iterations):
                    for op in ops:
                        one_round(op, i)
            else:
                # One operation at a time, the two sides alternating within it.
                for op in ops:
                    for i in range(warmup + iterations):
                        one_round(op, i)

            results: dict[str, Any] = {}
            for op, sides in samples.items():
                c, d = summary(sides["catalogd"]), summary(sides["direct"])
                results[op] = {
                    "catalogd": c,
                    "direct": d,
                    "ratio_p50": round(c["p50_ms"] / d["p50_ms"], 3) if d["p50_ms"] else None,
                    "overhead_ms": round(c["p50_ms"] - d["p50_ms"], 4),
                }
            direct_p50 = results["get_table"]["direct"]["p50_ms"]
            limit = 1.10 * direct_p50 + 0.3
            auth_results = (measure_auth(info.metastore, daemon.metastore_key_file, Path(tmp), iterations, warmup)
                            if auth else None)
            return {
                "benchmark": "catalog_ops",
                "iterations": iterations,
                "warmup": warmup,
                "schedule": "mixed" if mixed else "per-operation",
                "setup": {
                    "tables": expected_tables,
                    "columns": len(COLUMNS),
                    "metastore": info.metastore,
                    "daemon_startup_s": round(startup_s, 1),
                    "cache_ttl": cache_ttl or "default (1s)",
                },
                "ops": results,
                "target": {
                    "get_table_p50_max_ms": round(limit, 4),
                    "get_table_p50_ms": results["get_table"]["catalogd"]["p50_ms"],
                    "met": results["get_table"]["catalogd"]["p50_ms"] <= limit,
                },
                "auth": auth_results,
                "machine": {
                    "cpu_count": os.cpu_count(),
                    "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "platform": platform.platform(),
                    "machine": platform.machine(),
                },
            }
        finally:
            for closer in (client, direct):
                if closer is not None:
                    try:
                        closer.close()
                    except Exception as e:  # a failed close must not keep the daemon running
                        print(f"closing a connection failed: {e}", file=sys.stderr)
            daemon.stop()


class MemoryDaemon(Daemon):
    """A daemon with one memory catalog; ``tls``: every port serves TLS with a self-signed certificate."""

    def __init__(self, workdir: Path, tls: bool, auth: bool = False, extra: str = "") -> None:
        super().__init__(workdir)
        self.tls = tls
        self.auth = auth
        #: More YAML under ``auth:`` (needs ``auth``).
        self.extra = extra
        self.cert = workdir / "server.pem"
        workdir.mkdir(parents=True, exist_ok=True)
        if tls:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                            "-keyout", str(workdir / "server.key"), "-out", str(self.cert)],
                           check=True, capture_output=True)
            (workdir / "server.key").chmod(0o600)

    def config(self) -> str:
        tls = (f"  tls:\n    cert: {json.dumps(str(self.cert))}\n"
               f"    key: {json.dumps(str(self.workdir / 'server.key'))}\n") if self.tls else ""
        return (
            "server:\n  host: 127.0.0.1\n  port: 0\n  http-port: 0\n  hms-port: 0\n"
            f"  data-dir: {json.dumps(str(self.data_dir))}\n  log-level: warning\n{tls}"
            "dynamic-tables:\n  warm-analyzer: false\n"
            f"catalogs:\n  - name: {CATALOG}\n    type: memory\n"
        ) + (f"auth:\n  enabled: true\n  principals:\n    - {{name: bench, token: {BENCH_TOKEN}}}\n"
             f"  grants:\n    - {{principal: bench, catalog: '*', role: admin}}\n{self.extra}" if self.auth else "")

    @property
    def hms_port(self) -> int:
        return int(json.loads((self.data_dir / "catalogd.json").read_text())["hms_port"])


#: The benchmark's own principal's token (a throwaway daemon's).
BENCH_TOKEN = "bench-token-0123456789abcdef"


def run_tls(iterations: int, warmup: int) -> dict[str, Any]:
    """get_table through a plain daemon, a TLS one, and one with TLS and auth on (in this one run),
    one persistent connection each, alternating."""
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-tls-") as tmp:
        plain = MemoryDaemon(Path(tmp) / "plain", tls=False)
        secure = MemoryDaemon(Path(tmp) / "tls", tls=True)
        guarded = MemoryDaemon(Path(tmp) / "tls-auth", tls=True, auth=True)
        clients: list[CatalogClient] = []
        try:
            plain.start()
            secure.start()
            guarded.start()
            sides = {"plain": CatalogClient(f"127.0.0.1:{plain.port}", timeout=60),
                     "tls": CatalogClient(f"127.0.0.1:{secure.port}", timeout=60, tls_ca=str(secure.cert)),
                     "tls_auth": CatalogClient(f"127.0.0.1:{guarded.port}", timeout=60, token=BENCH_TOKEN,
                                               tls_ca=str(guarded.cert))}
            clients.extend(sides.values())
            name = f"{CATALOG}.{DATABASE}.{TABLE}"
            for client in sides.values():
                client.create_database(f"{CATALOG}.{DATABASE}")
                client.create_table(name, COLUMNS)
            samples: dict[str, list[int]] = {side: [] for side in sides}
            order = list(sides.items())
            for i in range(warmup + iterations):
                shift = i % len(order)
                for side, client in order[shift:] + order[:shift]:
                    elapsed = timed(lambda _i, c=client: c.get_table(name), i)
                    if i >= warmup:
                        samples[side].append(elapsed)
            p, t, ta = summary(samples["plain"]), summary(samples["tls"]), summary(samples["tls_auth"])
            added = round(t["p50_ms"] - p["p50_ms"], 4)
            added_both = round(ta["p50_ms"] - p["p50_ms"], 4)
            return {
                "benchmark": "catalog_ops_tls",
                "iterations": iterations,
                "warmup": warmup,
                "setup": {"catalog": "memory", "columns": len(COLUMNS), "connection": "persistent",
                          "tls": ssl.OPENSSL_VERSION},
                "get_table": {"plain": p, "tls": t, "tls_and_auth": ta, "added_p50_ms": added,
                              "added_p50_ms_tls_and_auth": added_both},
                "target": {"added_p50_max_ms": 0.2, "met": added <= 0.2 and added_both <= 0.2},
                "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                            "platform": platform.platform(), "machine": platform.machine()},
            }
        finally:
            for client in clients:
                client.close()
            plain.stop()
            secure.stop()
            guarded.stop()


def _hms_client(port: int, kerberos: bool) -> tuple[Any, Any]:
    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(60_000)
    transport: Any
    if kerberos:
        transport = TTransport.TSaslClientTransport(sock, "localhost", "catalogd", mechanism="GSSAPI", qops=["auth"])
    else:
        transport = TTransport.TBufferedTransport(sock)
    transport.open()
    client = ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(transport))
    if not kerberos:
        client.set_ugi("bench", [])
    return client, transport


def run_kerberos(iterations: int, warmup: int) -> dict[str, Any]:
    """Connection set-up and get_database on the HMS endpoint, plain TCP vs SASL GSSAPI, alternating."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.integration.kdc import running_kdc

    with tempfile.TemporaryDirectory(prefix="catalogd-bench-krb-") as tmp, running_kdc() as kdc:
        root = Path(tmp)
        keytab, user_keytab = root / "catalogd.keytab", root / "bench.keytab"
        kdc.add_principal("catalogd/localhost", keytab)
        kdc.kinit(kdc.add_principal("bench", user_keytab), user_keytab, root / "bench.ccache")
        # This process's Kerberos library reads them at its first use.
        os.environ.update(kdc.env(root / "bench.ccache"))
        krb = (f"  kerberos: {{principal: catalogd/localhost@{kdc.realm}, keytab: {json.dumps(str(keytab))}}}\n")
        # The plain side's user is only what set_ugi claims: trusted for the reads measured here.
        plain = MemoryDaemon(root / "plain", tls=False, auth=True, extra="  trust-asserted-users: reader\n")
        kerberized = MemoryDaemon(root / "krb", tls=False, auth=True, extra=krb)
        transports: list[Any] = []
        try:
            plain.start()
            kerberized.start()
            ports = {"plain": plain.hms_port, "kerberos": kerberized.hms_port}
            with CatalogClient(f"127.0.0.1:{plain.port}", timeout=60, token=BENCH_TOKEN) as c:
                c.create_database(f"{CATALOG}.{DATABASE}")
            with CatalogClient(f"127.0.0.1:{kerberized.port}", timeout=60, token=BENCH_TOKEN) as c:
                c.create_database(f"{CATALOG}.{DATABASE}")
            open_clients = {}
            for side, port in ports.items():
                client, transport = _hms_client(port, side == "kerberos")
                open_clients[side] = client
                transports.append(transport)

            def connect(side: str) -> None:
                client, transport = _hms_client(ports[side], side == "kerberos")
                client.get_database(DATABASE)
                transport.close()

            setup: dict[str, list[int]] = {side: [] for side in ports}
            call: dict[str, list[int]] = {side: [] for side in ports}
            order = list(ports)
            for i in range(warmup + iterations):
                for side in order[i % 2:] + order[:i % 2]:
                    set_up = timed(lambda _i, s=side: connect(s), i)
                    called = timed(lambda _i, s=side: open_clients[s].get_database(DATABASE), i)
                    if i >= warmup:
                        setup[side].append(set_up)
                        call[side].append(called)
            results: dict[str, Any] = {}
            for what, samples in (("connection_setup", setup), ("get_database", call)):
                p, k = summary(samples["plain"]), summary(samples["kerberos"])
                results[what] = {"plain": p, "kerberos": k, "added_p50_ms": round(k["p50_ms"] - p["p50_ms"], 4)}
            return {
                "benchmark": "catalog_ops_kerberos",
                "iterations": iterations,
                "warmup": warmup,
                "setup": {"catalog": "memory", "endpoint": "HMS", "sasl": "GSSAPI, qop auth",
                          "kdc": "MIT krb5kdc on 127.0.0.1 (TCP)",
                          "connection_setup": "connect, SASL (Kerberos: the service ticket cached after the "
                                              "first, no KDC round trip), get_database, close"},
                **results,
                "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                            "platform": platform.platform(), "machine": platform.machine()},
            }
        finally:
            for transport in transports:
                with contextlib.suppress(Exception):
                    transport.close()
            plain.stop()
            kerberized.stop()


def run_guessing(seconds: float) -> dict[str, Any]:
    """Wrong tokens per second checked by the Thrift API, with the failed-auth back-off off and on."""
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-guess-") as tmp:
        sides = {"backoff_off": MemoryDaemon(Path(tmp) / "off", tls=False, auth=True,
                                             extra="  throttle: {base-delay: 0s}\n"),
                 "backoff_on": MemoryDaemon(Path(tmp) / "on", tls=False, auth=True)}
        try:
            results: dict[str, Any] = {}
            for side, daemon in sides.items():
                daemon.start()
                checked = refused = 0
                with CatalogClient(f"127.0.0.1:{daemon.port}", timeout=60) as client:
                    client.ping()
                    started = time.monotonic()
                    while time.monotonic() - started < seconds:
                        try:
                            client._call(lambda c: c.authenticate("wrong-token-0123456789abcdef"))
                        except CatalogError as e:
                            if "too many failed authentications" in e.message:
                                refused += 1
                            else:
                                checked += 1
                    elapsed = time.monotonic() - started
                results[side] = {"seconds": round(elapsed, 2), "checked": checked, "refused_unchecked": refused,
                                 "checked_per_second": round(checked / elapsed, 1),
                                 "attempts_per_second": round((checked + refused) / elapsed, 1)}
                daemon.stop()
            return {"benchmark": "auth_guessing", "surface": "Thrift API authenticate, one connection",
                    "backoff_on_settings": "free-attempts 5, base-delay 1s doubling, max-delay 1 min", **results,
                    "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()}}
        finally:
            for daemon in sides.values():
                daemon.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300, help="timed iterations per operation and side")
    parser.add_argument("--warmup", type=int, default=30, help="untimed iterations first")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON result to this file")
    parser.add_argument("--mixed", action="store_true",
                        help="run all operations in every iteration instead of one operation after the other")
    parser.add_argument("--cache-ttl", default=None,
                        help="the daemon's cache.ttl (0s: reads uncached; default: the daemon's own)")
    parser.add_argument("--tls", action="store_true", help="measure get_table over TLS against plain TCP instead")
    parser.add_argument("--kerberos", action="store_true",
                        help="measure the HMS endpoint with SASL GSSAPI against plain TCP instead")
    parser.add_argument("--guessing", action="store_true",
                        help="measure wrong tokens checked per second with the back-off off and on instead")
    parser.add_argument("--seconds", type=float, default=10.0, help="--guessing: seconds of guessing per side")
    parser.add_argument("--no-auth", dest="auth", action="store_false",
                        help="skip get_table with auth on vs off (two more daemons)")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.warmup < 0:
        parser.error("--iterations must be at least 1 and --warmup at least 0")
    if args.tls:
        return report(lambda: run_tls(args.iterations, args.warmup), args.output)
    if args.kerberos:
        return report(lambda: run_kerberos(args.iterations, args.warmup), args.output)
    if args.guessing:
        return report(lambda: run_guessing(args.seconds), args.output)
    return report(lambda: run(args.iterations, args.warmup, args.mixed, args.cache_ttl, args.auth), args.output)


def tear_down(daemon: Daemon, spark: Any = None, closers: tuple[Any, ...] = ()) -> None:
    """Stop Spark, close connections, stop the daemon; a failure of one step does not skip the next."""
    steps: list[tuple[str, Callable[[], Any]]] = []
    if spark is not None:
        steps.append(("stopping Spark", spark.stop))
    steps += [("closing a connection", c.close) for c in closers if c is not None]
    for what, step in steps:
        try:
            step()
        except Exception as e:  # a failed step must not keep the daemon running
            print(f"{what} failed: {e}", file=sys.stderr)
    daemon.stop()


def report(measure: Callable[[], dict[str, Any]], output: Path | None,
           errors: tuple[type[BaseException], ...] = ()) -> int:
    """Run a benchmark and print its JSON (also to ``output``); 1 with one line on stderr if it failed."""
    # SIGTERM to the benchmark becomes an exception, so the benchmark's `finally` blocks stop
    # what it started (daemon, Spark).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = measure()
    except (RuntimeError, OSError, CatalogError, *errors) as e:
        print(f"benchmark failed: {e}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=2)
    print(text)
    if output:
        output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
