"""``POST /v1/{prefix}/transactions/commit``: several tables of one catalog, all or none.

HMS has no multi-table transaction; catalogd, the door every write passes, makes one:

1. **Lock** every table with the exclusive HMS lock Iceberg's ``HiveCatalog`` takes for one
   commit (so HMS-side Iceberg writers and single-table REST commits wait), in one fixed
   order (catalog, database, table), so two transactions never wait for each other.
2. **Check** every table under its lock: its pointer read again from the metastore, every
   requirement validated and every update applied with pyiceberg's own code; the new
   locations checked against catalogd's rules. A failure here releases the locks and
   nothing has changed (409 ``CommitFailedException`` names the table).
3. **Write** every new metadata file (new files: nothing points at them yet).
4. **Intent**: a record of every table's old and new pointer is written to the data dir
   (fsynced) before the first pointer moves.
5. **Move** each pointer (``alter_table`` with ``metadata_location`` and
   ``previous_metadata_location``, as ``HiveCatalog`` writes them), then drop the intent and
   release the locks.

A daemon that dies between 4 and 5 finds the intent when it starts and **rolls it forward**
(``roll_forward``): a table still at its old pointer is moved to its new one under its lock;
one at its new pointer is left. Readers through catalogd wait on the tables of a transaction
whose pointers are moving (``CommitGate``), so they see every table before or every table after.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive_metastore.ttypes import (
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
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.table.update import TableRequirement, TableUpdate
from pyiceberg.typedef import Identifier
from pyiceberg.utils.properties import property_as_bool

from catalogd.iceberg.tables import WarehouseCatalog

logger = logging.getLogger(__name__)

__all__ = ["Change", "CommitGate", "Intents", "commit_tables", "roll_forward"]

#: Under the data dir: one file per multi-table commit whose pointers are moving.
INTENTS_DIR = "iceberg-intents"


@dataclass(frozen=True)
class Change:
    """One table's part of a transaction (database as the router takes it)."""

    database: str
    table: str
    requirements: tuple[TableRequirement, ...]
    updates: tuple[TableUpdate, ...]


class CommitGate:
    """The tables whose pointers a transaction is moving: readers through catalogd wait."""

    def __init__(self) -> None:
        self._moving: dict[tuple[str, str, str], threading.Event] = {}
        self._lock = threading.Lock()

    @contextmanager
    def moving(self, tables: list[tuple[str, str, str]]) -> Iterator[None]:
        done = threading.Event()
        with self._lock:
            for key in tables:
                self._moving[key] = done
        try:
            yield
        finally:
            with self._lock:
                for key in tables:
                    if self._moving.get(key) is done:
                        del self._moving[key]
            done.set()

    def wait(self, catalog: str, database: str, table: str, timeout: float = 60.0) -> None:
        """Return once no transaction is moving this table's pointer (at most ``timeout``)."""
        if not self._moving:
            return
        with self._lock:
            event = self._moving.get((catalog, database.lower(), table.lower()))
        if event is not None:
            event.wait(timeout)


class Intents:
    """The intent records of multi-table commits (one JSON file each, under the data dir)."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = data_dir / INTENTS_DIR

    def write(self, record: dict[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"{record['id']}.json"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
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
                found.append((path, json.loads(path.read_text())))
            except (OSError, ValueError):
                logger.exception("Iceberg transactions: unreadable intent %s (left in place)", path)
        return found


def _lock_request(database: str, table: str) -> LockRequest:
    component = LockComponent(level=LockLevel.TABLE, type=LockType.EXCLUSIVE, dbname=database, tablename=table,
                              isTransactional=True)
    return LockRequest(component=[component], user="catalogd", hostname="catalogd-iceberg-rest")


def _acquire(wh: WarehouseCatalog, client: Any, database: str, table: str) -> int:
    response = client.lock(_lock_request(wh.lock_name(database), table))
    if response.state == LockState.ACQUIRED:
        return int(response.lockid)
    if response.state == LockState.WAITING:
        try:
            wh._wait_for_lock(database, table, response.lockid, client)
            return int(response.lockid)
        except Exception:
            client.unlock(UnlockRequest(lockid=response.lockid))
            raise
    raise CommitFailedException(f"could not lock {database}.{table}: {response.state}")


def commit_tables(wh: WarehouseCatalog, changes: list[Change], intents: Intents, gate: CommitGate) -> None:
    """Commit every change or none (see the module's doc)."""
    ordered = sorted(changes, key=lambda c: (c.database, c.table))
    seen = set()
    for change in ordered:
        key = (change.database, change.table)
        if key in seen:
            raise CommitFailedException(f"table {change.database}.{change.table} appears twice in one transaction")
        seen.add(key)
    locks: list[int] = []
    with wh._client as client:
        try:
            for change in ordered:
                locks.append(_acquire(wh, client, change.database, change.table))
            staged = []
            for change in ordered:
                identifier: Identifier = (change.database, change.table)
                try:
                    hive_table = wh._get_hive_table(client, change.database, change.table)
                except NoSuchTableError:
                    raise NoSuchTableError(f"table {change.database}.{change.table} does not exist: a transaction "
                                           "commits to existing tables") from None
                current = wh._convert_hive_into_iceberg(hive_table)
                try:
                    updated = wh._update_and_stage_table(current, identifier, change.requirements, change.updates)
                except CommitFailedException as e:
                    raise CommitFailedException(f"{change.database}.{change.table}: {e}") from e
                wh._writing = (change.database, change.table, hive_table.sd.location if hive_table.sd else None)
                wh.check_write(updated.metadata, updated.metadata_location)
                staged.append((change, hive_table, current, updated))
            wh._writing = None
            moving = [(c, h, cur, up) for c, h, cur, up in staged if up.metadata != cur.metadata]
            for _, _, _, updated in moving:
                # Checked above (``check_write``): written as pyiceberg writes it.
                HiveCatalog._write_metadata(updated.metadata, updated.io, updated.metadata_location)
            if not moving:
                return
            record = {"id": uuid.uuid4().hex, "catalog": wh.name,
                      "tables": [{"database": c.database, "table": c.table, "old": cur.metadata_location,
                                  "new": up.metadata_location} for c, _, cur, up in moving]}
            path = intents.write(record)
            keys = [(wh.name, c.database.rsplit("#", 1)[-1], c.table) for c, _, _, _ in moving]
            with gate.moving(keys):
                for change, hive_table, current, updated in moving:
                    _move_spelled(client, change.database, hive_table, updated.metadata_location,
                                  current.metadata_location, updated.metadata, wh)
            intents.remove(path)
        finally:
            for lockid in reversed(locks):
                try:
                    client.unlock(UnlockRequest(lockid=lockid))
                except Exception:
                    logger.exception("Iceberg transactions: unlocking %d failed (it expires by itself)", lockid)


def _move_spelled(client: Any, database: str, hive_table: Any, new_location: str, old_location: str,
                  metadata: Any, wh: WarehouseCatalog) -> None:
    parameters = dict(hive_table.parameters or {})
    parameters.update(_construct_parameters(new_location, old_location, metadata.properties))
    hive_table.parameters = parameters
    hive_table.sd = _construct_hive_storage_descriptor(metadata.schema(), metadata.location,
                                                       property_as_bool(wh.properties, HIVE2_COMPATIBLE, True))
    hive_table.dbName = database
    client.alter_table_with_environment_context(
        dbname=database, tbl_name=hive_table.tableName, new_tbl=hive_table,
        environment_context=EnvironmentContext(properties={DO_NOT_UPDATE_STATS: DO_NOT_UPDATE_STATS_DEFAULT}))


def roll_forward(wh_for: Any, intents: Intents) -> int:
    """Finish the transactions a dead daemon left between its intent and its last pointer move.

    ``wh_for(catalog)``: the ``WarehouseCatalog`` of a catalog as catalogd itself. Returns how
    many intents were finished.
    """
    finished = 0
    for path, record in intents.pending():
        try:
            wh = wh_for(record["catalog"])
            _finish(wh, record)
            intents.remove(path)
            finished += 1
        except Exception:
            logger.exception("Iceberg transactions: rolling %s forward failed (retried at the next start)", path)
    return finished


def _finish(wh: WarehouseCatalog, record: dict[str, Any]) -> None:
    with wh._client as client:
        tables = sorted(record["tables"], key=lambda t: (t["database"], t["table"]))
        locks = []
        try:
            for t in tables:
                locks.append(_acquire(wh, client, t["database"], t["table"]))
            for t in tables:
                hive_table = wh._get_hive_table(client, t["database"], t["table"])
                pointer = (hive_table.parameters or {}).get("metadata_location")
                if pointer == t["new"]:
                    continue
                if pointer != t["old"]:
                    logger.error("Iceberg transaction %s: %s.%s is at %s, neither its old nor its new pointer: "
                                 "left as it is", record["id"], t["database"], t["table"], pointer)
                    continue
                from pyiceberg.io import load_file_io
                from pyiceberg.serializers import FromInputFile

                metadata = FromInputFile.table_metadata(load_file_io(wh.properties, t["new"]).new_input(t["new"]))
                _move_spelled(client, t["database"], hive_table, t["new"], t["old"], metadata, wh)
                logger.info("Iceberg transaction %s: rolled %s.%s forward to %s", record["id"], t["database"],
                            t["table"], t["new"])
        finally:
            for lockid in reversed(locks):
                try:
                    client.unlock(UnlockRequest(lockid=lockid))
                except Exception:
                    logger.exception("Iceberg transactions: unlocking %d failed", lockid)


