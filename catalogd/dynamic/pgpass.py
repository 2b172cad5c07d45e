"""How catalogd's Spark Connect server learns a jdbc catalog's password: a PostgreSQL password
file (``PGPASSFILE``) of its own, which the PostgreSQL JDBC driver reads when a connection is
given no password.

A Connect run is driven from the daemon's process, and anything it gives Spark's JDBC source goes
into the run's plan, which the server logs whole at INFO (``SparkConnectExecutionManager``'s
``ExecuteInfo``) and shows in its UI's Connect tab; a session setting is handed back redacted, so
the run cannot read it back (issue 31, row 12). The password file keeps it out of both: it is
written 0600 in the server's 0700 directory, rewritten whole (through a temporary file renamed
over it) when a run brings a password it lacks, read by the driver at each connection, and
removed with the server.

Format (libpq's, which pgjdbc 42.3+ follows): ``host:port:database:user:password`` per line,
``*`` matching anything, ``:`` and ``\\`` escaped with a backslash.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

#: The variable pgjdbc reads the file's path from.
PGPASSFILE_ENV = "PGPASSFILE"
_DEFAULT_PORT = "5432"
_HOSTS = re.compile(r"jdbc:postgresql://([^/?#]*)")


def _escape(field: str) -> str:
    return field.replace("\\", "\\\\").replace(":", "\\:")


def lines(url: str, user: str | None, password: str) -> list[str]:
    """The password file's lines for a jdbc catalog at ``url`` (``jdbc:postgresql://host[:port][,...]/db``):
    one per host, any database; any host when the URL names none (``jdbc:postgresql:db``)."""
    found = _HOSTS.match(url)
    hosts: list[tuple[str, str]] = []
    for spec in (found.group(1).split(",") if found else []):
        if not spec:
            continue
        if spec.startswith("["):  # [IPv6]:port
            host, _, rest = spec[1:].partition("]")
            port = rest.removeprefix(":") or _DEFAULT_PORT
        else:
            host, _, port = spec.partition(":")
            port = port or _DEFAULT_PORT
        hosts.append((host, port))
    who = _escape(user) if user else "*"
    return [f"{_escape(h)}:{_escape(p)}:*:{who}:{_escape(password)}" for h, p in hosts or [("*", "*")]]


class PasswordFile:
    """One server's password file: the lines given so far, written whole on each change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._lines: dict[tuple[str, str | None], list[str]] = {}
        #: Whether the file is there (``create``d for a server's start, not ``remove``d since).
        self._written = False

    def create(self) -> None:
        """Write the file with what it was given so far: before each start of the server (its
        directory is made then; a password given before waits for it)."""
        with self._lock:
            self._write()
            self._written = True

    def give(self, url: str, user: str | None, password: str) -> None:
        """Have the file hold this catalog's password (a changed one replaces the old)."""
        new = lines(url, user, password)
        with self._lock:
            if self._lines.get((url, user)) == new:
                return
            self._lines[(url, user)] = new
            if self._written:
                self._write()

    def remove(self) -> None:
        with self._lock:
            self._written = False
            self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{line}\n" for group in self._lines.values() for line in group)
        os.replace(tmp, self.path)


__all__ = ["PGPASSFILE_ENV", "PasswordFile", "lines"]
