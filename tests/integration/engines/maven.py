"""Downloads from Maven Central into the engines' cache, checked against Maven's own SHA-1 files.

A download goes to a temporary file beside its target and is renamed into place once its
checksum matches, under a lock file: two test processes (pytest-xdist) or two checkouts installing
the same artifact at once download it once, and a download cut short leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CENTRAL", "cache_dir", "fetch", "fetch_url", "locked", "unpack"]

CENTRAL = os.environ.get("CATALOGD_MAVEN", "https://repo1.maven.org/maven2")


def cache_dir() -> Path:
    """The engines' cache folder (``$CATALOGD_ENGINES``, or ``~/.cache/catalogd-engines``), made if missing."""
    root = Path(os.environ.get("CATALOGD_ENGINES") or Path.home() / ".cache" / "catalogd-engines")
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held by one process at a time (a ``.lock`` file beside ``path``): one download or unpack of a thing."""
    lock = path.with_name(path.name + ".lock")
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch_url(url: str, target: Path, sha1: str | None = None) -> Path:
    """Download ``url`` to ``target`` once (kept when present); ``sha1``: the expected digest, checked."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target):
        if target.exists():
            return target
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
        try:
            digest = hashlib.sha1()
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=120) as response:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if sha1 is not None and digest.hexdigest() != sha1.lower():
                raise RuntimeError(f"{url}: SHA-1 {digest.hexdigest()} is not Maven's {sha1}")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return target


def fetch(group: str, artifact: str, version: str, ext: str = "jar", classifier: str = "") -> Path:
    """One artifact of Maven Central in the cache (``<cache>/maven/<group path>/...``), downloaded once."""
    name = f"{artifact}-{version}{'-' + classifier if classifier else ''}.{ext}"
    path = f"{group.replace('.', '/')}/{artifact}/{version}/{name}"
    target = cache_dir() / "maven" / path
    if target.exists():
        return target
    with urllib.request.urlopen(f"{CENTRAL}/{path}.sha1", timeout=60) as response:
        sha1 = response.read().decode().split()[0]
    return fetch_url(f"{CENTRAL}/{path}", target, sha1)


def unpack(archive: Path, into: Path) -> Path:
    """Unpack a .tar.gz or .zip into ``into`` once (a marker file says it finished); returns ``into``."""
    done = into / ".unpacked"
    if done.exists():
        return into
    with locked(into):
        if done.exists():
            return into
        if into.exists():
            shutil.rmtree(into)
        tmp = Path(tempfile.mkdtemp(prefix=into.name + ".", dir=into.parent))
        try:
            if archive.name.endswith(".zip"):
                with zipfile.ZipFile(archive) as z:
                    z.extractall(tmp)
                    # zipfile drops the executable bits; launchers in bin/ need them.
                    for info in z.infolist():
                        mode = info.external_attr >> 16
                        if mode & 0o111:
                            (tmp / info.filename).chmod(mode & 0o777)
            else:
                with tarfile.open(archive) as t:
                    t.extractall(tmp, filter="tar")
            tmp.rename(into)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        done.touch()
    return into
