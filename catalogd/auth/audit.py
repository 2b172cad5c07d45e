"""The audit log: one JSON line per write and per denial on every surface, in <data-dir>/audit, rotated by size.

Writes (``ok``, ``error``) go to ``audit.jsonl``, denials to ``audit-denied.jsonl``, each file
with its own size budget, so that a flood of refused calls rotates only other denials away and
never the record of what was changed. Every text field is cut to a bound (with a marker saying
how long it was), so that one call cannot fill a file with one line. Denials repeated by one
client (same surface, address, principal, operation, object and message) within
``denial_window`` become one line with a ``count``: the first is written at once, the rest are
counted and summarised when the window ends, or when the log is closed.
"""

from __future__ import annotations

import datetime
import heapq
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "AUDIT_FILE",
    "DENIED_FILE",
    "FIELD_LIMITS",
    "MAX_PENDING_DENIALS",
    "OUTCOMES",
    "SURFACES",
    "AuditLog",
    "audit_path",
    "bounded",
    "denied_path",
    "read_audit",
]

logger = logging.getLogger(__name__)

#: Under the data dir.
AUDIT_DIR = "audit"
AUDIT_FILE = "audit.jsonl"
#: Denials, next to AUDIT_FILE, rotated on their own budget.
DENIED_FILE = "audit-denied.jsonl"
SURFACES = ("thrift", "http", "hms", "iceberg")
OUTCOMES = ("ok", "denied", "error")
#: The fields of a line, in order.
FIELDS = ("time", "principal", "surface", "client", "operation", "object", "outcome", "detail")
#: What a line summarising repeated denials adds after FIELDS: how many denials it stands for and
#: the times of the first and the last of them.
SUMMARY_FIELDS = ("count", "first", "last")
#: The most characters a field keeps; the rest is replaced by CUT_MARKER. Names, addresses and
#: operations are short in every honest call; a message may quote a name or two.
FIELD_LIMITS: dict[str, int] = {"principal": 256, "client": 256, "operation": 256, "object": 1024, "detail": 2048}
#: Appended to a cut field, with the length of the whole value.
CUT_MARKER = "...[cut: {length} characters in all]"
#: Distinct denials counted at once; past it the group whose window ends first is summarised early,
#: so that a client varying what it sends cannot grow this table without end.
MAX_PENDING_DENIALS = 4096


def audit_path(data_dir: Path) -> Path:
    """Where the daemon with ``data_dir`` writes its audit log (writes; denials go to ``denied_path``)."""
    return data_dir / AUDIT_DIR / AUDIT_FILE


def denied_path(path: Path) -> Path:
    """The file of denials that goes with the audit log ``path``."""
    return path.with_name(DENIED_FILE)


def _now() -> str:
    return _format(time.time())


def _format(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def bounded(value: str | None, limit: int) -> str | None:
    """``value`` cut to ``limit`` characters with a marker naming its whole length; None stays None."""
    if value is None or len(value) <= limit:
        return value
    return value[:limit] + CUT_MARKER.format(length=len(value))


class _RotatingFile:
    """One JSON-lines file (mode 0600) rotated by size into ``.1`` ... ``.<backups>``; not thread-safe."""

    def __init__(self, path: Path, max_bytes: int, backups: int, *, lazy: bool = False) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._closed = False
        self._fd: int | None = None
        self._size = 0
        if not lazy:
            self._start()

    def _start(self) -> None:
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size

    def _open(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.fchmod(fd, 0o600)
        return fd

    def write(self, line: bytes) -> None:
        if self._closed:
            return
        try:
            if self._fd is None:  # lazy: made at the first line (no empty file of denials that never came)
                self._start()
                assert self._fd is not None
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
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


#: What makes two denials "the same" for coalescing: surface, client address (not port: each
#: attempt may come on a new connection), principal, operation, object, message.
_DenialKey = tuple[str, str, str | None, str, str | None, str | None]


@dataclass
class _Repeats:
    """The denials of one key after the first, while its window is open."""

    entry: dict[str, Any]
    window_end: float
    count: int = 0
    first: float = 0.0
    last: float = 0.0


def _address(client: str) -> str:
    """``10.0.0.7`` of ``10.0.0.7:39000`` (``[::1]:5`` -> ``[::1]``); anything else as it is."""
    host, sep, port = client.rpartition(":")
    return host if sep and port.isdigit() else client


class AuditLog:
    """Appends audit lines (mode 0600, their directory 0700); thread-safe.

    Writes go to ``path``, denials to ``audit-denied.jsonl`` beside it. When a line would take a
    file past its budget (``max_bytes``; ``denied_max_bytes`` for denials) the file becomes
    ``<file>.1`` (``.1`` becomes ``.2`` ... up to its ``backups``; the oldest is deleted) and a new
    file is started. ``denial_window`` (seconds; 0: off) coalesces repeated denials; a thread
    writes each summary when its window ends. Callers pass names, addresses and messages, never a
    token: nothing here can tell one.
    """

    def __init__(self, path: Path, max_bytes: int = 10 * 1024 * 1024, backups: int = 5, *,
                 denied_max_bytes: int | None = None, denied_backups: int | None = None,
                 denial_window: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.denial_window = denial_window
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is cut by the umask, and an existing directory keeps its own.
        os.chmod(path.parent, 0o700)
        self._writes = _RotatingFile(path, max_bytes, backups)
        self._denials = _RotatingFile(denied_path(path), max_bytes if denied_max_bytes is None else denied_max_bytes,
                                      backups if denied_backups is None else denied_backups, lazy=True)
        self._repeats: dict[_DenialKey, _Repeats] = {}
        self._closed = False
        self._flusher: threading.Thread | None = None
        if denial_window > 0:
            self._flusher = threading.Thread(target=self._flush_loop, name="audit-denials", daemon=True)
            self._flusher.start()

    def record(self, *, principal: str | None, surface: str, client: str, operation: str,
               object: str | None, outcome: str, detail: str | None = None) -> None:
        """Append one line (or count a repeated denial); a failure to write is logged, never raised."""
        entry: dict[str, Any] = {
            "time": _format(self._wall_clock()), "principal": bounded(principal, FIELD_LIMITS["principal"]),
            "surface": surface, "client": bounded(client, FIELD_LIMITS["client"]),
            "operation": bounded(operation, FIELD_LIMITS["operation"]),
            "object": bounded(object, FIELD_LIMITS["object"]), "outcome": outcome,
            "detail": bounded(detail, FIELD_LIMITS["detail"])}
        with self._lock:
            if self._closed:
                return
            if outcome != "denied":
                self._writes.write(_line(entry))
                return
            if self.denial_window <= 0:
                self._denials.write(_line(entry))
                return
            key: _DenialKey = (surface, _address(entry["client"]), entry["principal"], entry["operation"],
                               entry["object"], entry["detail"])
            now = self._clock()
            repeats = self._repeats.get(key)
            if repeats is not None and now < repeats.window_end:
                if repeats.count == 0:
                    repeats.first = self._wall_clock()
                repeats.count += 1
                repeats.last = self._wall_clock()
                return
            if repeats is not None:  # its window is over: its summary first, keeping the file in time order
                self._summarise(key)
            if len(self._repeats) >= MAX_PENDING_DENIALS:
                self._summarise(next(iter(self._repeats)))  # the oldest window (see _flush_ended)
            self._denials.write(_line(entry))
            self._repeats[key] = _Repeats(entry, now + self.denial_window)
            self._wake.notify()

    def _summarise(self, key: _DenialKey) -> None:
        """Write the summary of ``key``'s repeats (if any) and forget it; the lock is held."""
        repeats = self._repeats.pop(key)
        if repeats.count == 0:
            return
        summary = {**repeats.entry, "time": _format(self._wall_clock()), "count": repeats.count,
                   "first": _format(repeats.first), "last": _format(repeats.last)}
        self._denials.write(_line(summary))

    def flush(self) -> None:
        """Write the summaries of every window that has ended."""
        with self._lock:
            self._flush_ended()

    def _flush_ended(self) -> None:
        # Every window is as long and a group is (re)inserted when it opens, so the dict's order is
        # the order the windows end in: stop at the first still open.
        now = self._clock()
        while self._repeats:
            key, repeats = next(iter(self._repeats.items()))
            if repeats.window_end > now:
                return
            self._summarise(key)

    def _flush_loop(self) -> None:
        with self._lock:
            while not self._closed:
                self._flush_ended()
                if self._repeats:
                    wait = next(iter(self._repeats.values())).window_end - self._clock()
                    self._wake.wait(max(wait, 0.01))
                else:
                    self._wake.wait()

    def close(self) -> None:
        """Summarise every open window (no denial is lost at shutdown), then close the files."""
        with self._lock:
            if self._closed:
                return
            for key in list(self._repeats):
                self._summarise(key)
            self._closed = True
            self._wake.notify_all()
            self._writes.close()
            self._denials.close()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join(timeout=5)


def _line(entry: dict[str, Any]) -> bytes:
    # A lone surrogate (a name decoded with surrogateescape) cannot be UTF-8: replaced, never raised.
    return (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


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


def _read_one(path: Path, limit: int, principal: str | None, denied: bool) -> list[dict[str, Any]]:
    """The last ``limit`` matching entries of one log and its rotated files, newest first."""
    found: list[dict[str, Any]] = []
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
                return found
    return found


def read_audit(path: Path, limit: int, principal: str | None = None, denied: bool = False) -> list[dict[str, Any]]:
    """The last ``limit`` entries (oldest first) that match: of ``principal``, only denials.

    Reads the writes' log ``path`` and the denials' log beside it, merged in time order.
    Lines that are not JSON objects (a line cut short by a crash) are skipped.
    """
    if limit <= 0:
        return []
    writes = _read_one(path, limit, principal, denied)[::-1]
    denials = _read_one(denied_path(path), limit, principal, denied)[::-1] if path != denied_path(path) else []
    # A merge, not a sort: each file keeps its own order; the ISO times interleave the two (a line
    # without a time, which catalogd never writes, goes after what it is compared with).
    merged = list(heapq.merge(writes, denials, key=lambda entry: str(entry.get("time", "\uffff"))))
    return merged[-limit:]
