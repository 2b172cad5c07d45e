"""The audit log: one JSON line per write and per denial on every surface, in <data-dir>/audit, rotated by size."""

from __future__ import annotations

import datetime
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["AUDIT_FILE", "OUTCOMES", "SURFACES", "AuditLog", "audit_path", "read_audit"]

logger = logging.getLogger(__name__)

#: Under the data dir.
AUDIT_DIR = "audit"
AUDIT_FILE = "audit.jsonl"
SURFACES = ("thrift", "http", "hms")
OUTCOMES = ("ok", "denied", "error")
#: The fields of a line, in order.
FIELDS = ("time", "principal", "surface", "client", "operation", "object", "outcome", "detail")


def audit_path(data_dir: Path) -> Path:
    """Where the daemon with ``data_dir`` writes its audit log."""
    return data_dir / AUDIT_DIR / AUDIT_FILE


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class AuditLog:
    """Appends audit lines to ``path`` (mode 0600, its directory 0700); thread-safe.

    When a line would take the file past ``max_bytes`` the file becomes ``<path>.1`` (``.1``
    becomes ``.2`` ... up to ``backups``; the oldest is deleted) and a new file is started.
    Callers pass names, addresses and messages, never a token: nothing here can tell one.
    """

    def __init__(self, path: Path, max_bytes: int = 10 * 1024 * 1024, backups: int = 5) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is cut by the umask, and an existing directory keeps its own.
        os.chmod(path.parent, 0o700)
        self._fd: int | None = self._open()
        self._size = os.fstat(self._fd).st_size

    def _open(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.fchmod(fd, 0o600)
        return fd

    def record(self, *, principal: str | None, surface: str, client: str, operation: str,
               object: str | None, outcome: str, detail: str | None = None) -> None:
        """Append one line; a failure to write is logged, never raised (the call it records goes on)."""
        entry = {"time": _now(), "principal": principal, "surface": surface, "client": client,
                 "operation": operation, "object": object, "outcome": outcome, "detail": detail}
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode()
        with self._lock:
            if self._fd is None:
                return
            try:
                if self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                os.write(self._fd, line)
                self._size += len(line)
            except OSError as e:
                logger.error("audit log %s: cannot write: %s", self.path, e)

    def _rotate(self) -> None:
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
        else:
            for index in range(self.backups - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{index}")
                if older.exists():
                    older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        self._fd = self._open()
        self._size = 0

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _files(path: Path) -> Iterator[Path]:
    """The log and its rotated files, newest first."""
    if path.exists():
        yield path
    index = 1
    while True:
        older = path.with_name(f"{path.name}.{index}")
        if not older.exists():
            return
        yield older
        index += 1


def read_audit(path: Path, limit: int, principal: str | None = None, denied: bool = False) -> list[dict[str, Any]]:
    """The last ``limit`` entries (oldest first) that match: of ``principal``, only denials.

    Lines that are not JSON objects (a line cut short by a crash) are skipped.
    """
    found: list[dict[str, Any]] = []
    if limit <= 0:
        return found
    for file in _files(path):
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as e:
            logger.warning("audit log %s: cannot read: %s", file, e)
            continue
        for line in reversed(lines):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            if principal is not None and entry.get("principal") != principal:
                continue
            if denied and entry.get("outcome") != "denied":
                continue
            found.append(entry)
            if len(found) == limit:
                return found[::-1]
    return found[::-1]
