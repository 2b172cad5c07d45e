"""A real Trino server for the tests and benchmarks: one single-node process (coordinator and
worker), bounded memory, in a folder of its own, and a small client of Trino's HTTP protocol.

Trino is installed by ``make engines`` (tests/integration/engines/trino.py); it runs on Java 25.
The client speaks Trino's REST statement protocol (``POST /v1/statement``, then ``nextUri`` until
there is none) with the standard library: a query's rows, or :class:`TrinoError` with Trino's own
message (which carries the metastore's, so catalogd's refusals are seen as Trino's users see them).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .engines import trino as install

__all__ = ["START_TIMEOUT", "TrinoError", "TrinoServer", "hive_catalog", "iceberg_catalog", "iceberg_rest_catalog",
           "running_trino"]

#: A Trino start on a loaded 2-core machine (plugins' class loading, C1 only) takes one to two minutes.
START_TIMEOUT = 300.0
#: One query's wait, polls included (a first query compiles; the metastore behind may be slow).
QUERY_TIMEOUT = 300.0

#: Trino's heap and per-query memory: a handful of tiny tables, on a machine shared by many JVMs.
JVM_OPTIONS = (
    "-Xmx1G", "-Xss2M", "-XX:+UseSerialGC",
    # C1 only, as every JVM of the tests (conftest's JAVA_TOOL_OPTIONS): short-lived, small data.
    "-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=256M",
    "-Djdk.attach.allowAttachSelf=true", "-XX:+EnableDynamicAgentLoading", "--enable-native-access=ALL-UNNAMED",
)


class TrinoError(Exception):
    """A query failed in Trino: ``message`` is Trino's, ``name`` its error name (``HIVE_METASTORE_ERROR``...),
    ``causes`` the messages of the exceptions under it (Trino wraps some metastore errors: a failed
    DROP TABLE says "metastore delete operations failed", the metastore's own message is under it)."""

    def __init__(self, message: str, name: str = "", causes: tuple[str, ...] = ()) -> None:
        text = f"{name}: {message}" if name else message
        super().__init__("; caused by: ".join((text, *causes)))
        self.message, self.name, self.causes = message, name, causes


def _local_fs() -> dict[str, str]:
    # Hadoop's file systems (the plugins' hdfs/ folder): its local one serves Spark's `file:/...`
    # locations as they are. Not Trino's native local file system (fs.native-local.enabled): it lists
    # a `file:/x` directory's files as `local:///x/...`, which the Hive connector takes for files of
    # another directory and skips (every Spark table reads empty; writes land well).
    return {"fs.hadoop.enabled": "true"}


def hive_catalog(metastore: str) -> dict[str, str]:
    """A Hive connector catalog on the HMS at ``metastore`` (``thrift://host:port``)."""
    return {
        "connector.name": "hive",
        "hive.metastore.uri": metastore,
        # Spark's views (Hive views with their original SQL text) are read as views.
        "hive.hive-views.enabled": "true",
        # Spark's data-source tables are external to Hive's eyes (EXTERNAL + a path): let Trino write them too.
        "hive.non-managed-table-writes-enabled": "true",
        # A metastore call through a daemon on a loaded machine may wait more than Trino's 10 s default.
        "hive.metastore.thrift.client.read-timeout": "120s",
        "hive.metastore.thrift.client.connect-timeout": "30s",
        **_local_fs(),
    }


def iceberg_catalog(metastore: str) -> dict[str, str]:
    """An Iceberg connector catalog keeping its tables in the HMS at ``metastore`` (commits take its locks)."""
    return {
        "connector.name": "iceberg",
        "iceberg.catalog.type": "hive_metastore",
        "hive.metastore.uri": metastore,
        "hive.metastore.thrift.client.read-timeout": "120s",
        "hive.metastore.thrift.client.connect-timeout": "30s",
        **_local_fs(),
    }


def iceberg_rest_catalog(uri: str, warehouse: str | None = None, token: str | None = None) -> dict[str, str]:
    """An Iceberg connector catalog on the Iceberg REST catalog at ``uri`` (``http://host:port/iceberg``),
    REST warehouse ``warehouse`` (catalogd: a catalog's name); ``token``: a bearer token sent on every call.

    Trino loads the REST catalog when a query first needs it, not at its start: a server whose REST
    door is down starts all the same, and only that catalog's queries fail."""
    values = {
        "connector.name": "iceberg",
        "iceberg.catalog.type": "rest",
        "iceberg.rest-catalog.uri": uri,
        **_local_fs(),
    }
    if warehouse:
        values["iceberg.rest-catalog.warehouse"] = warehouse
    if token is not None:
        values["iceberg.rest-catalog.security"] = "OAUTH2"
        values["iceberg.rest-catalog.oauth2.token"] = token
    return values


def _properties(values: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


def _causes(failure: Mapping[str, Any]) -> list[str]:
    """The distinct messages under a failure: its causes' and its suppressed exceptions' (Trino puts
    the metastore's error of a failed DROP TABLE among the suppressed), depth first."""
    found: list[str] = []
    for child in [failure.get("cause"), *(failure.get("suppressed") or [])]:
        if child:
            for message in [str(child.get("message") or ""), *_causes(child)]:
                if message and message != failure.get("message") and message not in found:
                    found.append(message)
    return found


def _die_with_parent() -> None:
    # The server dies with the process that started it, even when that one is killed (no finalizer
    # runs then): PR_SET_PDEATHSIG.
    import ctypes

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TrinoServer:
    """A started Trino server; :meth:`query` runs one statement, :meth:`stop` kills its process group."""

    def __init__(self, workdir: Path, catalogs: Mapping[str, Mapping[str, str]], port: int = 0) -> None:
        self.workdir = workdir
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        etc = workdir / "etc"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        home = install.server_home()
        (etc / "config.properties").write_text(_properties({
            "coordinator": "true",
            "node-scheduler.include-coordinator": "true",
            "http-server.http.port": str(self.port),
            "discovery.uri": self.url,
            "query.max-memory": "256MB",
            "query.max-memory-per-node": "256MB",
            "catalog.config-dir": str(etc / "catalog"),
            "plugin.dir": str(home / "plugin"),
            # One node, two cores shared with other JVMs: few threads.
            "task.concurrency": "2",
            "task.max-worker-threads": "4",
        }))
        (etc / "log.properties").write_text("io.trino=WARN\n")
        for name, values in catalogs.items():
            (etc / "catalog" / f"{name}.properties").write_text(_properties(values))
        java = install.java_home() / "bin" / "java"
        command = [
            str(java), *JVM_OPTIONS,
            f"-Dconfig={etc / 'config.properties'}",
            # What the launcher passes from node.properties.
            "-Dnode.environment=catalogd_test", f"-Dnode.id={uuid.uuid4()}", f"-Dnode.data-dir={workdir / 'data'}",
            f"-Dlog.levels-file={etc / 'log.properties'}", f"-Dlog.output-file={workdir / 'server.log'}",
            f"-Djava.io.tmpdir={workdir / 'tmp'}",
            "-cp", str(home / "lib" / "*"), "io.trino.server.TrinoServer",
        ]
        (workdir / "tmp").mkdir(exist_ok=True)
        # Not the tests' JAVA_TOOL_OPTIONS (made for Java 17 JVMs): Trino's own options above.
        env = {k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"}
        env["JAVA_HOME"] = str(install.java_home())
        self.log_path = workdir / "stdout.log"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                         preexec_fn=_die_with_parent)

    def log(self, lines: int = 60) -> str:
        # server.log once Trino's logging is up, the JVM's stdout before that (the same lines).
        path = self.workdir / "server.log"
        path = path if path.exists() else self.log_path
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Until ``/v1/info`` says ``starting: false`` (every plugin and catalog loaded), or raise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Trino exited with {self.proc.returncode} while starting:\n{self.log()}")
            with contextlib.suppress(OSError, ValueError), \
                    urllib.request.urlopen(f"{self.url}/v1/info", timeout=5) as response:
                if json.loads(response.read()).get("starting") is False:
                    return
            time.sleep(1.0)
        raise RuntimeError(f"Trino not started within {timeout:.0f}s:\n{self.log()}")

    def _request(self, url: str, body: bytes | None, headers: Mapping[str, str]) -> dict[str, Any]:
        request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST" if body else "GET")
        for attempt in range(5):
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    result: dict[str, Any] = json.loads(response.read())
                    return result
            except urllib.error.HTTPError as e:
                # 502/503/504: the protocol says retry the same URI (the server is busy).
                if e.code not in (502, 503, 504) or attempt == 4:
                    raise
            time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def query(self, statement: str, catalog: str = "hive", schema: str | None = None,
              timeout: float = QUERY_TIMEOUT) -> list[tuple[Any, ...]]:
        """Run one statement to its end; its rows (an update's is ``[(count,)]``), or :class:`TrinoError`."""
        headers = {"X-Trino-User": "catalogd-tests", "X-Trino-Catalog": catalog, "Content-Type": "text/plain"}
        if schema:
            headers["X-Trino-Schema"] = schema
        deadline = time.monotonic() + timeout
        answer = self._request(f"{self.url}/v1/statement", statement.encode(), headers)
        rows: list[tuple[Any, ...]] = []
        while True:
            rows.extend(tuple(row) for row in answer.get("data") or [])
            if "error" in answer:
                error = answer["error"]
                raise TrinoError(error.get("message", ""), error.get("errorName", ""),
                                 tuple(_causes(error.get("failureInfo") or {})))
            next_uri = answer.get("nextUri")
            if not next_uri:
                return rows
            if time.monotonic() > deadline:
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(urllib.request.Request(next_uri, method="DELETE"), timeout=10).close()
                raise TimeoutError(f"Trino query not finished within {timeout:.0f}s: {statement}")
            answer = self._request(next_uri, None, headers)

    def stop(self) -> None:
        """Kill the server's process group (the JVM and anything it started) and reap it."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)


@contextlib.contextmanager
def running_trino(workdir: Path, catalogs: Mapping[str, Mapping[str, str]],
                  timeout: float = START_TIMEOUT) -> Iterator[TrinoServer]:
    """A started Trino server with ``catalogs`` (name -> catalog properties), stopped at the end."""
    server = TrinoServer(workdir, catalogs)
    try:
        server.wait_ready(timeout)
        yield server
    finally:
        server.stop()
