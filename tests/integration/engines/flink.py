"""Flink 1.20 with its Hive connector for Hive 3.1.3, for the tests that run Flink SQL with ``HiveCatalog``.

Flink's own distribution (``flink-dist``) is not on Maven Central, so Flink comes from PyPI:
``apache-flink`` ships Flink's jars (``pyflink/lib``: flink-dist, the table planner and runtime)
and starts a local mini cluster in a JVM of its own. It goes into a virtualenv of its own in the
engines' cache, never into the project's: its dependencies (apache-beam, numpy, pyarrow pins)
conflict with the project's. The Hive connector and what it needs are Flink's "user-defined
dependencies" for Hive 3.1.3 (Flink's Hive docs; the bundled ``flink-sql-connector-hive-3.1.3``
jar of 1.20 is not on Maven Central), plus Hadoop's shaded client jars for the Hadoop classes
Hive's client and Flink's Hive sink load. They go on the JVM's classpath through
``HADOOP_CLASSPATH``, which pyflink's launcher appends, so the venv's files stay as pip left them.
"""

from __future__ import annotations

from pathlib import Path

from . import maven
from .venvs import installed_venv

__all__ = ["FLINK_VERSION", "classpath", "home", "install", "missing", "python"]

FLINK_VERSION = "1.20.1"

#: Flink's user-defined dependencies for Hive 3.1.3 (its Hive docs), and Hadoop's client jars.
JARS: tuple[tuple[str, str, str], ...] = (
    ("org.apache.flink", "flink-connector-hive_2.12", FLINK_VERSION),
    ("org.apache.hive", "hive-exec", "3.1.3"),
    ("org.apache.thrift", "libfb303", "0.9.3"),
    ("org.antlr", "antlr-runtime", "3.5.2"),
    ("org.apache.hadoop", "hadoop-client-api", "3.3.6"),
    ("org.apache.hadoop", "hadoop-client-runtime", "3.3.6"),
    # Hadoop's shaded client leaves commons-logging out (a dependency of its pom); HiveConf logs with it.
    ("commons-logging", "commons-logging", "1.2"),
)


def home() -> Path:
    """The Flink folder of the engines' cache (its virtualenv is ``venv``)."""
    return maven.cache_dir() / "flink-1.20"


def python() -> Path:
    """The Flink virtualenv's interpreter (it imports ``pyflink``)."""
    return home() / "venv" / "bin" / "python"


def _jar(group: str, artifact: str, version: str) -> Path:
    return maven.cache_dir() / "maven" / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.jar"


def classpath() -> list[Path]:
    """The Hive connector's jars and Hadoop's, for ``HADOOP_CLASSPATH``."""
    return [_jar(*coords) for coords in JARS]


def missing() -> str | None:
    """Why Flink cannot run here (with the command that installs it), or None when it is installed."""
    absent = [str(p) for p in [home() / "venv" / ".installed", *classpath()] if not p.exists()]
    if absent:
        return f"Flink {FLINK_VERSION} is not installed ({absent[0]} is missing): run `make engines`"
    return None


def install() -> Path:
    """The Flink virtualenv (``apache-flink`` from PyPI) and the Hive connector's jars, installed once."""
    for coords in JARS:
        maven.fetch(*coords)
    # pyflink 1.20 supports Python 3.8-3.11; the project's own interpreter is 3.11. setuptools:
    # apache-beam 2.48 (pyflink's Python runtime, loaded when a TableEnvironment starts) imports
    # pkg_resources, which a uv venv lacks and setuptools 81 dropped.
    return installed_venv(home() / "venv", [f"apache-flink=={FLINK_VERSION}", "setuptools<81"])
