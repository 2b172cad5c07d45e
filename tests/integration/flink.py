"""Flink SQL for the integration tests: one pyflink process (a local mini cluster) per session
with Flink's ``HiveCatalog`` ``c`` on catalogd's HMS endpoint.

The process is ``flink_sql_driver.py`` run by the interpreter of Flink's own virtualenv
(``tests/integration/engines/flink.py`` installs it); statements go to it one JSON line at a time
and each answer comes back as one marked line of its stdout. Measured on the 2-core machine
(shared): the JVM and the mini cluster come up in 8-10 s and ``CREATE CATALOG`` takes 1-3 s; then
a catalog statement takes under a second and a job (an INSERT, a SELECT of a Hive table) 5-10 s,
so one process serves the whole session rather than paying the start in every test.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from .engines import flink as flink_install
from .helpers import clean_env, tail

DRIVER = Path(__file__).with_name("flink_sql_driver.py")
MARK = "@@flink-sql@@ "
#: The JVM's heap: the mini cluster's task manager, the Hive client, small tables.
HEAP = "768m"
START_TIMEOUT = 240.0
STATEMENT_TIMEOUT = 300.0


class FlinkError(Exception):
    """A statement Flink refused or failed; the message is the Java exception's chain."""


def hive_site(conf_dir: Path, host: str, port: int) -> Path:
    """``hive-site.xml`` for Flink's HiveCatalog: catalogd's HMS endpoint is its metastore."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "hive-site.xml"
    path.write_text(f"""<?xml version="1.0"?>
<configuration>
  <property><name>hive.metastore.uris</name><value>thrift://{host}:{port}</value></property>
  <!-- Hive 3.1's default is 600 s: a call catalogd never answers fails the test sooner. -->
  <property><name>hive.metastore.client.socket.timeout</name><value>120s</value></property>
</configuration>
""")
    return path


class FlinkSql:
    """A running ``flink_sql_driver.py``: ``sql(statement)`` returns a statement's rows."""

    def __init__(self, work: Path, host: str, port: int) -> None:
        self.work = work
        self.hive_conf_dir = work / "hive-conf"
        hive_site(self.hive_conf_dir, host, port)
        self.log_path = work / "flink.log"
        logs = work / "log"
        logs.mkdir(exist_ok=True)
        env = clean_env()
        env.update({
            # pyflink's launcher puts HADOOP_CLASSPATH on the JVM's classpath after Flink's lib/.
            "HADOOP_CLASSPATH": os.pathsep.join(str(p) for p in flink_install.classpath()),
            "JVM_ARGS": f"-Xmx{HEAP} -Djava.io.tmpdir={work}",
            # Flink's own log files here, not in the virtualenv's pyflink/log.
            "FLINK_LOG_DIR": str(logs),
        })
        # Spark's and the project's settings would point Flink's Python or JVM elsewhere.
        for key in ("PYTHONPATH", "PYSPARK_PYTHON", "SPARK_HOME"):
            env.pop(key, None)
        self._log: IO[str] = open(self.log_path, "a")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [str(flink_install.python()), str(DRIVER)], cwd=work, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True,  # the driver and its JVM: one process group, killed together
        )
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self._answer(START_TIMEOUT, "pyflink's TableEnvironment to start")
        except BaseException:
            self.close()  # a JVM that never answered is killed all the same
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self._answers.put(line[len(MARK):])
            else:
                self._log.write(line)
                self._log.flush()
        self._answers.put(None)

    def _answer(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer from Flink in {timeout:.0f}s ({what}); log:\n{self.log()}") from None
        if line is None:
            raise AssertionError(f"Flink's process exited ({what}); log:\n{self.log()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def sql(self, statement: str, timeout: float = STATEMENT_TIMEOUT) -> list[list[Any]]:
        """The rows of one statement (an INSERT's job has finished when it returns)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(statement) + "\n")
        self.proc.stdin.flush()
        answer = self._answer(timeout, statement)
        if "error" in answer:
            raise FlinkError(answer["error"])
        rows: list[list[Any]] = answer["rows"]
        return rows

    def log(self, lines: int = 60) -> str:
        return tail(self.log_path, lines)

    def close(self) -> None:
        # SIGKILL to the group: Flink's JVM holds no state worth a clean stop (the metastore's
        # state is catalogd's), and pyflink's own shutdown waits on the JVM's.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self._reader.join(timeout=10)  # it writes the process's last lines to the log
        if not self._log.closed:
            self._log.close()


@contextlib.contextmanager
def running_flink(work: Path, host: str, port: int) -> Iterator[FlinkSql]:
    """A Flink SQL session with catalog ``c`` (HiveCatalog, Hive 3.1.3 client) on ``host:port``,
    the current catalog; killed (the whole process group) at the end."""
    reason = flink_install.missing()
    if reason is not None:
        pytest.fail(reason)
    flink = FlinkSql(work, host, port)
    try:
        flink.sql(
            "CREATE CATALOG c WITH ('type' = 'hive', 'hive-version' = '3.1.3', "
            f"'default-database' = 'default', 'hive-conf-dir' = '{flink.hive_conf_dir}')")
        flink.sql("USE CATALOG c")
        yield flink
    finally:
        flink.close()
