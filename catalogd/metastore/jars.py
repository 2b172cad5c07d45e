"""Where the installed pyspark wheel keeps its jars (HMS 2.3, Derby, py4j, libthrift)."""

from __future__ import annotations

from pathlib import Path

from catalogd.errors import MetastoreUnavailableError, UnsupportedError
from catalogd.jdk import pyspark_jars

__all__ = ["pyspark_jars_dir"]


def pyspark_jars_dir() -> Path:
    """The ``jars/`` folder of the installed pyspark wheel (HMS 2.3, Derby and py4j are in it).

    Found without importing pyspark: its import (its whole Python API) took 0.45 s of each
    daemon start on a quiet machine (7 to 11 s on a loaded one), on the way to the metastore's JVM.
    """
    try:
        jars = pyspark_jars()
    except UnsupportedError as e:
        raise MetastoreUnavailableError(f"{e.message}: it ships the metastore jars") from e
    if not any(jars.glob("hive-metastore-*.jar")):
        raise MetastoreUnavailableError(f"no hive-metastore jar in {jars}: reinstall pyspark")
    return jars
