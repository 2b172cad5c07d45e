"""Helpers for the integration tests: start and stop real daemons, look at processes and files."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import pytest
import yaml
from polling import wait_until

from .ports import free_port

#: ``staging.secret`` of the session daemon, and of the extra daemons that must treat its stages as
#: their own (two daemons on one metastore share the key that signs stages).
SESSION_STAGE_SECRET = "catalogd-integration-session-stage-secret"
#: The real console script of this venv (not a `python -m` stand-in).
CATALOGD = Path(sys.executable).parent / "catalogd"
READY_TIMEOUT = 180.0
#: SIGTERM to exit: the shutdown grace (10s by default) and a metastore JVM's stop, on a busy machine.
STOP_TIMEOUT = 60.0

T = TypeVar("T")


class NotReady(Exception):
    """The daemon answered, but not yet ready (polled again)."""


def clean_env() -> dict[str, str]:
    """The environment for child processes, without settings that would point them elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in ("CATALOGD_SERVER", "CATALOGD_CONFIG", "CATALOGD_TOKEN")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def closed_by_server(sock: socket.socket, timeout: float | None = None) -> bool:
    """Reads until the daemon closes ``sock`` (end of file or a reset); a socket timeout
    (``timeout`` seconds, else the socket's own) fails the test."""
    if timeout is not None:
        sock.settimeout(timeout)
    while True:
        try:
            if sock.recv(4096) == b"":
                return True
        except ConnectionResetError:
            return True


def http_get(url: str, timeout: float = 10.0, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    """(status, body) of a GET; HTTP errors are answers too. An https URL without ``context``
    is not verified (readiness probes of daemons with test certificates)."""
    if context is None and url.startswith("https:"):
        context = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def log_text(daemon: Daemon) -> str:
    """The whole of a daemon's log so far ("" before it has one)."""
    try:
        return daemon.log_path.read_text(errors="replace")
    except OSError:
        return ""


def write_config(path: Path, port: int, http_port: int, data_dir: Path, catalogs: list[dict[str, Any]],
                 extra: dict[str, Any] | None = None) -> Path:
    extra = dict(extra or {})
    config = {
        # An extra ``server`` section adds to these keys (e.g. ``tls``).
        "server": {"host": "127.0.0.1", "port": port, "http-port": http_port, "hms-port": free_port(),
                   "data-dir": str(data_dir), **extra.pop("server", {})},
        "catalogs": catalogs,
        # A test daemon starts no analyzer JVM it may not need (one Spark JVM less per daemon
        # on a 2-core machine); a test that creates dynamic tables gets one on first use, or
        # passes its own dynamic-tables section.
        "dynamic-tables": {"warm-analyzer": False},
        **extra,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def embedded_catalog(name: str = "main", metastore_port: int = 0, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "type": "hive", "default": True}
    if metastore_port:
        entry["metastore-port"] = metastore_port
    entry["connection"] = {"hive.metastore.uris": "embedded"}
    entry.update(extra)
    return entry


@dataclass
class Daemon:
    """A ``catalogd serve`` child process."""

    proc: subprocess.Popen[bytes]
    address: str
    http: str
    data_dir: Path
    config_path: Path
    log_path: Path
    #: What the readiness probe connects to an https port with (None: plain http, or not verified).
    probe_context: ssl.SSLContext | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def hms_address(self) -> tuple[str, int]:
        """(host, port) of the daemon's HMS endpoint (from its config; a fixed port in tests)."""
        server = yaml.safe_load(self.config_path.read_text())["server"]
        return "127.0.0.1", int(server["hms-port"])

    @property
    def hms_uri(self) -> str:
        host, port = self.hms_address
        return f"thrift://{host}:{port}"

    def log(self, lines: int = 40) -> str:
        return tail(self.log_path, lines)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until ``/readyz`` answers 200; fail at once, with the log, if the daemon exits."""

        def ready_or_exited() -> str:
            if self.proc.poll() is not None:
                return "exited"
            status, body = http_get(f"{self.http}/readyz", timeout=2.0, context=self.probe_context)
            if status != 200:
                raise NotReady(f"/readyz answered {status} {body.strip()}")
            return "ready"

        try:
            outcome = wait_until(ready_or_exited, timeout, what=f"catalogd to be ready at {self.http}", every=0.25)
        except AssertionError as e:
            raise RuntimeError(f"{e}; log {self.log_path}:\n{self.log()}") from None
        if outcome == "exited":
            raise RuntimeError(
                f"catalogd exited with code {self.proc.returncode} before it was ready; "
                f"log {self.log_path}:\n{self.log()}"
            )

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM and wait; SIGKILL if it does not go. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def spawn_daemon(config_path: Path, data_dir: Path, log_path: Path, env: dict[str, str] | None = None) -> Daemon:
    """Start ``catalogd serve --config FILE`` (not waiting for it to be ready); ``env`` adds variables."""
    config = yaml.safe_load(config_path.read_text())
    server = config["server"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [str(CATALOGD), "serve", "--config", str(config_path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**clean_env(), **(env or {})},
        )
    return Daemon(
        proc=proc,
        address=f"127.0.0.1:{server['port']}",
        http=f"{'https' if server.get('tls') else 'http'}://127.0.0.1:{server['http-port']}",
        data_dir=data_dir,
        config_path=config_path,
        log_path=log_path,
        probe_context=_probe_context(server.get("tls")),
    )


def _probe_context(tls: dict[str, Any] | None) -> ssl.SSLContext | None:
    """Under mutual TLS the probe shows the daemon's own certificate (the tests' is for both purposes)."""
    if not tls or not tls.get("client-ca"):
        return None
    context = ssl._create_unverified_context()
    context.load_cert_chain(tls["cert"], tls["key"])
    return context


def start_daemon(config_path: Path, data_dir: Path, log_path: Path, timeout: float = READY_TIMEOUT,
                 env: dict[str, str] | None = None) -> Daemon:
    daemon = spawn_daemon(config_path, data_dir, log_path, env)
    try:
        daemon.wait_ready(timeout)
    except BaseException:
        daemon.stop()
        raise
    return daemon


# ---------------------------------------------------------------- processes

def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def metastore_pids(data_dir: Path) -> list[int]:
    """Pids of the embedded metastores whose Derby home is under ``data_dir``.

    Found by command line (``-Dderby.system.home=<data-dir>/catalogs/<name>`` and the
    HMS main class), so it works after the daemon died and the JVM was re-parented.
    """
    marker = f"-Dderby.system.home={data_dir}/catalogs/"
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        is_metastore = any(w.startswith(marker) for w in words) and any(w.endswith("HiveMetaStore") for w in words)
        if is_metastore and process_alive(int(entry.name)):
            pids.append(int(entry.name))
    return pids


def parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def wait_gone(pid: int, timeout: float) -> bool:
    """Whether ``pid`` is gone within ``timeout`` seconds."""
    try:
        wait_until(lambda: not process_alive(pid), timeout, what=f"pid {pid} to end", every=0.1)
    except AssertionError:
        return False
    return True


def answer_within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result, or its exception; fails the test if it has not answered within ``seconds``.

    For proving that something gives up in time (a timeout, a cancelled job) with a deadline
    instead of a measured duration. A call that overruns is left running on its thread. The
    failure is pytest's own (not an ``Exception``), so ``pytest.raises`` around this never takes it
    for the error it expects.
    """
    pool = ThreadPoolExecutor(1, thread_name_prefix="answer-within")
    try:
        return pool.submit(call).result(timeout=seconds)
    except FutureTimeout:
        pytest.fail(f"no answer within {seconds:.0f}s")
    finally:
        pool.shutdown(wait=False)


# ---------------------------------------------------------------- files and wire

def local_path(uri: str) -> Path:
    """``file:/x/y`` or ``file:///x/y`` -> ``/x/y``."""
    parsed = urlparse(uri)
    assert parsed.scheme in ("file", ""), f"not a local location: {uri}"
    return Path(unquote(parsed.path))


@contextlib.contextmanager
def raw_thrift(address: str) -> Iterator[Any]:
    """A bare generated CatalogService client: requests the catalogd client would refuse to send."""
    from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
    from thrift.transport import TSocket, TTransport

    from catalogd.gen.catalogd_thrift import CatalogService

    host, port = address.rsplit(":", 1)
    transport = TTransport.TFramedTransport(TSocket.TSocket(host, int(port)))
    transport.open()
    try:
        yield CatalogService.Client(TBinaryProtocolAccelerated(transport))
    finally:
        transport.close()


def metastore_key_file(data_dir: Path, catalog: str = "main") -> Path:
    """The key file of a daemon's embedded metastore: a client of that metastore sends the key first."""
    from catalogd.metastore.access_key import KEY_FILE

    return data_dir / "catalogs" / catalog / "conf" / KEY_FILE


@contextlib.contextmanager
def hms_connection(address: tuple[str, int], user: str | None = None, key_file: Path | None = None) -> Iterator[Any]:
    """A plain HMS client connection (the ThriftHiveMetastore client hmsclient ships), as ``user``
    (``set_ugi``) when one is given; ``key_file``: an embedded metastore's key, sent first (as
    catalogd's own clients do), for a connection straight to that metastore."""
    from hmsclient import hmsclient
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    from catalogd.metastore.access_key import file_key, send_key

    sock = TSocket.TSocket(address[0], address[1])
    protocol = TBinaryProtocol.TBinaryProtocol(TTransport.TBufferedTransport(sock))
    client = hmsclient.HMSClient(iprot=protocol, oprot=protocol)
    client.open()
    try:
        if key_file is not None:
            send_key(sock.handle, file_key(key_file))
        if user is not None:
            client.set_ugi(user, [user])
        yield client
    finally:
        client.close()


# ---------------------------------------------------------------- Spark

def short(name: str) -> str:
    """``main.db.t`` -> ``db.t``, ``main.db`` -> ``db``: the name in Spark's session catalog (main's metastore)."""
    return name.split(".", 1)[1]


def sql(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    """A statement's result rows as tuples, in the order Spark gives them."""
    return [tuple(row) for row in spark.sql(statement).collect()]


def sorted_rows(found: Any) -> list[tuple[Any, ...]]:
    """Rows as tuples, sorted, NULLs first in a column (as Spark sorts them ascending)."""
    return sorted((tuple(r) for r in found), key=lambda r: tuple((v is not None, v) for v in r))


def spark_rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    """The rows of the table Spark names ``table`` (``db.t``), sorted, read after a refresh of what
    Spark has cached about it."""
    spark.catalog.refreshTable(table)
    return sorted_rows(spark.table(table).collect())


def rows(spark: Any, name: str) -> list[tuple[Any, ...]]:
    """The rows of main's table ``name`` (``main.db.t``), sorted, as Spark reads them."""
    return spark_rows(spark, short(name))


#: A Spark application of its own (a second JVM: the test session's SparkSession is another
#: daemon's), reading SQL statements from stdin and answering each with one JSON line.
SPARK_CHILD = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master("local[1]").appName("restart-child").enableHiveSupport()
    for key, value in json.loads(sys.argv[1]).items():
        builder = builder.config(key, value)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            rows = [list(r) for r in spark.sql(line.strip()).collect()]
            print(json.dumps({"rows": rows}), flush=True)
        except Exception as e:
            print(json.dumps({"error": str(e)[:2000]}), flush=True)
""")


class SparkChild:
    """A running SPARK_CHILD: ``sql(statement)`` answers the statement's JSON line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    @classmethod
    def start(cls, script: Path, conf: dict[str, str], env: dict[str, str] | None = None) -> SparkChild:
        """SPARK_CHILD written to ``script`` and started on the Spark configuration ``conf``, in
        ``env`` (by default clean_env()). Its JVM's temporary files (Spark's local dirs, Hive's
        ``<uuid>_resources``) go next to ``script``: a child killed with SIGKILL leaves them there."""
        from catalogd.dynamic.runner import with_tmp_dir

        script.write_text(SPARK_CHILD)
        java_tmp = script.with_name(f"{script.stem}-tmp")
        java_tmp.mkdir(exist_ok=True)
        conf = with_tmp_dir(conf, java_tmp)
        return cls(subprocess.Popen([sys.executable, str(script), json.dumps(conf)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                    env=clean_env() if env is None else env))

    def answer(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the Spark child exited with {self.proc.poll()}")
            if line.startswith("{"):
                return json.loads(line)  # type: ignore[no-any-return]

    def sql(self, statement: str) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(statement + "\n")
        self.proc.stdin.flush()
        return self.answer()
