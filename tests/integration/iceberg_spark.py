"""Spark SQL with Iceberg's own Spark runtime, for the REST catalog tests: one Spark process per
session whose catalogs are Iceberg ``SparkCatalog``\\ s with ``type=rest``.

The process is ``iceberg_spark_driver.py`` run by the interpreter of a virtualenv of its own
(``tests/integration/engines/iceberg_spark.py`` installs pyspark 4.1 and
``iceberg-spark-runtime-4.1_2.13``: Iceberg has no runtime for the project's pyspark 4.3), on
Java 17, with a bounded driver heap. Statements go to it one JSON line at a time and each answer
comes back as one marked line of its stdout. A catalog is added with :meth:`IcebergSpark.add_catalog`
(``SET`` statements: Spark loads a catalog from its conf when a statement first names it), so one
process serves every test whatever REST server it talks to.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .engines import iceberg_spark as install
from .helpers import clean_env
from .sql_process import SqlProcess

__all__ = ["IcebergSpark", "SparkSqlError", "rest_catalog_conf", "running_iceberg_spark"]

DRIVER = Path(__file__).with_name("iceberg_spark_driver.py")
MARK = "@@iceberg-spark@@ "
#: The driver's heap (local mode: the executor is in it too): tiny tables.
DRIVER_MEMORY = "768m"
START_TIMEOUT = 240.0
STATEMENT_TIMEOUT = 300.0
#: Spark 4.1 runs on Java 17 or 21; the tests' machines have Debian's 17.
JAVA17_HOMES = ("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-17-jdk-amd64")


class SparkSqlError(Exception):
    """A statement Spark refused or failed; the message is the Java exception's chain."""


def rest_catalog_conf(name: str, uri: str, warehouse: str, token: str | None = None) -> dict[str, str]:
    """The Spark conf of an Iceberg REST catalog ``name`` at ``uri`` (``http://host:port/iceberg``),
    REST warehouse ``warehouse``; ``token``: a bearer token the catalog sends on every request."""
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri,
        f"{prefix}.warehouse": warehouse,
        # Spark's own cache would hide another engine's commits between two statements.
        f"{prefix}.cache-enabled": "false",
    }
    if token is not None:
        conf[f"{prefix}.token"] = token
    return conf


def _java_home() -> str | None:
    for candidate in (os.environ.get("CATALOGD_JAVA17_HOME", ""), *JAVA17_HOMES):
        if candidate and (Path(candidate) / "bin" / "java").is_file():
            return candidate
    return None


class IcebergSpark(SqlProcess):
    """A running ``iceberg_spark_driver.py``: ``sql(statement)`` returns a statement's rows."""

    def __init__(self, work: Path) -> None:
        (work / "tmp").mkdir(parents=True, exist_ok=True)
        env = clean_env()
        # The project's Spark settings would point this pyspark elsewhere (another SPARK_HOME, the
        # project's interpreter for Python workers).
        for key in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS"):
            env.pop(key, None)
        java_home = _java_home()
        if java_home is not None:
            env["JAVA_HOME"] = java_home
        env["PYSPARK_PYTHON"] = str(install.python())
        super().__init__([str(install.python()), str(DRIVER), str(install.runtime_jar()), str(work), DRIVER_MEMORY],
                         work, env, work / "spark.log", engine="Spark", mark=MARK, error=SparkSqlError,
                         start_timeout=START_TIMEOUT, started="Spark to start")
        self.version = str(self.first.get("spark"))

    def sql(self, statement: str, timeout: float = STATEMENT_TIMEOUT) -> list[list[Any]]:
        return super().sql(statement, timeout)

    def add_catalog(self, name: str, uri: str, warehouse: str, token: str | None = None) -> None:
        """Catalog ``name``: Iceberg's REST catalog at ``uri`` (see :func:`rest_catalog_conf`)."""
        for key, value in rest_catalog_conf(name, uri, warehouse, token).items():
            # SET's value runs to the end of the statement; the key is quoted for its dots' sake.
            self.sql(f"SET `{key}`={value}")


@contextlib.contextmanager
def running_iceberg_spark(work: Path) -> Iterator[IcebergSpark]:
    """A Spark session with Iceberg's runtime, killed (the whole process group) at the end."""
    reason = install.missing()
    if reason is not None:
        pytest.fail(reason)
    spark = IcebergSpark(work)
    try:
        yield spark
    finally:
        spark.close()
