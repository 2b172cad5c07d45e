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
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .engines import flink as flink_install
from .helpers import clean_env
from .sql_process import SqlProcess

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


class FlinkSql(SqlProcess):
    """A running ``flink_sql_driver.py``: ``sql(statement)`` returns a statement's rows (an
    INSERT's job has finished when it returns)."""

    def __init__(self, work: Path, host: str, port: int) -> None:
        self.hive_conf_dir = work / "hive-conf"
        hive_site(self.hive_conf_dir, host, port)
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
        super().__init__([str(flink_install.python()), str(DRIVER)], work, env, work / "flink.log", engine="Flink",
                         mark=MARK, error=FlinkError, start_timeout=START_TIMEOUT,
                         started="pyflink's TableEnvironment to start")

    def sql(self, statement: str, timeout: float = STATEMENT_TIMEOUT) -> list[list[Any]]:
        return super().sql(statement, timeout)


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
