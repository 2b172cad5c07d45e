"""The dynamic tables this daemon drives, in memory: one ``Entry`` each, found by full name.

HMS is the source of truth (see ``store``); an entry holds only what driving a table
needs between calls: its mode and state, the next fire time, the streaming job.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from catalogd.dynamic.freshness import Freshness
from catalogd.dynamic.runner import Process
from catalogd.model import RefreshMode, RefreshRun, RefreshState


@dataclass
class Stream:
    """A CONTINUOUS table's streaming job as the supervisor sees it."""

    proc: Process | None = None
    run: RefreshRun | None = None
    work_dir: Path | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float = 0.0
    restarts: int = 0
    ever_started: bool = False
    application_id: str | None = None
    #: The running job's minted token (auth on), revoked when the job ends or is stopped.
    token: str | None = None
    #: How the running job refreshes (``refresh``, ``refreshWhy``), as its spec says.
    refresh_way: dict[str, str] | None = None
    #: The last of the job's triggers recorded as a run (incremental tables record each commit).
    recorded_batch: int = -1


@dataclass
class Entry:
    """One dynamic table this daemon drives; ``lock`` guards its fields."""

    catalog: str
    database: str
    name: str
    freshness: Freshness
    mode: RefreshMode
    state: RefreshState
    formatters: dict[str, str] = field(default_factory=dict)
    #: The hive catalog the query reads when it is not ``catalog`` (a table in a jdbc catalog).
    source_catalog: str | None = None
    #: The table's partition columns, once a refresh of one partition asked the metastore (None: not yet).
    partition_keys: list[str] | None = None
    next_fire: datetime.datetime | None = None
    data_time: float | None = None
    last_duration: float = 0.0
    stream: Stream | None = None
    #: Streaming jobs of this table being stopped (outside the lock): no new job starts
    #: while one of them lives, since both would use one checkpoint.
    retiring: list[Process] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"


class Registry:
    """The driven entries by full name (``catalog.database.name``); safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}

    def get(self, full_name: str) -> Entry | None:
        with self._lock:
            return self._entries.get(full_name)

    def is_live(self, entry: Entry) -> bool:
        """Whether ``entry`` still drives its table (not dropped, let go or replaced)."""
        return self.get(entry.full_name) is entry

    def put(self, entry: Entry) -> None:
        with self._lock:
            self._entries[entry.full_name] = entry

    def add(self, entry: Entry) -> bool:
        """Add ``entry`` unless its table has one already; whether it was added."""
        with self._lock:
            if entry.full_name in self._entries:
                return False
            self._entries[entry.full_name] = entry
            return True

    def remove(self, full_name: str, only: Entry | None = None) -> Entry | None:
        """Take a table's entry out (only if it is ``only``, when given); the entry removed."""
        with self._lock:
            entry = self._entries.get(full_name)
            if entry is None or (only is not None and entry is not only):
                return None
            del self._entries[full_name]
            return entry

    def remove_where(self, match: Callable[[Entry], bool]) -> list[Entry]:
        with self._lock:
            gone = [e for e in self._entries.values() if match(e)]
            for entry in gone:
                del self._entries[entry.full_name]
            return gone

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
