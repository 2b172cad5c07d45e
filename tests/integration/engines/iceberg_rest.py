"""Iceberg's REST test fixtures 1.11.0 from Maven Central: the reference REST catalog server and the
REST Compatibility Kit (RCK).

``org.apache.iceberg:iceberg-open-api:1.11.0`` publishes two jars and no dependencies in its POM:

* classifier ``test-fixtures``: ``RESTCatalogServer`` (the reference server: Iceberg's own
  ``RESTCatalogAdapter`` over a ``JdbcCatalog`` on in-memory SQLite, in Jetty) and ``RCKUtils``;
* classifier ``tests``: ``RESTCompatibilityKitSuite`` and its two classes, which run Iceberg's
  ``CatalogTests`` / ``ViewCatalogTests`` (in ``iceberg-core``'s ``tests`` jar) through a
  ``RESTCatalog`` client.

Their classpath, pinned below (:data:`ARTIFACTS`), is what ``mvn dependency:copy-dependencies``
resolved for those jars plus what Iceberg's ``build.gradle`` gives the ``open-api`` test fixtures and
tests (Jetty 12.1, sqlite-jdbc, slf4j-simple, assertj, JUnit 5.14 / Platform 1.14 by its console
launcher, which carries the Jupiter and Suite engines), with the shaded Hadoop client that
``hive.py`` already uses in place of ``hadoop-common`` and its tree. 1.11.0 is the newest release on
Maven Central (1.12.0 is not served). Downloading them all is about 90 MB, once, into the engines'
cache; no Maven is needed at test time.

The running of the RCK is ``tests/integration/iceberg_rck.py``'s; this module installs and starts
the reference server (:func:`reference_server`), which harnesses and REST clients are checked against
before they meet catalogd's ``/iceberg`` door.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..ports import free_port
from . import maven

__all__ = ["ARTIFACTS", "VERSION", "ReferenceServer", "classpath", "install", "java_env", "reference_server"]

VERSION = "1.11.0"
JETTY = "12.1.8"

#: (group, artifact, version, classifier): the RCK's and the reference server's classpath.
ARTIFACTS: list[tuple[str, str, str, str]] = [
    ("org.apache.iceberg", "iceberg-open-api", VERSION, "tests"),
    ("org.apache.iceberg", "iceberg-open-api", VERSION, "test-fixtures"),
    ("org.apache.iceberg", "iceberg-api", VERSION, ""),
    ("org.apache.iceberg", "iceberg-api", VERSION, "tests"),
    ("org.apache.iceberg", "iceberg-common", VERSION, ""),
    ("org.apache.iceberg", "iceberg-core", VERSION, ""),
    ("org.apache.iceberg", "iceberg-core", VERSION, "tests"),
    ("org.apache.iceberg", "iceberg-bundled-guava", VERSION, ""),
    # The server's credential code names these modules' property classes (no cloud SDK needed).
    ("org.apache.iceberg", "iceberg-aws", VERSION, ""),
    ("org.apache.iceberg", "iceberg-gcp", VERSION, ""),
    ("org.apache.iceberg", "iceberg-azure", VERSION, ""),
    # iceberg-core's own dependencies.
    ("org.apache.avro", "avro", "1.12.1", ""),
    ("com.fasterxml.jackson.core", "jackson-annotations", "2.21", ""),
    ("com.fasterxml.jackson.core", "jackson-core", "2.21.3", ""),
    ("com.fasterxml.jackson.core", "jackson-databind", "2.21.3", ""),
    ("org.apache.commons", "commons-compress", "1.28.0", ""),
    ("org.apache.commons", "commons-lang3", "3.18.0", ""),
    ("commons-codec", "commons-codec", "1.19.0", ""),
    ("commons-io", "commons-io", "2.20.0", ""),
    ("io.airlift", "aircompressor", "2.0.3", ""),
    ("org.apache.httpcomponents.client5", "httpclient5", "5.6.1", ""),
    ("org.apache.httpcomponents.core5", "httpcore5", "5.4", ""),
    ("org.apache.httpcomponents.core5", "httpcore5-h2", "5.4", ""),
    ("org.roaringbitmap", "RoaringBitmap", "1.6.14", ""),
    ("com.github.ben-manes.caffeine", "caffeine", "2.9.3", ""),
    ("org.checkerframework", "checker-qual", "3.19.0", ""),
    ("com.google.errorprone", "error_prone_annotations", "2.10.0", ""),
    ("com.google.code.findbugs", "jsr305", "3.0.2", ""),
    ("org.xerial.snappy", "snappy-java", "1.1.8.2", ""),
    # Hadoop's Configuration and local FileSystem (HadoopFileIO), shaded: the pair hive.py uses.
    ("org.apache.hadoop", "hadoop-client-api", "3.3.6", ""),
    ("org.apache.hadoop", "hadoop-client-runtime", "3.3.6", ""),
    ("commons-logging", "commons-logging", "1.2", ""),
    # The reference server.
    ("org.eclipse.jetty.ee10", "jetty-ee10-servlet", JETTY, ""),
    ("org.eclipse.jetty.compression", "jetty-compression-common", JETTY, ""),
    ("org.eclipse.jetty.compression", "jetty-compression-gzip", JETTY, ""),
    ("org.eclipse.jetty.compression", "jetty-compression-server", JETTY, ""),
    ("org.eclipse.jetty", "jetty-http", JETTY, ""),
    ("org.eclipse.jetty", "jetty-io", JETTY, ""),
    ("org.eclipse.jetty", "jetty-security", JETTY, ""),
    ("org.eclipse.jetty", "jetty-server", JETTY, ""),
    ("org.eclipse.jetty", "jetty-session", JETTY, ""),
    ("org.eclipse.jetty", "jetty-util", JETTY, ""),
    ("jakarta.servlet", "jakarta.servlet-api", "6.0.0", ""),
    ("org.xerial", "sqlite-jdbc", "3.53.0.0", ""),
    ("org.slf4j", "slf4j-api", "2.0.17", ""),
    ("org.slf4j", "slf4j-simple", "2.0.17", ""),
    # The RCK's test runtime.
    ("org.assertj", "assertj-core", "3.27.7", ""),
    ("net.bytebuddy", "byte-buddy", "1.18.3", ""),
    ("org.junit.platform", "junit-platform-console-standalone", "1.14.4", ""),
]

#: A reference server start on a loaded 2-core machine: a few seconds; generous for a busy one.
START_TIMEOUT = 120.0
#: Heap of each JVM here: the reference server's catalog is in-memory SQLite and the RCK's tables
#: have no data files, so little is needed.
HEAP = "-Xmx384m"


def classpath() -> str:
    """The JVM classpath of the reference server and the RCK (every jar downloaded once)."""
    jars = [maven.fetch(group, artifact, version, "jar", classifier)
            for group, artifact, version, classifier in ARTIFACTS]
    return os.pathsep.join(str(j) for j in jars)


def install() -> None:
    """Every jar of :data:`ARTIFACTS` (``make engines``)."""
    classpath()


def java_env(catalog: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a JVM that reads its catalog properties from ``CATALOG_*`` variables.

    ``RCKUtils.environmentCatalogConfig`` takes every ``CATALOG_X__Y_Z`` as property ``x-y.z``:
    inherited ``CATALOG_*`` variables are dropped so that only ``catalog`` (property -> value)
    configures it.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("CATALOG_")}
    for key, value in catalog.items():
        env["CATALOG_" + key.replace("-", "__").replace(".", "_").upper()] = value
    return env


def _die_with_parent() -> None:
    # The JVM dies with the process that started it even when that one is killed: PR_SET_PDEATHSIG.
    import ctypes

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class ReferenceServer:
    """Iceberg's ``RESTCatalogServer`` as a process; :attr:`uri` is the catalog URI a client is given."""

    def __init__(self, workdir: Path, port: int = 0, properties: Mapping[str, str] | None = None) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.warehouse = workdir / "warehouse"
        self.warehouse.mkdir(parents=True, exist_ok=True)
        (workdir / "tmp").mkdir(exist_ok=True)
        # Jetty binds every interface (RESTCatalogServer takes a port, no host); clients here use
        # 127.0.0.1 only.
        catalog = {"rest.port": str(self.port), "warehouse": str(self.warehouse), **(properties or {})}
        self.log_path = workdir / "server.log"
        command = ["java", HEAP, f"-Djava.io.tmpdir={workdir / 'tmp'}", "-cp", classpath(),
                   "org.apache.iceberg.rest.RESTCatalogServer"]
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=java_env(catalog),
                                         start_new_session=True, preexec_fn=_die_with_parent)

    def log(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Until ``GET /v1/config`` answers, or raise with the log's tail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"RESTCatalogServer exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.uri}/v1/config", timeout=5) as r:
                if r.status == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"RESTCatalogServer not answering within {timeout:.0f}s:\n{self.log()}")

    def stop(self) -> None:
        """Kill the server's process group and reap it."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)


@contextlib.contextmanager
def reference_server(workdir: Path, port: int = 0, properties: Mapping[str, str] | None = None,
                     timeout: float = START_TIMEOUT) -> Iterator[ReferenceServer]:
    """A started reference REST server (its warehouse in ``workdir/warehouse``), killed at the end.

    ``properties``: more catalog properties of its backend catalog (``CATALOG_*`` variables),
    e.g. ``{"uri": "jdbc:sqlite:file:/path/cat.db"}`` for a catalog on disk.
    """
    server = ReferenceServer(workdir, port, properties)
    try:
        server.wait_ready(timeout)
        yield server
    finally:
        server.stop()


if __name__ == "__main__":
    install()
