"""Trino 476 for the integration tests: the server with its Hive and Iceberg connectors, and the Java 25
it needs.

From Maven Central's ``io.trino:trino-server:476`` tarball, only what the tests run is unpacked into
the engines' cache (:func:`maven.cache_dir`, ``trino/server-full-476``): ``bin/``, ``lib/`` and the
``hive`` and ``iceberg`` plugins. Not ``trino-server-core`` plus the ``trino-hive`` / ``trino-iceberg``
plugin zips: those zips lack the plugins' ``hdfs/`` folder (Hadoop's file systems, loaded when a
catalog sets ``fs.hadoop.enabled``), and Trino 476's own local file system cannot serve Spark's
``file:`` tables to the Hive connector (it lists a ``file:/x`` directory's files as ``local:///x/...``,
which the connector then takes for files of another directory and skips: every table reads empty).
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from . import maven

__all__ = ["VERSION", "install", "java_home", "server_home"]

VERSION = "476"
#: What of the server tarball the tests need (paths below its top folder); the rest (40-odd other
#: connectors, about 2 GB unpacked) is never unpacked.
KEEP = ("bin/", "lib/", "plugin/hive/", "plugin/iceberg/")
#: Where Java 25 is looked for when ``$CATALOGD_JAVA25_HOME`` does not say (Temurin's Debian package).
JAVA_HOMES = ("/usr/lib/jvm/temurin-25-jdk-amd64", "/usr/lib/jvm/temurin-25-jre-amd64",
              "/usr/lib/jvm/java-25-openjdk-amd64")


class MissingJava(RuntimeError):
    """No Java 25 on this machine: Trino 476 runs on nothing older."""


def java_home() -> Path:
    """A Java 25 home: ``$CATALOGD_JAVA25_HOME``, else one of :data:`JAVA_HOMES`."""
    candidates = [os.environ["CATALOGD_JAVA25_HOME"]] if os.environ.get("CATALOGD_JAVA25_HOME") else list(JAVA_HOMES)
    for candidate in candidates:
        if (Path(candidate) / "bin" / "java").is_file():
            return Path(candidate)
    raise MissingJava(
        f"Trino {VERSION} needs Java 25, found none at {', '.join(candidates)}: install one (e.g. Adoptium's "
        "temurin-25-jdk Debian package, as .ci/run does) or set CATALOGD_JAVA25_HOME to its home")


def server_home() -> Path:
    """The installed server's folder (``bin/``, ``lib/``, ``plugin/``), installed if missing."""
    return install()


def install() -> Path:
    """Download (once) Trino's server and unpack the parts the tests run; returns the server's folder."""
    archive = maven.fetch("io.trino", "trino-server", VERSION, "tar.gz")
    root = maven.cache_dir() / "trino"
    root.mkdir(parents=True, exist_ok=True)
    into = root / f"server-full-{VERSION}"
    top = f"trino-server-{VERSION}/"
    done = into / ".unpacked"
    if not done.exists():
        with maven._locked(into):
            if not done.exists():
                if into.exists():
                    shutil.rmtree(into)
                tmp = Path(tempfile.mkdtemp(prefix=into.name + ".", dir=root))
                try:
                    # One pass over the gzip stream: the members are picked as they come.
                    with tarfile.open(archive, "r|gz") as t:
                        for member in t:
                            if member.name.startswith(top) and member.name[len(top):].startswith(KEEP):
                                t.extract(member, tmp, filter="tar")
                    tmp.rename(into)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
                done.touch()
    java_home()
    return into / top.rstrip("/")
