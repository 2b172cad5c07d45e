"""The daemon's metadata cache: encoded metastore answers by scope, bounded (LRU by entries and bytes), with a TTL.

It holds bytes (encoded Thrift), never objects: every reader decodes its own copy,
so no caller can change what another one reads. Entries are filed under a scope,
``(catalog, database, table)`` with names lower-cased; table ``""`` is the database
(its listings), ``(catalog, "", "")`` the catalog (its database list). A write
invalidates its scope and the scopes that list it at once; a write made behind
catalogd's back shows when the entries expire, ``ttl`` seconds after their fetch began.

Readers that race writers: ``token(scope)`` is taken before the metastore is asked,
``put(..., token)`` stores the answer only if nothing invalidated its scope (or an
enclosing one) since, so an answer fetched before a write is never kept after it.

This module is the store only; what is read and written through it, and under which key,
is ``caching_client.CachingHiveClient``'s business (the one reader and invalidator).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from catalogd.config import CacheConfig

logger = logging.getLogger(__name__)

__all__ = ["MetadataCache", "Scope"]

#: (catalog, database, table); table "" = the database; ("cat", "", "") = catalog-wide.
Scope = tuple[str, str, str]

#: Invalidation marks kept before the oldest are folded into one floor (see ``_prune_marks``).
_MAX_MARKS = 65536

@dataclass
class _Counts:
    hits: int = 0
    misses: int = 0
    entries: int = 0
    bytes: int = 0
    evictions: int = 0


@dataclass
class _Entry:
    scope: Scope
    value: bytes
    size: int
    expires: float


@dataclass
class _Index:
    """Keys of one catalog's entries by database and table (for invalidation without a scan)."""

    by_db: dict[str, dict[str, set[tuple[Scope, Hashable]]]] = field(default_factory=dict)


def _size(key: Hashable, value: bytes) -> int:
    """An entry's weight: the answer's bytes plus the byte strings in its key (a call's
    encoded args can be long too)."""
    size = len(value)
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if isinstance(part, bytes | bytearray | str):
            size += len(part)
    return size


def _norm(scope: Scope) -> Scope:
    catalog, database, table = scope
    return (catalog, database.lower(), table.lower())


class MetadataCache:
    """One bounded cache of encoded metastore answers for every catalog of the daemon.

    Args:
        ttl: seconds an answer is served, counted from when its fetch began; 0: off
            (every lookup misses, nothing is stored).
        max_entries: the most entries kept; the least recently used go first.
        max_bytes: the most bytes kept (``_size`` of each entry); an answer bigger than
            this is not stored.
        clock: seconds, monotonic (tests pass a fake one).
    """

    def __init__(self, ttl: float, max_entries: int, max_bytes: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = float(ttl)
        self.max_entries = max(0, int(max_entries))
        self.max_bytes = max(0, int(max_bytes))
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Scope, Hashable], _Entry] = OrderedDict()
        self._index: dict[str, _Index] = {}
        self._bytes = 0
        #: The last token handed out or invalidation stamped: nanoseconds of ``clock``, made
        #: strictly increasing, so a token also says when its fetch began.
        self._seq = 0
        #: Invalidation stamps by scope (a table; a database's listings; a catalog's list).
        self._marks: OrderedDict[Scope, int] = OrderedDict()
        #: Invalidation stamps covering everything below: (catalog, database, "") for a
        #: database and its tables, (catalog, "", "") for a whole catalog.
        self._deep: OrderedDict[Scope, int] = OrderedDict()
        #: Tokens older than this are refused (marks older than it were forgotten).
        self._floor = 0
        self._counts: dict[str, _Counts] = {}
        self._sharing: Callable[[str], list[str]] | None = None
        self._announce: Callable[[str, str, str], None] | None = None

    @property
    def enabled(self) -> bool:
        return self.ttl > 0 and self.max_entries > 0 and self.max_bytes > 0

    @classmethod
    def from_config(cls, config: CacheConfig) -> MetadataCache:
        """From ``Config.cache`` (a ``CacheConfig``)."""
        return cls(config.ttl.total_seconds(), config.max_entries, config.max_bytes)

    # ------------------------------------------------------------ plumbing

    def _next(self) -> int:
        """A new stamp: the clock in nanoseconds, but always past the last one. Call locked."""
        self._seq = max(self._seq + 1, int(self._clock() * 1e9))
        return self._seq

    def _counts_of(self, catalog: str) -> _Counts:
        counts = self._counts.get(catalog)
        if counts is None:
            counts = self._counts[catalog] = _Counts()
        return counts

    def _drop(self, key: tuple[Scope, Hashable], evicted: bool = False) -> None:
        """Remove one entry (call locked)."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        catalog, database, table = entry.scope
        self._bytes -= entry.size
        counts = self._counts_of(catalog)
        counts.entries -= 1
        counts.bytes -= entry.size
        if evicted:
            counts.evictions += 1
        index = self._index.get(catalog)
        if index is not None:
            tables = index.by_db.get(database)
            if tables is not None:
                keys = tables.get(table)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del tables[table]
                if not tables:
                    del index.by_db[database]
            if not index.by_db:
                del self._index[catalog]

    def _drop_scope(self, catalog: str, database: str, table: str | None) -> None:
        """Remove a scope's entries; ``table`` None: the database's and all its tables'."""
        index = self._index.get(catalog)
        if index is None:
            return
        tables = index.by_db.get(database)
        if tables is None:
            return
        groups = list(tables.values()) if table is None else [tables.get(table, set())]
        for key in [k for group in groups for k in group]:
            self._drop(key)

    def _stamp(self, scope: Scope) -> int:
        """The last invalidation that covers ``scope`` (call locked)."""
        catalog, database, _ = scope
        stamp = max(self._marks.get(scope, 0), self._deep.get((catalog, "", ""), 0))
        if database:
            stamp = max(stamp, self._deep.get((catalog, database, ""), 0))
        return stamp

    def _mark(self, marks: OrderedDict[Scope, int], scope: Scope, stamp: int) -> None:
        marks[scope] = stamp
        marks.move_to_end(scope)

    def _prune_marks(self) -> None:
        """Forget the oldest marks once there are many; tokens older than the newest mark
        forgotten are refused from then on (so forgetting never lets a stale answer in)."""
        for marks in (self._marks, self._deep):
            while len(marks) > _MAX_MARKS:
                _, stamp = marks.popitem(last=False)
                self._floor = max(self._floor, stamp)

    # ------------------------------------------------------------ the interface

    def token(self, scope: Scope) -> int:
        """Take before asking the metastore; hand to ``put`` with the answer."""
        with self._lock:
            return self._next()

    def get(self, scope: Scope, key: Hashable) -> bytes | None:
        """The stored answer, or None (a miss: absent, expired, or the cache is off)."""
        scope = _norm(scope)
        if not self.enabled:
            with self._lock:
                self._counts_of(scope[0]).misses += 1
            return None
        with self._lock:
            counts = self._counts_of(scope[0])
            full = (scope, key)
            entry = self._entries.get(full)
            if entry is None:
                counts.misses += 1
                return None
            if entry.expires <= self._clock():
                self._drop(full)
                counts.misses += 1
                return None
            self._entries.move_to_end(full)
            counts.hits += 1
            return entry.value

    def put(self, scope: Scope, key: Hashable, value: bytes, token: int) -> None:
        """Store an answer fetched after ``token()``, unless its scope was invalidated since
        (the answer may predate the write), it is already expired, or it cannot fit."""
        if not self.enabled:
            return
        scope = _norm(scope)
        value = bytes(value)
        size = _size(key, value)
        if size > self.max_bytes:
            return
        with self._lock:
            if token < self._floor or self._stamp(scope) >= token:
                return
            expires = token / 1e9 + self.ttl
            if expires <= self._clock():
                return
            full = (scope, key)
            self._drop(full)
            catalog, database, table = scope
            self._entries[full] = _Entry(scope, value, size, expires)
            index = self._index.setdefault(catalog, _Index())
            index.by_db.setdefault(database, {}).setdefault(table, set()).add(full)
            self._bytes += size
            counts = self._counts_of(catalog)
            counts.entries += 1
            counts.bytes += size
            while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                oldest = next(iter(self._entries))
                self._drop(oldest, evicted=True)

    def share(self, sharing: Callable[[str], list[str]]) -> None:
        """Tell the cache which catalogs read the same metastore (``sharing(name)`` -> the other
        catalogs' names): a write through one invalidates the same objects in the others."""
        self._sharing = sharing

    def announce(self, announce: Callable[[str, str, str], None]) -> None:
        """Tell ``announce(catalog, database, table)`` of every invalidation made here (the other
        members of a cluster are told through it: ``server.cache_peers``)."""
        self._announce = announce

    def invalidate(self, catalog: str, database: str = "", table: str = "", *, announce: bool = True) -> None:
        """Forget what a write may have changed, at once, and keep answers fetched before it out.

        A table: its entries, its database's (listings) and the catalog's. A database: its
        entries, all its tables', the catalog's. A catalog alone: everything of it. The same
        goes for every catalog on the same metastore (``share``). ``announce`` False: an
        invalidation received from another member, not passed on again.
        """
        others = self._sharing(catalog) if self._sharing is not None else []
        for name in [catalog, *others]:
            self._invalidate_one(name, database, table)
        if announce and self._announce is not None:
            self._announce(catalog, database, table)

    def _invalidate_one(self, catalog: str, database: str, table: str) -> None:
        database, table = database.lower(), table.lower()
        with self._lock:
            stamp = self._next()
            if not database:
                self._mark(self._deep, (catalog, "", ""), stamp)
                index = self._index.get(catalog)
                if index is not None:
                    for db in list(index.by_db):
                        self._drop_scope(catalog, db, None)
            else:
                if table:
                    self._mark(self._marks, (catalog, database, table), stamp)
                    self._drop_scope(catalog, database, table)
                else:
                    self._mark(self._deep, (catalog, database, ""), stamp)
                    self._drop_scope(catalog, database, None)
                self._mark(self._marks, (catalog, database, ""), stamp)
                self._mark(self._marks, (catalog, "", ""), stamp)
                self._drop_scope(catalog, database, "")
                self._drop_scope(catalog, "", "")
            self._prune_marks()

    def clear(self) -> None:
        """Forget everything (as an invalidation of every catalog)."""
        with self._lock:
            catalogs = list(self._index) + [c for c in self._counts if c not in self._index]
        for catalog in catalogs:
            self.invalidate(catalog, announce=False)

    def stats(self) -> dict[str, Any]:
        """Totals (hits, misses, entries, bytes, evictions) and the same by catalog."""
        with self._lock:
            per = {name: dict(vars(c)) for name, c in sorted(self._counts.items())}
        totals = {k: sum(c[k] for c in per.values()) for k in ("hits", "misses", "entries", "bytes", "evictions")}
        return {**totals, "enabled": self.enabled, "ttl": self.ttl, "max_entries": self.max_entries,
                "max_bytes": self.max_bytes, "catalogs": per}
