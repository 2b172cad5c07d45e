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
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
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
                # An INSERT's job runs asynchronously: done once its job finished. Its result
                # (one row, -1) cannot be collected after that: the job's mini cluster is gone.
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
