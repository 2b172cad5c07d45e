"""Runs Spark SQL statements sent on stdin, in the Iceberg Spark virtualenv (it imports pyspark 4.1, not catalogd).

Started by ``tests/integration/iceberg_spark.py`` as ``<venv>/bin/python iceberg_spark_driver.py
<runtime jar> <work dir> <driver memory>``: one local SparkSession with Iceberg's runtime and SQL
extensions. Each line of stdin is one JSON-encoded statement; each answer is one line of stdout that
starts with ``MARK`` (the JVM may print lines of its own): ``{"rows": [[...], ...]}`` or
``{"error": "..."}``. Catalogs are added with ``SET spark.sql.catalog.<name>...`` statements: Spark
loads a catalog from its conf when a statement first names it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MARK = "@@iceberg-spark@@ "


def _plain(value: Any) -> Any:
    """A row's field as JSON (dates, decimals and the like as their text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _error(e: BaseException) -> str:
    """The Java exception's chain of messages (py4j's text alone is the Python side's)."""
    # pyspark's captured exceptions keep the Java one as `_origin`; py4j's own as `java_exception`.
    java = getattr(e, "_origin", None) if hasattr(e, "_origin") else getattr(e, "java_exception", None)
    if java is None:
        return f"{type(e).__name__}: {e}"
    parts = []
    while java is not None and len(parts) < 12:
        parts.append(f"{java.getClass().getName()}: {java.getMessage()}")
        java = java.getCause()
    return "\n  caused by ".join(parts)


def main() -> int:
    from pyspark.sql import SparkSession

    runtime_jar, work, memory = sys.argv[1:4]
    spark = (
        SparkSession.builder.master("local[1]").appName("catalogd-iceberg-rest")
        .config("spark.jars", runtime_jar)
        .config("spark.driver.memory", memory)
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        # No Hive metastore of Spark's own (no Derby in the work folder): the Iceberg catalogs are the point.
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", f"{work}/spark-warehouse")
        .config("spark.local.dir", f"{work}/tmp")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    print(MARK + json.dumps({"ready": True, "spark": spark.version}), flush=True)
    for line in sys.stdin:
        statement = json.loads(line)
        try:
            rows = spark.sql(statement).collect()
            answer: dict[str, Any] = {"rows": [[_plain(v) for v in row] for row in rows]}
        except Exception as e:  # the statement's error is the answer; the session goes on
            answer = {"error": _error(e)}
        print(MARK + json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
