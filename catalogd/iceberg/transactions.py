"""``POST /v1/{prefix}/transactions/commit``: several tables of one catalog, all or none.

HMS has no multi-table transaction; catalogd, the door every write passes, makes one:

1. **Lock** every table with the exclusive HMS lock Iceberg's ``HiveCatalog`` takes for one
   commit, through the HMS endpoint's router like every other lock (so the lock keeper is the
   one HMS-side Iceberg writers and single-table REST commits wait on: the default catalog's
   metastore, or catalogd's ``LockManager``; under the name a Hive 2.3 client locks,
   ``WarehouseCatalog.lock_name``), in one fixed order (database, table: the tables
   are of one catalog), so two transactions never wait for each other. The ids of the locks
   held are kept in a *lock record* under the data dir as they are taken, so that a daemon
   that dies now leaves no lock behind it once it starts again (HMS keeps a lock until
   ``server.hms-lock-timeout`` without heartbeats, across the death of its taker).
2. **Check** every table under its lock: its pointer read again from the metastore, every
   requirement validated and every update applied with pyiceberg's own code; the new
   locations checked against catalogd's rules. A failure here releases every lock and has
   written nothing (409 ``CommitFailedException`` names the table).
3. **Write** every new metadata file (new files: nothing points at them yet; a failure deletes
   the ones written and releases the locks).
4. **Intent**: the lock record becomes the intent (every table's old and new pointer, and the
   lock ids), fsynced with its directory, before the first pointer moves. This is the commit
   point: from here the transaction is applied, by this request or by a roll-forward.
5. **Move** each pointer (``alter_table`` with ``metadata_location`` and
   ``previous_metadata_location``, as ``HiveCatalog`` writes them), then drop the intent and
   release the locks. Readers through catalogd wait on the tables whose pointers are moving
   (``CommitGate``), so they see every table before or every table after.

``Finisher`` rolls intents forward: at daemon start, before anything is served, as catalogd
itself, reusing the dead daemon's locks when the lock keeper still holds them (their ids are
in the intent: no waiting out ``hms-lock-timeout`` on one's own locks); a table still at its
old pointer is moved to its new one, one at its new pointer is left. What cannot be finished
then (another writer holding a lock past the bounded wait, the metastore away), or a commit
whose pointer moves failed midway, is retried in the background until done, its tables held
in the gate meanwhile. Lock records without an intent (a daemon that died before its commit
point) are released: nothing was moved.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive_metastore.ttypes import (
    CheckLockRequest,
    EnvironmentContext,
    LockComponent,
    LockLevel,
    LockRequest,
    LockState,
    LockType,
    UnlockRequest,
)
from pyiceberg.catalog.hive import (
    DO_NOT_UPDATE_STATS,
    DO_NOT_UPDATE_STATS_DEFAULT,
    HIVE2_COMPATIBLE,
    HiveCatalog,
    _construct_hive_storage_descriptor,
    _construct_parameters,
)
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException, NoSuchTableError
from pyiceberg.table.update import AssertCreate, TableRequirement, TableUpdate
from pyiceberg.typedef import Identifier
from pyiceberg.utils.properties import property_as_bool

from catalogd.errors import CatalogNotFoundError, InvalidArgumentError
from catalogd.faults import fault_point
from catalogd.iceberg.tables import WarehouseCatalog

logger = logging.getLogger(__name__)

__all__ = ["Change", "CommitGate", "Finisher", "Intents", "commit_tables", "gate_key", "lock_table"]

#: Under the data dir: one file per multi-table commit under way (its lock record, then its intent).
INTENTS_DIR = "iceberg-intents"
#: A record's states: locks taken, nothing decided (released at start); pointers to move (rolled forward).
LOCKING = "locking"
MOVING = "moving"
#: How long a request's transaction waits for each table's lock (then 409: the client retries).
LOCK_WAIT = 60.0
#: How long a roll-forward waits for a lock another writer holds before it tries again later.
FINISH_LOCK_WAIT = 10.0
#: How often the background roll-forward tries what is left.
RETRY_INTERVAL = 5.0
#: How long a reader through catalogd waits for a transaction moving a table's pointer.
GATE_WAIT = 60.0

#: The key the gate knows a table by: (catalog, database as its catalog names it, table), lower case.
Key = tuple[str, str, str]


def gate_key(catalog: str, database: str, table: str) -> Key:
    return (catalog, database.lower(), table.lower())


@dataclass(frozen=True)
class Change:
    """One table's part of a transaction.

    ``database``: as the router takes it (``db``, or ``@cat#db`` for a catalog not the
    default); ``name``: as the catalog itself names the database (the gate's key).
    """

    database: str
    table: str
    requirements: tuple[TableRequirement, ...]
    updates: tuple[TableUpdate, ...]
    name: str = ""

    @property
    def own_database(self) -> str:
        return (self.name or self.database.rsplit("#", 1)[-1]).lower()


class CommitGate:
    """The tables whose pointers a transaction is moving: readers through catalogd wait.

    A reader's check costs one truth test of a dict while no transaction is moving, and one
    lookup while one is.
    """

    def __init__(self) -> None:
        #: Key -> the event set once its transaction's pointers have all moved.
        self.tables: dict[Key, threading.Event] = {}
        #: Counts the transactions that began moving pointers: a read of several tables in one
        #: answer compares it before and after (a change: read again).
        self.generation = 0
        self._lock = threading.Lock()

    def hold(self, keys: list[Key]) -> Callable[[], None]:
        """Make readers of ``keys`` wait until the returned function is called."""
        done = threading.Event()
        with self._lock:
            for key in keys:
                self.tables[key] = done
            self.generation += 1

        def release() -> None:
            with self._lock:
                for key in keys:
                    if self.tables.get(key) is done:
                        del self.tables[key]
            done.set()
        return release

    @contextmanager
    def moving(self, keys: list[Key]) -> Iterator[None]:
        release = self.hold(keys)
        try:
            yield
        finally:
            release()

    def wait(self, catalog: str, database: str, table: str, timeout: float = GATE_WAIT) -> None:
        """Return once no transaction is moving this table's pointer (at most ``timeout``)."""
        if not self.tables:
            return
        event = self.tables.get(gate_key(catalog, database, table))
        if event is not None and not event.wait(timeout):
            logger.warning("Iceberg transactions: a read of %s.%s.%s waited %.0f s for a transaction's pointers "
                           "and goes on", catalog, database, table, timeout)


class Intents:
    """The lock records and intents of multi-table commits (one JSON file each, under the data dir)."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = data_dir / INTENTS_DIR

    def write(self, record: dict[str, Any], durable: bool) -> Path:
        """Write (or replace) ``record``'s file; ``durable``: fsynced with its directory before
        this returns (an intent). A lock record is not: a process killed keeps what it wrote
        (the page cache outlives it); only a machine's crash loses it, and then the locks go by
        the keeper's timeout."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"{record['id']}.json"
        tmp = self.dir / f"{record['id']}.tmp"
        with open(tmp, "w") as f:
            json.dump(record, f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return path

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def pending(self) -> list[tuple[Path, dict[str, Any]]]:
        if not self.dir.is_dir():
            return []
        found = []
        for path in sorted(self.dir.glob("*.json")):
            try:
                record = json.loads(path.read_text())
                if not isinstance(record, dict) or not isinstance(record.get("catalog"), str):
                    raise ValueError("not a record of catalogd's")
                found.append((path, record))
            except (OSError, ValueError):
                logger.exception("Iceberg transactions: unreadable intent %s (left in place)", path)
        return found


# ---------------------------------------------------------------- locks


def _lock_request(database: str, table: str) -> LockRequest:
    # What pyiceberg's HiveCatalog asks for one commit (``_create_lock_request``).
    component = LockComponent(level=LockLevel.TABLE, type=LockType.EXCLUSIVE, dbname=database, tablename=table,
                              isTransactional=True)
    return LockRequest(component=[component], user="catalogd", hostname="catalogd-iceberg-rest")


def _lock(client: Any, database: str, table: str, wait: float) -> int:
    """An exclusive lock on the table, waited for at most ``wait`` seconds (else
    ``CommitFailedException``, the request abandoned)."""
    response = client.lock(_lock_request(database, table))
    lockid = int(response.lockid)
    deadline = time.monotonic() + wait
    delay = 0.02
    try:
        while response.state == LockState.WAITING:
            if time.monotonic() >= deadline:
                raise CommitFailedException(f"{database}.{table} stayed locked by another writer for {wait:.0f} s")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            response = client.check_lock(CheckLockRequest(lockid=lockid))
        if response.state != LockState.ACQUIRED:
            raise CommitFailedException(f"could not lock {database}.{table}: state {response.state}")
    except BaseException:
        _unlock(client, [lockid])
        raise
    return lockid


def lock_table(wh: WarehouseCatalog, client: Any, database: str, table: str, wait: float = LOCK_WAIT) -> int:
    """The exclusive HMS lock on one table of ``wh`` (database as the router takes it), under the
    name an HMS 2.3 client locks it by: what a single commit of a view takes."""
    return _lock(client, wh.lock_name(database), table, wait)


def _still_held(client: Any, lockid: int) -> bool:
    """Whether the keeper still holds lock ``lockid`` (a dead daemon's, whose id the intent kept)."""
    try:
        return bool(client.check_lock(CheckLockRequest(lockid=lockid)).state == LockState.ACQUIRED)
    except Exception:  # NoSuchLockException: timed out, or a keeper that forgot it (LockManager)
        return False


def _unlock(client: Any, lockids: list[int]) -> None:
    for lockid in reversed(lockids):
        try:
            client.unlock(UnlockRequest(lockid=lockid))
        except Exception:
            logger.warning("Iceberg transactions: unlocking %d failed (it goes by the lock keeper's timeout)",
                           lockid, exc_info=True)


# ---------------------------------------------------------------- the commit


def check_changes(changes: list[Change]) -> list[Change]:
    """The changes in lock order; refuses a table named twice, and a create (a transaction
    commits to existing tables)."""
    ordered = sorted(changes, key=lambda c: (c.own_database, c.table.lower()))
    seen: set[tuple[str, str]] = set()
    for change in ordered:
        key = (change.own_database, change.table.lower())
        if key in seen:
            raise InvalidArgumentError(f"table {key[0]}.{key[1]} appears twice in one transaction: give all its "
                                       "requirements and updates in one table-change")
        seen.add(key)
        if any(isinstance(r, AssertCreate) for r in change.requirements):
            raise InvalidArgumentError(f"table {key[0]}.{key[1]}: a transaction commits to existing tables "
                                       "(assert-create): create the table first")
    return ordered


def commit_tables(wh: WarehouseCatalog, changes: list[Change], intents: Intents, gate: CommitGate,
                  finisher: Finisher | None = None, lock_wait: float = LOCK_WAIT) -> None:
    """Commit every change or none (see the module's doc)."""
    ordered = check_changes(changes)
    record: dict[str, Any] = {"id": uuid.uuid4().hex, "catalog": wh.name, "state": LOCKING, "locks": []}
    path: Path | None = None
    locks: list[int] = []
    keep_locks = False
    with wh._client as client:
        try:
            for change in ordered:
                locks.append(_lock(client, wh.lock_name(change.database), change.table, lock_wait))
                record["locks"].append({"database": change.database, "table": change.table, "lockid": locks[-1]})
                path = intents.write(record, durable=False)
            fault_point("iceberg.txn.locked")
            staged = [_stage(wh, client, change) for change in ordered]
            moving = [s for s in staged if s[3].metadata != s[2].metadata]
            if not moving:
                return
            _write_all(moving)
            record.update(state=MOVING, tables=[_intent_of(change, hive_table, current, updated)
                                                for change, hive_table, current, updated in moving])
            try:
                path = intents.write(record, durable=True)
            except BaseException:
                # Not committed (no durable intent): the new files are referenced by nothing.
                _delete(moving)
                raise
            fault_point("iceberg.txn.intent")
            keys = [gate_key(wh.name, c.own_database, c.table) for c, _, _, _ in moving]
            release = gate.hold(keys)
            started = time.monotonic()
            try:
                for n, (change, hive_table, _, updated) in enumerate(moving):
                    _move(wh, client, change.database, hive_table, updated.metadata_location,
                          record["tables"][n], updated.metadata)
                    fault_point("iceberg.txn.moved-one")
            except Exception as e:
                # Past the commit point: the transaction is applied, not undone. The locks stay
                # held for the roll-forward (it reuses them), and so does the gate.
                if finisher is None:  # the intent stays for the next start's roll-forward
                    release()
                    path = None
                    raise
                keep_locks = True
                finisher.hand_over(path, record, release)
                raise CommitStateUnknownException(
                    f"the transaction is committed (intent {record['id']}) but a pointer move failed ({e}): catalogd "
                    "finishes it in the background; readers through catalogd wait for it") from e
            release()
            logger.debug("Iceberg transaction %s: %d pointers moved in %.1f ms", record["id"], len(moving),
                         (time.monotonic() - started) * 1000)
        finally:
            if not keep_locks:
                if path is not None:
                    intents.remove(path)
                _unlock(client, locks)


def _stage(wh: WarehouseCatalog, client: Any, change: Change) -> tuple[Change, Any, Any, Any]:
    """(change, HMS table, current table, staged updated table), checked under the table's lock."""
    identifier: Identifier = (change.database, change.table)
    try:
        hive_table = wh._get_hive_table(client, change.database, change.table)
    except NoSuchTableError:
        raise NoSuchTableError(f"table {change.own_database}.{change.table} does not exist: a transaction commits "
                               "to existing tables") from None
    current = wh._convert_hive_into_iceberg(hive_table)
    try:
        updated = wh._update_and_stage_table(current, identifier, change.requirements, change.updates)
    except CommitFailedException as e:
        raise CommitFailedException(f"{change.own_database}.{change.table}: {e}") from e
    wh._writing = (change.database, change.table, hive_table.sd.location if hive_table.sd else None)
    try:
        wh.check_write(updated.metadata, updated.metadata_location)
    finally:
        wh._writing = None
    return change, hive_table, current, updated


def _write_all(moving: list[tuple[Change, Any, Any, Any]]) -> None:
    """Write every new metadata file (checked by ``check_write`` already); a failure deletes the
    ones written (new files no pointer names) and raises."""
    written: list[tuple[Change, Any, Any, Any]] = []
    try:
        for staged in moving:
            updated = staged[3]
            HiveCatalog._write_metadata(updated.metadata, updated.io, updated.metadata_location)
            written.append(staged)
    except BaseException:
        _delete(written)
        raise


def _delete(written: list[tuple[Change, Any, Any, Any]]) -> None:
    """Delete the new metadata files of a transaction that did not commit (catalogd's own, just
    written, referenced by nothing)."""
    for _, _, _, updated in written:
        try:
            updated.io.delete(updated.metadata_location)
        except Exception:
            logger.warning("Iceberg transactions: could not delete %s (never referenced)",
                           updated.metadata_location, exc_info=True)


def _intent_of(change: Change, hive_table: Any, current: Any, updated: Any) -> dict[str, Any]:
    return {"database": change.database, "table": change.table, "name": change.own_database,
            "old": current.metadata_location, "new": updated.metadata_location,
            # What pyiceberg's commit takes out of the HMS parameters: the Iceberg properties removed.
            "removed": sorted(set(current.properties) - set(updated.properties))}


def _move(wh: WarehouseCatalog, client: Any, database: str, hive_table: Any, new_location: str,
          table: dict[str, Any], metadata: Any) -> None:
    """Point the HMS table at ``new_location`` as pyiceberg's ``HiveCatalog.commit_table`` does."""
    parameters = dict(hive_table.parameters or {})
    for key in table.get("removed") or []:
        parameters.pop(key, None)
    parameters.update(_construct_parameters(new_location, table["old"], metadata.properties))
    hive_table.parameters = parameters
    hive_table.sd = _construct_hive_storage_descriptor(metadata.schema(), metadata.location,
                                                       property_as_bool(wh.properties, HIVE2_COMPATIBLE, True))
    hive_table.dbName = database
    client.alter_table_with_environment_context(
        dbname=database, tbl_name=hive_table.tableName, new_tbl=hive_table,
        environment_context=EnvironmentContext(properties={DO_NOT_UPDATE_STATS: DO_NOT_UPDATE_STATS_DEFAULT}))


# ---------------------------------------------------------------- roll-forward


def finish(wh: WarehouseCatalog, record: dict[str, Any], lock_wait: float = FINISH_LOCK_WAIT) -> None:
    """Apply an intent: every table still at its old pointer moved to its new one, under its
    lock (the recorded one while the keeper still holds it, else a new one); or, for a lock
    record (no commit point reached), release its locks. Raises when it cannot (yet)."""
    recorded = {(lock["database"], lock["table"]): int(lock["lockid"]) for lock in record.get("locks") or []}
    with wh._client as client:
        if record.get("state") != MOVING:
            _unlock(client, list(recorded.values()))
            return
        tables = sorted(record["tables"], key=lambda t: (t.get("name") or t["database"], t["table"]))
        held: list[tuple[dict[str, Any], int]] = []
        done = False
        try:
            for t in tables:
                lockid = recorded.pop((t["database"], t["table"]), None)
                if lockid is None or not _still_held(client, lockid):
                    lockid = _lock(client, wh.lock_name(t["database"]), t["table"], lock_wait)
                held.append((t, lockid))
            for t in tables:
                try:
                    hive_table = wh._get_hive_table(client, t["database"], t["table"])
                except NoSuchTableError:
                    # Dropped since (or a memory catalog's table, gone with the daemon's restart).
                    logger.warning("Iceberg transaction %s: %s.%s no longer exists: nothing to roll forward",
                                   record["id"], t["database"], t["table"])
                    continue
                pointer = (hive_table.parameters or {}).get("metadata_location")
                if pointer == t["new"]:
                    continue
                if pointer != t["old"]:
                    # Only when its lock expired before this roll-forward and another writer
                    # committed meanwhile: that commit stays (docs/iceberg/transactions.md).
                    logger.error("Iceberg transaction %s: %s.%s is at %s, neither its old nor its new pointer: left "
                                 "as it is", record["id"], t["database"], t["table"], pointer)
                    continue
                from pyiceberg.io import load_file_io
                from pyiceberg.serializers import FromInputFile

                metadata = FromInputFile.table_metadata(load_file_io(wh.properties, t["new"]).new_input(t["new"]))
                _move(wh, client, t["database"], hive_table, t["new"], t, metadata)
                logger.info("Iceberg transaction %s: rolled %s.%s forward to %s", record["id"], t["database"],
                            t["table"], t["new"])
            done = True
        finally:
            if done:
                _unlock(client, [lockid for _, lockid in held] + list(recorded.values()))
            else:
                # Kept for the next try (which reuses them, its check_lock their heartbeat): no
                # other writer may commit on a table still at its old pointer meanwhile.
                record["locks"] = [{"database": t["database"], "table": t["table"], "lockid": lockid}
                                   for t, lockid in held]
                _unlock(client, list(recorded.values()))


class Finisher:
    """Rolls intents forward: all of them once at start (before serving), then what is left in
    the background, every ``interval`` seconds, their tables held in the gate until done.

    Args:
        wh_for: a catalog's name -> its ``WarehouseCatalog`` as catalogd itself (``conn.internal``).
        intents: the data dir's records.
        gate: the readers' gate.
    """

    def __init__(self, wh_for: Callable[[str], WarehouseCatalog], intents: Intents, gate: CommitGate,
                 interval: float = RETRY_INTERVAL, lock_wait: float = FINISH_LOCK_WAIT) -> None:
        self.wh_for = wh_for
        self.intents = intents
        self.gate = gate
        self.interval = interval
        self.lock_wait = lock_wait
        #: Intent path -> (record, the gate's release of its tables).
        self._left: dict[Path, tuple[dict[str, Any], Callable[[], None]]] = {}
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Finish every record in the data dir (a dead daemon's); returns how many were finished.
        What is left is retried in the background."""
        finished = 0
        for path, record in self.intents.pending():
            if self._try(path, record):
                finished += 1
            else:
                self._keep(path, record, self._hold(record))
        return finished

    def hand_over(self, path: Path, record: dict[str, Any], release: Callable[[], None]) -> None:
        """A commit past its commit point whose moves failed: finished in the background."""
        self._keep(path, record, release)

    def pending(self) -> int:
        with self._mutex:
            return len(self._left)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(5)

    def _hold(self, record: dict[str, Any]) -> Callable[[], None]:
        if record.get("state") != MOVING:
            return lambda: None
        return self.gate.hold([gate_key(record["catalog"], t.get("name") or t["database"].rsplit("#", 1)[-1],
                                        t["table"]) for t in record.get("tables") or []])

    def _keep(self, path: Path, record: dict[str, Any], release: Callable[[], None]) -> None:
        with self._mutex:
            self._left[path] = (record, release)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="iceberg-roll-forward", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._mutex:
                left = list(self._left.items())
            for path, (record, release) in left:
                if self._try(path, record):
                    with self._mutex:
                        self._left.pop(path, None)
                    release()
            with self._mutex:
                if not self._left:
                    self._thread = None
                    return

    def _try(self, path: Path, record: dict[str, Any]) -> bool:
        try:
            wh = self.wh_for(record["catalog"])
        except CatalogNotFoundError:
            # A catalog taken out of the config: nothing catalogd serves is left to move. Kept
            # aside (not retried), for whoever put the catalog back.
            logger.error("Iceberg transaction %s: catalog %s no longer exists: its intent is set aside as %s",
                         record.get("id"), record["catalog"], path.with_suffix(".abandoned"))
            path.replace(path.with_suffix(".abandoned"))
            return True
        try:
            finish(wh, record, self.lock_wait)
        except Exception:
            if record.get("state") == MOVING:
                try:  # the locks it holds now, for a restart to reuse too
                    self.intents.write(record, durable=True)
                except OSError:
                    logger.warning("Iceberg transactions: could not update intent %s", path, exc_info=True)
            logger.warning("Iceberg transactions: rolling %s forward failed (tried again in %.0f s)", path,
                           self.interval, exc_info=True)
            return False
        self.intents.remove(path)
        if record.get("state") == MOVING:
            logger.info("Iceberg transaction %s of catalog %s finished by roll-forward (%d tables)", record["id"],
                        record["catalog"], len(record.get("tables") or []))
        return True
