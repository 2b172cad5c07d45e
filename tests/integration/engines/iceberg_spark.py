"""Spark with Iceberg's own Spark runtime, for the tests that run Spark's ``SparkCatalog`` with ``type=rest``.

Iceberg has no runtime for the project's pyspark 4.3: its newest served runtime on Maven Central is
``iceberg-spark-runtime-4.1_2.13`` (Iceberg 1.12.0), built for Spark 4.1. So a pyspark 4.1 goes into
a virtualenv of its own in the engines' cache (never into the project's, whose pyspark it would
replace), and the runtime jar beside it, from Maven Central.
"""

from __future__ import annotations

from pathlib import Path

from . import maven
from .venvs import installed_venv

__all__ = ["ICEBERG_VERSION", "PYSPARK_VERSION", "RUNTIME", "home", "install", "missing", "python", "runtime_jar"]

#: The newest Iceberg release with a Spark runtime, and the runtime's Spark line.
ICEBERG_VERSION = "1.12.0"
RUNTIME = ("org.apache.iceberg", "iceberg-spark-runtime-4.1_2.13", ICEBERG_VERSION)
#: The newest pyspark of the runtime's Spark line (4.1).
PYSPARK_VERSION = "4.1.4"


def home() -> Path:
    """The folder of this Spark in the engines' cache (its virtualenv is ``venv``)."""
    return maven.cache_dir() / f"spark-{PYSPARK_VERSION}-iceberg-{ICEBERG_VERSION}"


def python() -> Path:
    """The virtualenv's interpreter (it imports that ``pyspark``)."""
    return home() / "venv" / "bin" / "python"


def runtime_jar() -> Path:
    """Iceberg's Spark runtime jar in the Maven cache."""
    group, artifact, version = RUNTIME
    return maven.cache_dir() / "maven" / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.jar"


def missing() -> str | None:
    """Why this Spark cannot run here (with the command that installs it), or None when it is installed."""
    for path in (home() / "venv" / ".installed", runtime_jar()):
        if not path.exists():
            return (f"Spark {PYSPARK_VERSION} with Iceberg {ICEBERG_VERSION} is not installed ({path} is missing): "
                    "run `make engines`")
    return None


def install() -> Path:
    """The virtualenv (``pyspark`` from PyPI) and Iceberg's runtime jar, installed once; returns the venv."""
    maven.fetch(*RUNTIME)
    return installed_venv(home() / "venv", [f"pyspark=={PYSPARK_VERSION}"])
