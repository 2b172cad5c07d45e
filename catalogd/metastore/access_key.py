"""The key that opens an embedded metastore: only catalogd's connections carry it.

An embedded metastore listens on a loopback TCP port, which every process of the machine may
connect to. So catalogd generates a key at each start of a catalog's embedded metastore, writes
it to ``<data-dir>/catalogs/<name>/conf/metastore.key`` (mode 0600, in a 0700 directory; never
on a command line, never logged), and the metastore's JVM (``jvm/metastore-guard``) serves a
connection only after it sent ``MAGIC`` and the key, before any Thrift or SASL byte. Every
client of catalogd's that opens a socket to a backing metastore calls :func:`send_key` right
after connecting.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
from collections.abc import Callable
from pathlib import Path

from catalogd.errors import MetastoreUnavailableError

__all__ = ["KEY_FILE", "MAGIC", "KeySource", "file_key", "new_key", "preamble", "send_key"]

#: What a connection sends first; the same bytes as ``KeyCheckingTransportFactory.MAGIC``.
MAGIC = b"catalogd-metastore-key-1:"
#: The key file's name in the catalog's (private) ``conf`` directory.
KEY_FILE = "metastore.key"
_KEY = re.compile(r"[0-9a-f]{64}")

#: The bytes to send first on a new connection to one metastore; None: it takes none (a remote
#: metastore not run by catalogd). Called per connection: a key file is read again each time, so
#: a metastore restarted with a new key is reached without a reload.
KeySource = Callable[[], bytes | None]


def new_key() -> str:
    """32 random bytes as 64 lower-case hex digits."""
    return secrets.token_hex(32)


def preamble(key: str) -> bytes:
    return MAGIC + key.encode("ascii")


def file_key(path: Path) -> KeySource:
    """A key source that reads ``path`` (an embedded metastore's key file) at each new connection.

    The file must be a regular file of this process's user, unreadable by anybody else, as catalogd writes it.
    """

    def read() -> bytes:
        what = f"metastore key file {str(path)!r}"
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
                raise MetastoreUnavailableError(f"{what} must be a regular file of uid {os.geteuid()} with mode 0600")
            key = path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise MetastoreUnavailableError(f"{what} cannot be read ({e.__class__.__name__}); it is written when "
                                            "its catalogd starts the metastore") from None
        if not _KEY.fullmatch(key):
            raise MetastoreUnavailableError(f"{what} does not hold a metastore key (64 hex digits)")
        return preamble(key)

    return read


def send_key(sock: socket.socket, key: KeySource | None) -> None:
    """Send the key on a new connection, before anything else (nothing when the metastore takes none).

    Raises:
        MetastoreUnavailableError: the key file cannot be read.
        OSError: the connection broke.
    """
    if key is None:
        return
    data = key()
    if data:
        sock.sendall(data)
