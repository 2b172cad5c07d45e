"""Hive's standalone metastore 4.0.1 and 3.1.3 from Maven Central, with the Hadoop jars it needs.

The ``bin`` tarballs hold the metastore and its own libraries; they expect a Hadoop install
(``HADOOP_HOME``) for the rest. Instead of Hadoop, the shaded Hadoop client (``hadoop-client-api``
+ ``hadoop-client-runtime`` 3.3.6) and the few unshaded libraries Hadoop's ``lib/`` would have
given (found by starting it until nothing was missing) go on the classpath.

Each version's Derby schema is made once with its own ``schematool -initSchema -dbType derby``
(20-35 s of JVM) into the cache (``derby-template``); a test run copies it. The running of a
metastore is ``tests/integration/standalone_hms.py``'s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import maven

__all__ = ["RELEASES", "Release", "classpath", "derby_template", "derby_url", "home", "install", "site_xml"]


@dataclass(frozen=True)
class Release:
    version: str
    artifact: str
    schematool: str
    #: Settings this release needs to start with nothing but its own jars (no hive-exec).
    settings: dict[str, str] = field(default_factory=dict)


RELEASES: dict[str, Release] = {
    "4.0.1": Release("4.0.1", "hive-standalone-metastore-server",
                     "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"),
    "3.1.3": Release("3.1.3", "hive-standalone-metastore", "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
                     {
                         # Its default (PartitionExpressionForMetastore) and one default task
                         # (DumpDirCleanerTask) are in hive-exec, which a standalone metastore lacks:
                         # without these it stops at start.
                         "metastore.expression.proxy":
                             "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
                         "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask,"
                                                          "org.apache.hadoop.hive.metastore.RuntimeStatsCleanerTask",
                     }),
}

#: (group, artifact, version): the shaded Hadoop client, and what Hadoop's own lib/ would add.
HADOOP_JARS: list[tuple[str, str, str]] = [
    ("org.apache.hadoop", "hadoop-client-api", "3.3.6"),
    ("org.apache.hadoop", "hadoop-client-runtime", "3.3.6"),
    # HMS 4's default transformer names an HDFS class the client API leaves out (SnapshotException).
    ("org.apache.hadoop", "hadoop-hdfs", "3.3.6"),
    ("commons-io", "commons-io", "2.11.0"),
    ("commons-cli", "commons-cli", "1.5.0"),
    ("commons-collections", "commons-collections", "3.2.2"),
    ("commons-logging", "commons-logging", "1.2"),
    ("org.slf4j", "slf4j-api", "1.7.36"),
    ("javax.servlet", "javax.servlet-api", "3.1.0"),
    ("org.apache.httpcomponents", "httpclient", "4.5.13"),
    ("com.google.code.gson", "gson", "2.9.0"),
]


def home(version: str) -> Path:
    """The unpacked metastore of ``version`` (downloaded and unpacked once)."""
    release = RELEASES[version]
    archive = maven.fetch("org.apache.hive", release.artifact, version, "tar.gz", "bin")
    root = maven.unpack(archive, maven.cache_dir() / f"hive-metastore-{version}")
    return root / f"apache-hive-metastore-{version}-bin"


def _hadoop_jars() -> list[Path]:
    return [maven.fetch(group, artifact, version) for group, artifact, version in HADOOP_JARS]


def classpath(version: str, conf_dir: Path) -> str:
    """The JVM classpath of a metastore whose ``metastore-site.xml`` is in ``conf_dir``."""
    parts = [str(conf_dir), str(home(version) / "lib" / "*"), *(str(p) for p in _hadoop_jars())]
    return os.pathsep.join(parts)


def site_xml(version: str, settings: dict[str, str]) -> str:
    """``metastore-site.xml`` of ``settings`` plus what ``version`` needs to start."""
    merged = {**RELEASES[version].settings, **settings}
    props = "".join(f"  <property><name>{k}</name><value>{_xml(v)}</value></property>\n" for k, v in merged.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{props}</configuration>\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def derby_url(path: Path, create: bool = False) -> str:
    return f"jdbc:derby:;databaseName={path};create={'true' if create else 'false'}"


def derby_template(version: str, java: str = "java") -> Path:
    """A Derby database with ``version``'s schema (made once by its schematool; copy it, never open it)."""
    target = maven.cache_dir() / f"hive-metastore-{version}" / "derby-template"
    if target.exists():
        return target
    with maven.locked(target):
        if target.exists():
            return target
        work = Path(tempfile.mkdtemp(prefix="derby-template.", dir=target.parent))
        try:
            conf = work / "conf"
            conf.mkdir()
            db = work / "db"
            (conf / "metastore-site.xml").write_text(site_xml(version, {
                "javax.jdo.option.ConnectionURL": derby_url(db, create=True),
                "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
            }))
            env = {**os.environ, "METASTORE_HOME": str(home(version))}
            done = subprocess.run(
                [java, "-Xmx256m", "-cp", classpath(version, conf), RELEASES[version].schematool,
                 "-initSchema", "-dbType", "derby"],
                cwd=work, env=env, capture_output=True, text=True, timeout=600,
            )
            if done.returncode != 0:
                raise RuntimeError(f"schematool of Hive {version} failed ({done.returncode}):\n"
                                   f"{(done.stdout + done.stderr)[-3000:]}")
            db.rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def install() -> None:
    """Every release, the Hadoop jars and each release's Derby schema (``make engines``)."""
    for version in RELEASES:
        home(version)
        derby_template(version)


if __name__ == "__main__":
    install()
