"""Runs Flink SQL statements sent on stdin, in Flink's virtualenv (it imports pyflink, not catalogd).

Started by ``tests/integration/flink.py`` as ``<flink venv>/bin/python flink_sql_driver.py``:
one batch ``TableEnvironment`` (a local mini cluster in pyflink's JVM), whose first statements
(sent by the fixture) create Flink's ``HiveCatalog`` on catalogd's HMS endpoint. Each line of
stdin is one JSON-encoded statement; each answer is one line of stdout that starts with ``MARK``
(the JVM and Flink may print lines of their own):
``{"rows": [[...], ...]}`` (a query's rows, an INSERT's job finished) or ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MARK = "@@flink-sql@@ "


def _plain(value: Any) -> Any:
    """A row's field as JSON (dates, decimals and the like as their text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _error(e: BaseException) -> str:
    """The Java exception's chain of messages (py4j's text alone is the Python side's)."""
    java = getattr(e, "java_exception", None)
    if java is None:
        # pyflink's own exception types carry the Java stack trace as their text: its messages
        # and causes without the frames.
        lines = [line for line in str(e).splitlines()
                 if not line.lstrip().startswith("at ") and not line.lstrip().startswith("... ")]
        return f"{type(e).__name__}: " + "\n".join(lines)
    parts = []
    while java is not None and len(parts) < 12:
        parts.append(f"{java.getClass().getName()}: {java.getMessage()}")
        java = java.getCause()
    return "\n  caused by ".join(parts)


def main() -> int:
    from pyflink.common import Configuration
    from pyflink.java_gateway import get_gateway
    from pyflink.table import EnvironmentSettings, TableEnvironment

    # One mini cluster for the session, in pyflink's JVM: Flink's local executor would start a
    # new one for every job (its actor systems alone take 3-5 s here); jobs reach this one
    # through its REST endpoint.
    jvm = get_gateway().jvm
    cluster_conf = jvm.org.apache.flink.configuration.Configuration()
    # Every server of the mini cluster (REST, blob server, RPC) on the loopback interface only.
    for key in ("rest.bind-address", "jobmanager.bind-host", "taskmanager.bind-host", "taskmanager.host"):
        cluster_conf.setString(key, "127.0.0.1")
    cluster_conf.setString("rest.address", "127.0.0.1")
    cluster_conf.setString("rest.port", "0")
    cluster = jvm.org.apache.flink.runtime.minicluster.MiniCluster(
        jvm.org.apache.flink.runtime.minicluster.MiniClusterConfiguration.Builder()
        .setConfiguration(cluster_conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(1).build())
    cluster.start()
    rest_port = cluster.getRestAddress().get().getPort()

    settings = Configuration()
    settings.set_string("execution.target", "remote")
    settings.set_string("rest.address", "127.0.0.1")
    settings.set_string("rest.port", str(rest_port))
    env = TableEnvironment.create(
        EnvironmentSettings.new_instance().in_batch_mode().with_configuration(settings).build())
    conf = env.get_config()
    # Two shared cores, small tables: one slot, one task per operator.
    conf.set("parallelism.default", "1")
    conf.set("table.exec.resource.default-parallelism", "1")
    # Hive sources infer their parallelism from the files' splits; one is enough here.
    conf.set("table.exec.hive.infer-source-parallelism", "false")
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        statement = json.loads(line)
        try:
            result = env.execute_sql(statement)
            if statement.lstrip()[:6].upper() == "INSERT":
                # An INSERT's job runs asynchronously: done once its job finished (its one
                # row, -1, says nothing).
                result.wait()
                answer: dict[str, Any] = {"rows": []}
            else:
                with result.collect() as rows:
                    answer = {"rows": [[_plain(v) for v in row] for row in rows]}
        except Exception as e:  # the statement's error is the answer; the session goes on
            answer = {"error": _error(e)}
        print(MARK + json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
