"""``make jvm``: the Hive 4 metastore IDL, described as JSON from Hive's own released jar.

catalogd's HMS endpoint decodes calls with hmsclient's generated Hive 2.3 classes; Hive 3/4
clients send fields, structs and methods that IDL lacks. Hive publishes no Python code for its
newer IDL, but its generated Java classes on Maven Central carry every field's id, name,
requirement and type. ``jvm/hms-idl`` (``DescribeIdl``) reads them back by reflection into
``catalogd/jars/hive-metastore-idl.json``; ``catalogd.hive_idl`` builds the missing Python
classes from it at import. The jar is downloaded once (checked against Maven's SHA-1) into
``jvm/build/``; the JSON is rebuilt when the tool's source or the Hive version changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from catalogd.errors import UnsupportedError
from catalogd.jdk import find_javac, pyspark_jars

__all__ = ["HIVE_VERSION", "IDL_NAME", "build", "idl_path", "tool_root"]

#: The Hive release whose metastore IDL the endpoint speaks (besides hmsclient's 2.3).
HIVE_VERSION = "4.0.1"
IDL_NAME = "hive-metastore-idl.json"
_ARTIFACT = (f"org/apache/hive/hive-standalone-metastore-common/{HIVE_VERSION}/"
             f"hive-standalone-metastore-common-{HIVE_VERSION}.jar")
_CENTRAL = os.environ.get("CATALOGD_MAVEN", "https://repo1.maven.org/maven2")
_FIX = "run `make jvm` in the catalogd checkout (it needs a JDK and Maven Central), or install a catalogd wheel"


def idl_path() -> Path:
    """Where the package keeps the IDL description (``catalogd/jars/``, package data like the plugin's jar)."""
    return Path(__file__).resolve().parents[1] / "jars" / IDL_NAME


def tool_root() -> Path | None:
    """``jvm/hms-idl`` of a checkout (None in an installed package)."""
    root = Path(__file__).resolve().parents[2] / "jvm" / "hms-idl"
    return root if (root / "src").is_dir() else None


def _stamp(root: Path) -> str:
    digest = hashlib.sha256(HIVE_VERSION.encode())
    for path in sorted((root / "src").rglob("*.java")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _download(url: str, target: Path) -> Path:
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url + ".sha1", timeout=60) as response:
        expected = response.read().decode().split()[0].lower()
    fd, tmp = tempfile.mkstemp(prefix=target.name, dir=target.parent)
    try:
        digest = hashlib.sha1()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=300) as response:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != expected:
            raise UnsupportedError(f"{url}: SHA-1 {digest.hexdigest()} is not Maven's {expected}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def build(root: Path, out: Path) -> Path:
    """Describe Hive's IDL into ``out`` unless it is current (written whole, then renamed).

    Raises:
        UnsupportedError: no JDK, the download or the tool failed.
    """
    stamp = _stamp(root)
    if out.is_file():
        try:
            if json.loads(out.read_text()).get("stamp") == stamp:
                return out
        except (OSError, ValueError):
            pass
    javac = find_javac()
    if javac is None:
        raise UnsupportedError(f"no javac to build the Hive metastore IDL: {_FIX}")
    java = str(Path(javac).with_name("java"))
    jars = pyspark_jars()  # libthrift and libfb303, which the generated classes load
    build_dir = root.parent / "build" / "hms-idl"
    try:
        hive_jar = _download(f"{_CENTRAL}/{_ARTIFACT}", build_dir / Path(_ARTIFACT).name)
    except OSError as e:
        raise UnsupportedError(f"downloading Hive's metastore jar from {_CENTRAL} failed: {e}") from e
    work = Path(tempfile.mkdtemp(prefix="hms-idl-", dir=build_dir))
    try:
        classes = work / "classes"
        done = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-d", str(classes), "-cp", str(jars / "*"),
             *map(str, sorted((root / "src").rglob("*.java")))],
            capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise UnsupportedError(f"compiling {root} failed:\n{done.stderr.strip()}")
        described = subprocess.run(
            [java, "-Xmx512m", "-cp", f"{classes}:{hive_jar}:{jars / '*'}",
             "catalogd.hmsidl.DescribeIdl", str(hive_jar)],
            capture_output=True, text=True, timeout=600, check=False)
        if described.returncode != 0:
            raise UnsupportedError(f"describing {hive_jar.name} failed:\n{described.stderr.strip()[-2000:]}")
        idl = json.loads(described.stdout)
        idl["stamp"] = stamp
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = work / IDL_NAME
        partial.write_text(json.dumps(idl, sort_keys=True, separators=(",", ":")))
        partial.replace(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    root = tool_root()
    try:
        if root is None:
            if not idl_path().is_file():
                raise UnsupportedError(f"{idl_path()} is missing: {_FIX}")
            print(idl_path())
        else:
            print(build(root, idl_path()))
    except UnsupportedError as e:
        sys.exit(e.message)


if __name__ == "__main__":
    main()
