"""The jars catalogd runs in Spark: the Spark catalog plugin's (``jvm/spark-catalog``) and
its own Spark Connect server's (``jvm/connect-server``): found, or built.

``catalogd.spark.CatalogdCatalog`` (Java) makes every catalogd catalog a Spark catalog
(``spark.sql.catalog.<name>``) whose CREATE / REPLACE ... AS SELECT and INSERT go through
catalogd stages (docs/spark.md). It is compiled against the jars of the installed pyspark
wheel and shipped inside this package as ``catalogd/jars/catalogd-spark.jar``:

* ``make`` builds it in a checkout (``python -m catalogd.spark.plugin``); the jar records the
  hash of its sources, so a stale jar is rebuilt, never used;
* a wheel carries the built jar (package data), and ``plugin_jar()`` finds it there.

``catalogd.connect.ConnectServer`` is the Spark Connect server the daemon starts for
``spark.engine: connect`` (``connect_server_jar()``, ``catalogd.dynamic.connect``); it is a jar
of its own, built and found the same way, so that a Spark whose server internals changed can
fail its build without taking the catalog plugin with it.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from catalogd.errors import UnsupportedError
from catalogd.jdk import find_javac, pyspark_jars

__all__ = ["CATALOG_CLASS", "CONNECT_SERVER_CLASS", "EXTENSIONS_CLASS", "build", "connect_server_jar", "plugin_jar"]

#: ``spark.sql.catalog.<name>``'s value.
CATALOG_CLASS = "catalogd.spark.CatalogdCatalog"
#: ``spark.sql.extensions``'s value: the dynamic-table statements in Spark SQL.
EXTENSIONS_CLASS = "catalogd.spark.CatalogdExtensions"
JAR_NAME = "catalogd-spark.jar"
#: The main class of catalogd's Spark Connect server (``jvm/connect-server``).
CONNECT_SERVER_CLASS = "catalogd.connect.ConnectServer"
CONNECT_SERVER_JAR_NAME = "catalogd-connect.jar"
_HASH_ENTRY = "META-INF/catalogd-sources.sha256"
_FOLDERS = ("gen", "src")
_FIX = ("run `make` in the catalogd checkout (it needs a JDK: apt-get install openjdk-17-jdk-headless), "
        "or install a catalogd wheel, which carries the jar")


def _package_jar(name: str = JAR_NAME) -> Path:
    return Path(__file__).resolve().parents[1] / "jars" / name


def source_root(folder: str = "spark-catalog") -> Path | None:
    """``jvm/<folder>`` of a checkout (None in an installed package)."""
    root = Path(__file__).resolve().parents[2] / "jvm" / folder
    return root if (root / "src").is_dir() else None


def _sources(root: Path) -> list[Path]:
    return sorted(p for folder in _FOLDERS for p in (root / folder).rglob("*.java"))


def source_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in _sources(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _jar_hash(jar: Path) -> str | None:
    try:
        with zipfile.ZipFile(jar) as z:
            return z.read(_HASH_ENTRY).decode().strip()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def build(root: Path, jar: Path, jars: Path, javac: str, what: str = "the Spark catalog plugin") -> Path:
    """Compile ``root``'s sources against ``jars`` (pyspark's) into ``jar`` (written whole, then
    renamed into place: a half-written jar is never found). Nothing to do when it is current.

    Raises:
        UnsupportedError: javac failed.
    """
    digest = source_hash(root)
    if jar.is_file() and _jar_hash(jar) == digest:
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=jar.parent))
    try:
        classes = work / "classes"
        done = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", str(jars / "*"),
             "-d", str(classes), *map(str, _sources(root))],
            capture_output=True, text=True, timeout=600, check=False,
        )
        if done.returncode != 0:
            raise UnsupportedError(f"compiling {what} ({root}) failed:\n{done.stderr.strip()}")
        partial = work / JAR_NAME
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: catalogd\n\n")
            z.writestr(_HASH_ENTRY, digest + "\n")
            for path in sorted(classes.rglob("*.class")):
                z.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return jar


def plugin_jar() -> Path:
    """The plugin's jar, for ``spark.jars``: current with the checkout's sources (built when it is
    not and a JDK is there), or the one an installed package carries.

    Raises:
        UnsupportedError: there is none and it cannot be built.
    """
    return _found_or_built(_package_jar(), source_root(), "the Spark catalog plugin")


def connect_server_jar() -> Path:
    """The jar of catalogd's Spark Connect server (``CONNECT_SERVER_CLASS``), found or built as
    ``plugin_jar``'s.

    Raises:
        UnsupportedError: there is none and it cannot be built.
    """
    return _found_or_built(_package_jar(CONNECT_SERVER_JAR_NAME), source_root("connect-server"),
                           "catalogd's Spark Connect server")


def _found_or_built(jar: Path, root: Path | None, what: str) -> Path:
    if root is None:
        if jar.is_file():
            return jar
        raise UnsupportedError(f"{what} ({jar}) is not installed: {_FIX}")
    if jar.is_file() and _jar_hash(jar) == source_hash(root):
        return jar
    javac = find_javac()
    if javac is None:
        raise UnsupportedError(f"{what} is not built and no javac was found: {_FIX}")
    return build(root, jar, pyspark_jars(), javac, what)


def main() -> None:
    """``make``: build the checkout's jars into ``catalogd/jars``."""
    try:
        print(plugin_jar())
        print(connect_server_jar())
    except UnsupportedError as e:
        sys.exit(e.message)


if __name__ == "__main__":
    main()
