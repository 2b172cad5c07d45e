"""A real Hive standalone metastore (4.0.1 or 3.1.3) for the tests, as a remote metastore behind catalogd.

Installed by ``tests/integration/engines/hive.py`` (``make engines``; here too on first use).
Runs on Derby in a temporary directory (a copy of the release's schema, made once by its own
schematool), with its warehouse there too, on a free port of 127.0.0.1, with a bounded heap,
in a process group of its own that is killed at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .engines import hive
from .helpers import free_port

__all__ = ["StandaloneMetastore", "running_metastore"]

#: A cold JVM, DataNucleus and Derby recovery: 10 s on an idle machine, minutes on a loaded 2-core one.
START_TIMEOUT = 300.0
HEAP = "384m"


@dataclass
class StandaloneMetastore:
    version: str
    root: Path
    port: int
    proc: subprocess.Popen[bytes]
    host: str = "127.0.0.1"

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def log_path(self) -> Path:
        return self.root / "metastore.log"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def listening(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=1):
            return True
        return False

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL if it has not gone within 20 s."""
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(20)


def _wait_started(server: StandaloneMetastore, timeout: float) -> None:
    """Until it listens; at once an error when it exits or logs a fatal error (no waiting out the timeout)."""
    deadline = time.monotonic() + timeout
    while not _started(server):
        if time.monotonic() >= deadline:
            raise RuntimeError(f"the Hive {server.version} metastore did not listen on port {server.port} within "
                               f"{timeout:.0f}s:\n{server.log_tail()}")
        time.sleep(0.5)


def _started(server: StandaloneMetastore) -> bool:
    if server.proc.poll() is not None:
        raise RuntimeError(f"the Hive {server.version} metastore exited with {server.proc.returncode}:\n"
                           f"{server.log_tail()}")
    # A fatal error in its start leaves the JVM running (non-daemon threads) without a listener.
    if "Metastore Thrift Server threw an exception" in server.log_tail(400):
        raise RuntimeError(f"the Hive {server.version} metastore failed to start:\n{server.log_tail()}")
    return server.listening()


@contextlib.contextmanager
def running_metastore(version: str, heap: str = HEAP) -> Iterator[StandaloneMetastore]:
    """Start Hive ``version``'s standalone metastore; stop it and delete its directory after."""
    template = hive.derby_template(version)
    root = Path(tempfile.mkdtemp(prefix=f"catalogd-hms{version}-"))
    try:
        conf = root / "conf"
        conf.mkdir()
        (root / "warehouse").mkdir()
        shutil.copytree(template, root / "db")
        port = free_port()
        (conf / "metastore-site.xml").write_text(hive.site_xml(version, {
            "javax.jdo.option.ConnectionURL": hive.derby_url(root / "db"),
            "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
            "metastore.thrift.port": str(port),
            "metastore.thrift.bind.host": "127.0.0.1",
            "metastore.warehouse.dir": (root / "warehouse").as_uri(),
            "metastore.warehouse.external.dir": (root / "warehouse").as_uri(),
            # Tests write and read at once: no stats threads or notification log to wait for.
            "metastore.stats.auto.gather": "false",
        }))
        env = {**os.environ, "METASTORE_HOME": str(hive.home(version))}
        with open(root / "metastore.log", "wb") as log:
            proc = subprocess.Popen(
                ["java", f"-Xmx{heap}", f"-Djava.io.tmpdir={root}", f"-Dderby.stream.error.file={root / 'derby.log'}",
                 "-cp", hive.classpath(version, conf), "org.apache.hadoop.hive.metastore.HiveMetaStore"],
                cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        server = StandaloneMetastore(version, root, port, proc)
        try:
            _wait_started(server, START_TIMEOUT)
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
