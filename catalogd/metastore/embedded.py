"""A real Hive Metastore 2.3 in a child process, from the jars in the pyspark wheel.

The metastore keeps its Derby database, warehouse and config under
``<data-dir>/catalogs/<catalog>/`` and logs to ``<data-dir>/logs/``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

from catalogd.errors import ConflictError, MetastoreUnavailableError

logger = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
_PR_SET_PDEATHSIG = 1


def pyspark_jars_dir() -> Path:
    """The ``jars/`` folder of the installed pyspark wheel (HMS 2.3 and Derby are in it)."""
    try:
        import pyspark
    except ImportError as e:  # pragma: no cover - pyspark is a hard dependency
        raise MetastoreUnavailableError("pyspark is not installed; it ships the metastore jars") from e
    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise MetastoreUnavailableError(f"no hive-metastore jar in {jars}: reinstall pyspark")
    return jars


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(java_home) / "bin" / "java")] if java_home else []
    which = shutil.which("java")
    if which:
        candidates.append(which)
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise MetastoreUnavailableError(
        "Java (17) is needed to run the embedded metastore: install openjdk-17-jre-headless or set JAVA_HOME"
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_answers(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _die_with_parent() -> None:
    # The metastore must not outlive a daemon killed with SIGKILL: it would keep
    # Derby's files locked and the port taken.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


class EmbeddedMetastore:
    """Start, wait for and stop one HMS child process.

    Args:
        name: the catalog's name (used for paths and log file names).
        data_dir: the daemon's data dir.
        port: the port to listen on; 0 picks a free one.
        warehouse: warehouse URI; default ``file://<data-dir>/catalogs/<name>/warehouse``.
        hive_conf: extra ``hive.*`` settings for hive-site.xml.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        name: str,
        data_dir: Path,
        port: int = 0,
        warehouse: str | None = None,
        hive_conf: dict[str, str] | None = None,
        heap: str = "1g",
        stop_grace: float = 20.0,
    ) -> None:
        self.name = name
        self.stop_grace = stop_grace
        self.home = Path(data_dir) / "catalogs" / name
        self.log_path = Path(data_dir) / "logs" / f"metastore-{name}.log"
        self.requested_port = port
        self.port = port
        self.warehouse = warehouse or (self.home / "warehouse").as_uri()
        self.hive_conf = dict(hive_conf or {})
        self.heap = heap
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    def hive_site(self) -> str:
        db = self.home / "metastore_db"
        settings = {
            "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={db};create=true",
            "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
            "datanucleus.schema.autoCreateAll": "true",
            "hive.metastore.schema.verification": "false",
            "hive.async.log.enabled": "false",
            "hive.metastore.warehouse.dir": self.warehouse,
            # BoneCP (the default) is not in the pyspark jars; HikariCP is.
            "datanucleus.connectionPoolingType": "HikariCP",
            # Spark and catalogd both write table statistics; HMS must not reject them.
            "hive.metastore.disallow.incompatible.col.type.changes": "false",
            **self.hive_conf,
        }
        props = "\n".join(
            f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
            for k, v in settings.items()
        )
        return f'<?xml version="1.0"?>\n<configuration>\n{props}\n</configuration>\n'

    def start(self, timeout: float = 180.0) -> None:
        """Start the metastore and wait until it answers on its port.

        Raises:
            MetastoreUnavailableError: Java is missing, or the process died or
                did not answer within ``timeout`` (the log's tail is in the message).
            ConflictError: the chosen port is taken by another process.
        """
        java = find_java()
        jars = pyspark_jars_dir()
        conf_dir = self.home / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        (conf_dir / "hive-site.xml").write_text(self.hive_site())
        if self.warehouse.startswith("file:"):
            Path(self.warehouse.removeprefix("file://").removeprefix("file:")).mkdir(parents=True, exist_ok=True)
        self.port = self.requested_port or free_port(self.host)
        if port_answers(self.host, self.port):
            raise ConflictError(
                f"port {self.port} for the embedded metastore of catalog {self.name!r} is already in use; "
                "set metastore-port to a free port or 0"
            )
        cmd = [
            java,
            f"-Xmx{self.heap}",
            f"-Dderby.system.home={self.home}",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            f"{conf_dir}:{jars}/*",
            MAIN_CLASS,
            "-p",
            str(self.port),
        ]
        logger.info(
            "starting embedded metastore for catalog %s on port %d (log: %s)", self.name, self.port, self.log_path
        )
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            self._process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise MetastoreUnavailableError(
                    f"embedded metastore of catalog {self.name!r} exited with code {self._process.returncode}; "
                    f"last log lines ({self.log_path}):\n{self.log_tail()}"
                )
            if port_answers(self.host, self.port):
                logger.info("embedded metastore for catalog %s is up at %s", self.name, self.uri)
                return
            time.sleep(0.2)
        self.stop()
        raise MetastoreUnavailableError(
            f"embedded metastore of catalog {self.name!r} did not answer within {timeout:.0f}s; see {self.log_path}"
        )

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds (default: the stop grace); safe to call twice."""
        if timeout is None:
            timeout = self.stop_grace
        proc = self._process
        if proc is None or proc.poll() is not None:
            return
        logger.info("stopping embedded metastore for catalog %s (pid %d)", self.name, proc.pid)
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            logger.warning("embedded metastore pid %d ignored SIGTERM; killing it", proc.pid)
            proc.kill()
            proc.wait()



