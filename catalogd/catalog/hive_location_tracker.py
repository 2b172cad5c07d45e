"""Where a hive catalog's objects lie, kept current at per-object cost: the session's location index.

Judging a claim or a deletion needs the directories of the objects in and around one path
(``location_index``), never a read of the whole catalog on a client's call. The index is:

- **kept current from catalogd's own writes**: every write through the session's client, the
  HMS endpoint's relayed ones included (``CachingHiveClient`` tells ``written``), marks the
  (database, table) it touched; the next judgment reads just those objects again (a table and
  its partitions: the objects involved) before it looks;
- **reconciled in the background** with the metastore, one pass over the catalog at a time
  (100 tables a call, the partitions of partitioned tables), paced so that a pass uses at
  most a third of one thread and starts at least ``RECONCILE_GAP`` after the last one ended.
  Only changes made behind catalogd's back (another metastore client) wait for it: they show
  within one pass plus the gap (the window; docs/operations.md gives it measured).

The index is saved (``<data-dir>/catalogs/<name>/locations.json``, 0600: an authority may
carry credentials) after every pass and when the daemon stops, with the objects written since
their last read; every write between two saves is also appended to a journal
(``locations.journal``), so that a daemon killed in between knows at start which objects to
read again. Both are read back at start: judgments go on at once, and what changed behind
catalogd's back meanwhile shows at the first pass, as any such change does. Without a saved
index (the first start, another metastore, an unreadable file) the index does not know the
catalog: a judgment waits for the first pass (``INDEX_WAIT`` at most, then it is refused as
metastore-unavailable, to be retried) rather than guess, so a new object is never placed on,
and a drop never deletes, a directory another object uses. The wait is the background
pass's, not a scan made by the call.

A read started before a write of the same object is never applied over that write (each
write is numbered; a read carries the number it started at).

The index also notes which tables carry one of a few parameters (``indexed``: a dynamic
table's ``catalogd.dt.freshness``), read with their directories, saved with them: the
dynamic tables are found at start by reading those tables only (``tables_with``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.base import is_stage_table
from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.location_index import LocationIndex
from catalogd.catalog.locations import Location, Occupant
from catalogd.errors import CatalogError, MetastoreUnavailableError, NotFoundError
from catalogd.hive_idl import ttypes as hms

logger = logging.getLogger(__name__)

__all__ = ["INDEX_WAIT", "RECONCILE_GAP", "LocationTracker"]

#: Seconds between the end of one background pass and the start of the next, at least.
RECONCILE_GAP = 30.0
#: A pass sleeps this many times what each batch of tables took: at most a third of a thread.
PACE = 2.0
#: How long a judgment waits for the first pass after start before it is refused.
INDEX_WAIT = 60.0
#: Tables read per call in a pass.
BATCH = 100
#: Connections the first pass after start reads on at once.
FIRST_PASS_THREADS = 4

Key = tuple[str, str]
#: Lends the typed client for a block (``HiveSession.client``), errors as catalogd errors.
Lend = Callable[[str], AbstractContextManager[HiveClient]]
#: A location as stored in HMS, normalised (None: none, or one catalogd cannot read).
Parse = Callable[[str | None], Location | None]


class LocationTracker:
    """The location index of one hive catalog, kept current (see the module docstring).

    Args:
        name: the catalog's name (for logs and errors).
        lend: lends the session's typed client (uncached reads).
        parse: normalises a stored location.
        snapshot: where the index is saved between runs (None: not saved).
        identity: the metastore's identity: a saved index of another one is not used.
    """

    def __init__(self, name: str, lend: Lend, parse: Parse, snapshot: Path | None = None,
                 identity: str = "", indexed: tuple[str, ...] = ()) -> None:
        self.name = name
        #: Parameters whose tables are noted (``tables_with``).
        self.indexed = frozenset(indexed)
        #: (database, table) -> the indexed parameters it carries (none: no entry).
        self._marks: dict[Key, frozenset[str]] = {}
        #: The indexed parameters the marks are known for (all once a pass has read every table,
        #: or a saved index has them); set with ``_marks_ready``.
        self._marks_known: frozenset[str] = frozenset()
        self._marks_ready = threading.Event()
        #: Told (parameter, database, table) when a background pass finds a table newly carrying
        #: an indexed parameter (written behind catalogd's back).
        self.on_marked: Callable[[str, str, str], None] | None = None
        self._snapshot = snapshot
        self._identity = identity
        self._lend = lend
        self._parse = parse
        self._lock = threading.Lock()
        self._index = LocationIndex()
        self._writes = 0
        #: (database, table) -> the number of its last write not yet covered by a read.
        self._written: dict[Key, int] = {}
        #: (database, table) -> the write number its entry was read after (no older read replaces it).
        self._read_at: dict[Key, int] = {}
        #: Databases dropped through catalogd: their tables are gone too.
        self._dropped: set[str] = set()
        self._journal: Any = None
        self._saving = threading.Lock()
        self._loaded = threading.Event()
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Tables whose partitions a background pass is reading, and tables catalogd is dropping:
        #: never both at once for one table (see ``dropping``); guarded by ``_busy``.
        self._busy = threading.Condition()
        self._reading: Counter[Key] = Counter()
        self._dropping: Counter[Key] = Counter()
        #: Partition reads a pass left out because catalogd was dropping the table (for tests).
        self.skipped = 0
        #: Completed passes, and what the last one took (seconds): for logs and the benchmark.
        self.passes = 0
        self.last_pass = 0.0

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the background passes (the first one at once)."""
        if self._thread is not None:
            return
        if not self._loaded.is_set() and self._load():
            self._loaded.set()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"locations-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._kick.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(2)  # a pass in a metastore call is not waited for: it ends with the pool
        if self._loaded.is_set():
            self._save()

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self.reconcile()
                failures = 0
                wait = RECONCILE_GAP
            except CatalogError as e:
                failures += 1
                wait = min(RECONCILE_GAP, 0.5 * 2 ** min(failures, 6))
                logger.warning("catalog %s: reading its locations failed (again in %.0fs): %s", self.name, wait, e)
            self._kick.wait(wait)
            self._kick.clear()

    # ------------------------------------------------------------ writes

    def written(self, method: str, keys: list[tuple[str, str]]) -> None:
        """A write through catalogd may have changed ``keys`` (none: anything): read them again
        before the next judgment (an unknown write: a background pass now)."""
        unknown = not keys
        with self._lock:
            self._writes += 1
            for database, table in keys:
                if not database:  # a struct without its database: anything may have changed
                    unknown = True
                    continue
                self._written[(database.lower(), (table or "").lower())] = self._writes
                if method == "drop_database" and not table:
                    self._dropped.add(database.lower())
            self._journal_write(method, keys, unknown)
        if unknown:
            self._kick.set()

    # ------------------------------------------------------------ judging

    def current(self, wait: float | None = None) -> None:
        """Bring the index up to date with catalogd's own writes: reads the objects written since
        the last judgment, nothing else. Call with the session's files lock held.

        Raises:
            MetastoreUnavailableError: the first pass after start has not completed within ``wait``
                (default ``INDEX_WAIT``), or the metastore does not answer.
        """
        if self._thread is None and not self._loaded.is_set():
            self.reconcile()  # no background passes (a session attached to a test's client)
        if not self._loaded.wait(INDEX_WAIT if wait is None else wait):
            raise MetastoreUnavailableError(
                f"catalog {self.name}: the directories of its objects are still being read after start "
                f"({len(self._index)} objects so far); catalogd judges no location before it knows them all: "
                "try again shortly")
        with self._lock:
            todo = dict(self._written)
            dropped = set(self._dropped)
        if not todo:
            return
        with self._lend(f"catalog {self.name}: locations") as c:
            for (database, table), number in todo.items():
                start = number  # this read comes after that write
                if not table:
                    self._read_database(c, database, start, database in dropped)
                else:
                    read = self._read_table(c, database, table)
                    self._apply((database, table), read[0] if read else None, start, read[1] if read else frozenset())

    def gone(self, database: str, table: str) -> None:
        """catalogd has just dropped the table (its write noted, the files lock still held): its
        entry goes without reading it again."""
        key = (database.lower(), table.lower())
        with self._lock:
            number = self._written.pop(key, self._writes)
            self._read_at[key] = number
            self._index.remove(key)
            self._marks.pop(key, None)

    @contextlib.contextmanager
    def dropping(self, database: str, table: str) -> Iterator[None]:
        """catalogd drops ``database.table`` in this block (its metastore call): a background pass
        does not read the table's partitions meanwhile, and the block first waits for such a read
        already going.

        A metastore on Derby (an embedded one's default) deadlocks the two: ``drop_table`` locks
        the table's partition rows, then its TBLS row; a partition read (the join of
        ``get_partitions``) holds the TBLS row and waits for the partition rows. Derby finds the
        cycle only after ``derby.locks.deadlockTimeout`` (20 s), and the drop waits all that time
        with the session's files lock (and a stage's target lock) held: every write behind them
        stalled 20 s (a stage's purge of replaced data, 30 s passes over every table).
        """
        key = (database.lower(), table.lower())
        with self._busy:
            self._dropping[key] += 1
            if self._reading[key]:
                logger.debug("catalog %s: the drop of %s.%s waits for the location pass's read of its partitions",
                             self.name, database, table)
                self._busy.wait_for(lambda: not self._reading[key])
        try:
            yield
        finally:
            with self._busy:
                self._dropping[key] -= 1
                if not self._dropping[key]:
                    del self._dropping[key]

    def _passing_occupants(self, c: HiveClient, database: str, tbl: hms.Table) -> list[Occupant] | None:
        """``table_occupants`` for a background pass; None (not read) while catalogd drops the
        table (see ``dropping``): its drop updates the entry, or, if it fails, the next pass."""
        if not tbl.partitionKeys:
            return self.table_occupants(c, database, tbl)
        key = (database.lower(), tbl.tableName.lower())
        with self._busy:
            if self._dropping[key]:
                self.skipped += 1
                logger.debug("catalog %s: the location pass leaves out the partitions of %s.%s, being dropped",
                             self.name, database, tbl.tableName)
                return None
            self._reading[key] += 1
        try:
            return self.table_occupants(c, database, tbl)
        finally:
            with self._busy:
                self._reading[key] -= 1
                if not self._reading[key]:
                    del self._reading[key]
                self._busy.notify_all()

    def is_current(self, database: str, table: str) -> bool:
        """Whether the entry of a table is as the metastore has it (no write since its last read)."""
        with self._lock:
            return self._loaded.is_set() and (database.lower(), table.lower()) not in self._written

    def has_stages_of(self, database: str, table: str) -> bool:
        """Whether the index knows a staging table of ``database.table`` (after ``current``)."""
        with self._lock:
            return self._index.has_stages_of(database.lower(), table)

    def number(self) -> int:
        """The number of the last write noted: a read made after this call comes after it
        (``written_since`` tells whether a table was written later)."""
        return self._number()

    def written_since(self, database: str, table: str, number: int) -> bool:
        """Whether a write through catalogd may have changed ``database.table`` after write
        ``number`` (``number()`` taken before a read of it): if not, that read is as current as
        a new one. Errs on True (a background read since counts as a write)."""
        key = (database.lower(), table.lower())
        with self._lock:
            # Noted and not read since (_written), or read since a later write (_read_at: kept
            # for every table that still has an entry, so a table written since is never missed).
            return self._written.get(key, 0) > number or self._read_at.get(key, -1) > number

    def unchanged(self, database: str, table: str) -> None:
        """catalogd's own write (files lock held since ``is_current`` said True) left the table's
        directories as they were (a partition added or dropped inside its table's directory):
        its entry stands without reading it again."""
        key = (database.lower(), table.lower())
        with self._lock:
            number = self._written.pop(key, None)
            if number is not None:
                self._read_at[key] = number

    def around(self, location: Location) -> list[Occupant]:
        """The objects whose directories are ``location``, lie inside it or contain it (after ``current``)."""
        with self._lock:
            return self._index.around(location)

    def of_table(self, database: str, table: str) -> list[Occupant]:
        with self._lock:
            return list(self._index.get((database.lower(), table.lower())) or [])

    def all(self) -> list[Occupant]:
        with self._lock:
            return self._index.all()

    def tables_with(self, parameter: str, wait: float = 0.0) -> list[Key] | None:
        """The tables that may carry ``parameter`` (one of ``indexed``): those that did when last
        read, and those written through catalogd since (read them to know). After start, waits
        up to ``wait`` seconds for the first pass to have read every table (not their partitions).

        Returns None when not known (not indexed, or not read yet, or saved by a daemon that did
        not note them).
        """
        if self._thread is not None and not self._loaded.is_set():
            self._marks_ready.wait(wait)
        with self._lock:
            if parameter not in self._marks_known:
                return None
            marked = {k for k, marks in self._marks.items() if parameter in marks}
            return sorted(marked | {k for k in self._written if k[1]})

    # ------------------------------------------------------------ reading

    def _number(self) -> int:
        with self._lock:
            return self._writes

    def _apply(self, key: Key, occupants: list[Occupant] | None, start: int,
               marks: frozenset[str] = frozenset(), passing: bool = False) -> None:
        """What ``key`` held as read after write number ``start`` (None: it is gone), and the
        indexed parameters it carries; a read older than a write of it is dropped (the write's
        own read brings it). ``passing``: read by a background pass (new marks are told)."""
        with self._lock:
            if self._written.get(key, 0) > start or self._read_at.get(key, -1) > start:
                return
            new = marks - self._marks.get(key, frozenset()) if passing and occupants is not None else frozenset()
            self._apply_locked(key, occupants, start, marks)
        listener = self.on_marked
        if listener is not None:
            for parameter in sorted(new):
                try:
                    listener(parameter, *key)
                except Exception:  # a listener's failure must not end the pass
                    logger.exception("catalog %s: telling of %s.%s", self.name, *key)

    def _apply_locked(self, key: Key, occupants: list[Occupant] | None, start: int,
                      marks: frozenset[str]) -> None:
        self._written.pop(key, None)
        self._read_at[key] = start
        if occupants is None:
            self._index.remove(key)
        else:
            self._index.put(key, occupants)
        if marks and occupants is not None:
            self._marks[key] = marks
        else:
            self._marks.pop(key, None)

    def _marks_of(self, tbl: hms.Table) -> frozenset[str]:
        params = tbl.parameters or {}
        return frozenset(p for p in self.indexed if p in params)

    def _forget_database(self, database: str) -> None:
        """The database and its tables leave the index (lock held)."""
        self._index.remove_database(database)
        for key in [k for k in self._marks if k[0] == database]:
            del self._marks[key]

    def _read_database(self, c: HiveClient, database: str, start: int, dropped: bool) -> None:
        try:
            db = c.get_database(database)
        except hms.NoSuchObjectException:
            with self._lock:
                if self._written.get((database, ""), 0) <= start:
                    self._written.pop((database, ""), None)
                    self._read_at[(database, "")] = start
                    self._dropped.discard(database)
                    self._forget_database(database)
            return
        loc = self._parse(db.locationUri)
        self._apply((database, ""), [Occupant("database", database, "", "", loc)] if loc else [], start)
        if dropped:
            # A drop that failed half way (or a database made again): its tables as they are now.
            names = {n.lower() for n in c.get_all_tables(database)}
            with self._lock:
                self._dropped.discard(database)
                gone = [t for t in self._index.tables_of(database) if t not in names]
            for table in gone:
                self._apply((database, table), None, start)

    def _read_table(self, c: HiveClient, database: str, table: str) -> tuple[list[Occupant], frozenset[str]] | None:
        try:
            tbl = c.get_table(database, table)
        except hms.NoSuchObjectException:
            return None
        return self.table_occupants(c, database, tbl), self._marks_of(tbl)

    def table_occupants(self, c: HiveClient, database: str, tbl: hms.Table) -> list[Occupant]:
        """The directories of a table and of its partitions outside its directory (the others
        lie in or around the table's directory too, so they add nothing to any judgment)."""
        if codec.has_no_directory(tbl) or tbl.sd is None:  # an Iceberg view's metadata directory counts
            return []
        stage_of = (tbl.parameters or {}).get(codec.STAGE_PREFIX + "target", "") \
            if is_stage_table(tbl.tableName) else ""
        found = []
        table_loc = self._parse(tbl.sd.location)
        if table_loc is not None:
            found.append(Occupant("table", database, tbl.tableName, "", table_loc, stage_of))
        if tbl.partitionKeys:
            try:
                parts = c.get_partitions(database, tbl.tableName, -1)
            except hms.NoSuchObjectException:
                return found
            for part in parts:
                loc = self._parse(part.sd.location if part.sd else None)
                if loc is not None and (table_loc is None or not table_loc.contains(loc)):
                    name = codec.partition_name(tbl.partitionKeys, part.values)
                    found.append(Occupant("partition", database, tbl.tableName, name, loc, stage_of))
        return found

    def reconcile(self) -> None:
        """One pass over the catalog, applied object by object (the first one marks the index loaded).

        Raises:
            CatalogError: the metastore failed (the pass is tried again later).
        """
        began = time.monotonic()
        first = not self._loaded.is_set()
        start = self._number()
        with self._lend(f"catalog {self.name}: locations") as c:
            databases = [d.lower() for d in c.get_all_databases()]
        # The first pass reads every table first, the partitions of the partitioned ones after:
        # what a table carries (``tables_with``: the dynamic tables to restore) is known early.
        pending: list[tuple[str, hms.Table, int]] | None = [] if first else None
        for database in databases:
            if self._stop.is_set():
                return
            self._reconcile_database(database, first, pending)
        self._marks_are_known()
        if pending:
            def partitions(item: tuple[str, hms.Table, int]) -> None:
                database, tbl, number = item
                if self._stop.is_set():
                    return
                with self._lend(f"catalog {self.name}: locations") as c:
                    occupants = self._passing_occupants(c, database, tbl)
                if occupants is None:
                    return  # being dropped: not read
                self._apply((database, tbl.tableName.lower()), occupants, number, self._marks_of(tbl), passing=True)

            with ThreadPoolExecutor(FIRST_PASS_THREADS, thread_name_prefix=f"locations-{self.name}") as pool:
                list(pool.map(partitions, pending))
            if self._stop.is_set():
                return
        with self._lock:
            stale = {d for d, _ in self._index.objects() if d not in databases}
        for database in stale:
            with self._lock:
                numbers = [*self._written.items(), *self._read_at.items()]
                if all(n <= start for (d, _), n in numbers if d == database):
                    self._forget_database(database)
        with self._lock:
            # What no longer exists needs no guard against older reads once the pass is over.
            self._read_at = {k: n for k, n in self._read_at.items() if n > start or self._index.get(k) is not None}
        self.passes += 1
        self.last_pass = time.monotonic() - began
        self._save()
        if first:
            self._loaded.set()
            logger.info("catalog %s: the directories of %d objects read in %.1fs", self.name, len(self._index),
                        self.last_pass)

    def _marks_are_known(self) -> None:
        with self._lock:
            self._marks_known = self.indexed
        self._marks_ready.set()

    def _reconcile_batch(self, database: str, batch: list[str],
                         pending: list[tuple[str, hms.Table, int]] | None = None) -> None:
        """Read a batch of tables (and their partitions; ``pending`` given: the partitioned
        tables are left there, their marks noted, for their partitions to be read later)."""
        if self._stop.is_set():
            return
        number = self._number()
        later: list[tuple[str, hms.Table, int]] = []
        with self._lend(f"catalog {self.name}: locations") as c:
            tables = c.get_table_objects_by_name(database, batch)
            read = {}
            skipped = set()
            for t in tables:
                if pending is not None and t.partitionKeys and t.tableType != codec.VIRTUAL_VIEW and t.sd is not None:
                    later.append((database, _slim(t, self.indexed), number))
                    continue
                occupants = self._passing_occupants(c, database, t)
                if occupants is None:
                    skipped.add(t.tableName.lower())  # being dropped: its entry is left to the drop
                else:
                    read[t.tableName.lower()] = (occupants, self._marks_of(t))
        deferred = {t.tableName.lower() for _, t, _ in later} | skipped
        for name in batch:
            if name not in deferred:
                occupants, marks = read.get(name, (None, frozenset()))
                self._apply((database, name), occupants, number, marks, passing=True)
        if later and pending is not None:
            with self._lock:
                for _, tbl, _ in later:
                    key = (database, tbl.tableName.lower())
                    if self._written.get(key, 0) > number or self._read_at.get(key, -1) > number:
                        continue  # written since: its own read brings it
                    marks = self._marks_of(tbl)
                    if marks:
                        self._marks[key] = marks
                    else:
                        self._marks.pop(key, None)
                pending.extend(later)

    def _reconcile_database(self, database: str, first: bool,
                            pending: list[tuple[str, hms.Table, int]] | None = None) -> None:
        start = self._number()
        try:
            with self._lend(f"catalog {self.name}: locations") as c:
                db = c.get_database(database)
                names = sorted({n.lower() for n in c.get_all_tables(database)})
        except NotFoundError:
            return  # dropped while we looked
        loc = self._parse(db.locationUri)
        self._apply((database, ""), [Occupant("database", database, "", "", loc)] if loc else [], start)
        batches = [names[i:i + BATCH] for i in range(0, len(names), BATCH)]
        if first:
            # Nothing is judged before the first pass ends: it reads on a few connections at once.
            with ThreadPoolExecutor(FIRST_PASS_THREADS, thread_name_prefix=f"locations-{self.name}") as pool:
                list(pool.map(lambda batch: self._reconcile_batch(database, batch, pending), batches))
        else:
            for batch in batches:
                if self._stop.is_set():
                    return
                began = time.monotonic()
                self._reconcile_batch(database, batch)
                self._stop.wait(PACE * (time.monotonic() - began))
        with self._lock:
            known = set(self._index.tables_of(database))
        for name in known - set(names):
            self._apply((database, name), None, start)

    # ------------------------------------------------------------ saved between runs

    def _save(self) -> None:
        # One save at a time: the stop's and a pass's (which the stop does not wait for) wrote
        # the same temporary file, and the one that lost the rename dropped the saved index.
        with self._saving:
            self._save_locked()

    def _save_locked(self) -> None:
        path = self._snapshot
        if path is None:
            return
        with self._lock:
            self._journal_reset()
            entries = [[db, table, [[o.kind, o.database, o.table, o.partition, o.stage_of, o.location.scheme,
                                     o.location.authority, o.location.path, o.location.key] for o in occupants]]
                       for (db, table), occupants in self._index.items()]
            written = [list(k) for k in self._written]
            marks = [[db, table, sorted(m)] for (db, table), m in self._marks.items()]
            known = sorted(self._marks_known)
        document = {"version": 1, "identity": self._identity, "entries": entries, "written": written,
                    "marked": known, "marks": marks}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(path.name + ".tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(document, f, separators=(",", ":"))
            os.replace(temporary, path)
        except OSError as e:
            logger.warning("catalog %s: saving its location index to %s: %s", self.name, path, e)
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)  # its journal is gone: the next start reads the metastore

    def _load(self) -> bool:
        """Read the saved index back (False: none, another metastore's, or unreadable)."""
        path = self._snapshot
        if path is None or not path.exists():
            return False
        try:
            document = json.loads(path.read_text())
            if document.get("version") != 1 or document.get("identity") != self._identity:
                logger.info("catalog %s: the saved location index is another metastore's: not used", self.name)
                return False
            entries = [((str(db), str(table)), [Occupant(kind, database, tbl, part, Location(scheme, auth, p, key),
                                                         stage_of)
                                                for kind, database, tbl, part, stage_of, scheme, auth, p, key in occ])
                       for db, table, occ in document["entries"]]
            written = [(str(db), str(table)) for db, table in document["written"]]
            # Saved before the marks were kept: not known (a pass notes them; meanwhile a full read).
            known = frozenset(str(p) for p in document.get("marked", [])) & self.indexed
            marks = {(str(db), str(table)): frozenset(str(p) for p in m) & known
                     for db, table, m in document.get("marks", [])}
            journal = path.with_name(path.stem + ".journal")
            if journal.exists():
                for line in journal.read_text().splitlines():
                    record = json.loads(line) if line.strip() else {}
                    if record.get("unknown"):
                        raise ValueError("a write catalogd could not place")
                    written += [(str(db), str(table)) for db, table in record.get("keys", [])]
        except (OSError, ValueError, KeyError, TypeError) as e:
            logger.warning("catalog %s: the saved location index %s cannot be read (%s): reading the metastore",
                           self.name, path, e)
            return False
        with self._lock:
            self._index.replace_all(entries)
            self._marks = {k: m for k, m in marks.items() if m and self._index.get(k) is not None}
            self._marks_known = known
            if known == self.indexed:
                self._marks_ready.set()
            self._writes += 1
            for key in written:  # written before the stop, never read since: read before the next judgment
                self._written[key] = self._writes
        logger.info("catalog %s: location index of %d objects read from %s", self.name, len(entries), path)
        return True

    def _journal_write(self, method: str, keys: list[tuple[str, str]], unknown: bool) -> None:
        """Note a write (lock held): a daemon killed before the next save reads these again at start."""
        if self._snapshot is None:
            return
        try:
            if self._journal is None:
                self._snapshot.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self._snapshot.with_name(self._snapshot.stem + ".journal"),
                             os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                self._journal = os.fdopen(fd, "a")
            record = {"keys": [[d.lower(), (t or "").lower()] for d, t in keys if d], "unknown": unknown}
            self._journal.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._journal.flush()  # in the kernel: survives the daemon's death
        except OSError as e:
            logger.warning("catalog %s: noting a write in the location journal: %s", self.name, e)

    def _journal_reset(self) -> None:
        """The index is being saved with every write so far (lock held): the journal starts afresh."""
        if self._snapshot is None:
            return
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        try:
            self._snapshot.with_name(self._snapshot.stem + ".journal").unlink(missing_ok=True)
        except OSError as e:
            logger.warning("catalog %s: resetting the location journal: %s", self.name, e)


def _slim(tbl: hms.Table, indexed: frozenset[str]) -> hms.Table:
    """What ``table_occupants`` and the marks need of a table, kept while a first pass reads
    the partitions of every partitioned table (not every table's columns meanwhile)."""
    params = {k: v for k, v in (tbl.parameters or {}).items() if k in indexed or k == codec.STAGE_PREFIX + "target"}
    return hms.Table(tableName=tbl.tableName, dbName=tbl.dbName, tableType=tbl.tableType,
                     sd=hms.StorageDescriptor(location=tbl.sd.location), partitionKeys=tbl.partitionKeys,
                     parameters=params)
