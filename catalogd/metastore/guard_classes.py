"""The Java classes of the embedded metastore's key check (``jvm/metastore-guard``): found, or compiled.

HMS 2.3 in the pyspark jars has no way to check a secret, so catalogd adds one small class
(``catalogd.guard.KeyCheckingTransportFactory``, see ``access_key``). Its classes are kept by
the hash of their sources, so a stale build is never used:

* ``jvm/build/<hash>/`` of a checkout, built by ``make`` (``python -m catalogd.metastore.guard_classes``);
* ``<data-dir>/jvm/<hash>/``, compiled at the first start of an embedded metastore when the
  first is missing (a ``pip install``: the sources are installed under ``<prefix>/share/catalogd/jvm``)
  and a JDK's ``javac`` is found.

Without either, an embedded metastore does not start (it would serve anyone on the machine).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from catalogd.errors import MetastoreUnavailableError
from catalogd.jdk import find_javac  # shared with the Spark plugin's build; tests replace it here
from catalogd.metastore.jars import pyspark_jars_dir

logger = logging.getLogger(__name__)

__all__ = ["CLASS_NAME", "build", "classes_dir", "source_root"]

CLASS_NAME = "catalogd.guard.KeyCheckingTransportFactory"
_CLASS_FILE = CLASS_NAME.replace(".", "/") + ".class"
_SOURCES = "metastore-guard/src"
#: The jars it compiles against (from the pyspark wheel): Thrift's transports and slf4j.
_CLASSPATH_JARS = ("libthrift-*.jar", "slf4j-api-*.jar")
_FIX = ("install a JDK (Debian: apt-get install openjdk-17-jdk-headless) so catalogd can compile it at start, "
        "or run `make` in a catalogd checkout")


def source_root() -> Path | None:
    """The ``jvm/`` folder that holds the sources: a checkout's, else the installed copy."""
    for root in (Path(__file__).resolve().parents[2] / "jvm", Path(sys.prefix) / "share" / "catalogd" / "jvm"):
        if (root / _SOURCES).is_dir():
            return root
    return None


def _sources(root: Path) -> list[Path]:
    return sorted((root / _SOURCES).rglob("*.java"))


def source_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in _sources(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build(root: Path, out: Path, jars: Path, javac: str) -> Path:
    """Compile the sources under ``root`` into ``out/<hash>/classes`` (all at once: a half-written
    folder is never found); the classes folder.

    Raises:
        MetastoreUnavailableError: javac failed.
    """
    target = out / source_hash(root)
    classes = target / "classes"
    if (classes / _CLASS_FILE).is_file():
        return classes
    classpath = [str(jar) for pattern in _CLASSPATH_JARS for jar in sorted(jars.glob(pattern))]
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        done = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", ":".join(classpath),
             "-d", str(work / "classes"), *map(str, _sources(root))],
            capture_output=True, text=True, timeout=300, check=False,
        )
        if done.returncode != 0:
            raise MetastoreUnavailableError(f"compiling the metastore guard ({root / _SOURCES}) failed:\n"
                                            f"{done.stderr.strip()}")
        try:
            work.rename(target)
        except OSError:  # built meanwhile by another process: keep that one
            if not (classes / _CLASS_FILE).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return classes


def classes_dir(data_dir: Path, jars: Path) -> Path:
    """The folder of the guard's compiled classes, for the metastore's class path.

    Raises:
        MetastoreUnavailableError: they are not built and cannot be (no sources, or no javac).
    """
    root = source_root()
    if root is None:
        raise MetastoreUnavailableError(
            "the embedded metastore's key check (jvm/metastore-guard) is not installed: reinstall catalogd")
    digest = source_hash(root)
    for place in (root / "build", Path(data_dir) / "jvm"):
        classes = place / digest / "classes"
        if (classes / _CLASS_FILE).is_file():
            return classes
    javac = find_javac()
    if javac is None:
        raise MetastoreUnavailableError(
            f"the embedded metastore's key check (jvm/metastore-guard) is not compiled and no javac was found: {_FIX}")
    logger.info("compiling the embedded metastore's key check into %s", Path(data_dir) / "jvm")
    return build(root, Path(data_dir) / "jvm", jars, javac)


def main() -> None:
    """``make``: compile the checkout's sources into ``jvm/build``."""
    root = source_root()
    javac = find_javac()
    if root is None or javac is None:
        sys.exit(f"cannot build the metastore guard: {'no sources' if root is None else 'no javac'}; {_FIX}")
    try:
        print(build(root, root / "build", pyspark_jars_dir(), javac))
    except MetastoreUnavailableError as e:
        sys.exit(e.message)


if __name__ == "__main__":
    main()
