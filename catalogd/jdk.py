"""The JDK and the pyspark jars that catalogd's Java code is compiled with.

Shared by the daemon (the embedded metastore's key check, ``catalogd.metastore.guard_classes``)
and the client side (the Spark catalog plugin, ``catalogd.spark.plugin``): it depends on neither,
so the client side builds its jar without importing the daemon.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from catalogd.errors import UnsupportedError

__all__ = ["find_javac", "pyspark_jars"]


def find_javac() -> str | None:
    """``javac`` of ``JAVA_HOME``, on the PATH, or beside the ``java`` that runs the metastore."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "javac")
    which = shutil.which("javac")
    if which:
        candidates.append(Path(which))
    java = shutil.which("java")
    if java:
        candidates.append(Path(java).resolve().parent / "javac")
    return next((str(c) for c in candidates if os.access(c, os.X_OK)), None)


def pyspark_jars() -> Path:
    """The ``jars/`` folder of the installed pyspark wheel (Spark's own jars), found without
    importing pyspark (its import takes seconds on a loaded machine).

    Raises:
        UnsupportedError: pyspark is not installed, or its jars are missing.
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:  # pragma: no cover - pyspark is a hard dependency
        raise UnsupportedError("pyspark is not installed; catalogd's Java code is compiled against its jars")
    jars = Path(spec.origin).parent / "jars"
    if not any(jars.glob("spark-sql_*.jar")):
        raise UnsupportedError(f"no spark-sql jar in {jars}: reinstall pyspark")
    return jars
