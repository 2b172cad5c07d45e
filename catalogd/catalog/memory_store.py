"""The objects of one memory catalog, kept once: HMS objects, serialized, under one lock.

Two faces share them. The catalog API (``catalog.memory.MemoryCatalog``) reads and writes
them through the codec, as ``HiveCatalog`` does over a metastore client; the HMS endpoint
(``hms.memory.MemoryMetastore``) serves them as they are, so Spark gets back byte for byte
what it wrote. Each face holds ``lock`` across its read-check-write, so the endpoint's
threads and API calls never interleave. Objects are kept serialized: nothing mutable is
ever shared with a caller. This module keeps the objects and the bookkeeping that goes
with them (a table's partitions and statistics follow its renames and drops); the rules
of each face live with the face.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, TypeVar

from thrift.protocol import TBinaryProtocol
from thrift.TSerialization import deserialize, serialize

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.memory_files import ScratchWarehouse, file_uri, path_of, strictly_inside
from catalogd.hive_idl import ttypes as hms

__all__ = ["MemoryStore", "is_external"]

T = TypeVar("T")
_PROTOCOL = TBinaryProtocol.TBinaryProtocolFactory()
#: (database, table) as stored.
logger = logging.getLogger(__name__)

Key = tuple[str, str]
#: A partition's values, in partition-key order.
Values = tuple[str, ...]


def encode(obj: Any) -> bytes:
    return bytes(serialize(obj, _PROTOCOL))


def decode(kind: type[T], data: bytes) -> T:
    obj: T = deserialize(kind(), data, _PROTOCOL)
    return obj


def is_external(tbl: hms.Table) -> bool:
    return (tbl.tableType == codec.EXTERNAL_TABLE
            or str((tbl.parameters or {}).get("EXTERNAL", "")).upper() == "TRUE")


class MemoryStore:
    """Databases, tables (and views), partitions, column statistics and functions of one memory catalog.

    Callers hold ``lock`` (reentrant) around every use; the methods do not take it themselves
    because a face's checks and its write must happen under one hold.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._databases: dict[str, bytes] = {}
        #: database -> table name -> the encoded hms.Table
        self._tables: dict[str, dict[str, bytes]] = {}
        #: (database, table) -> its tableType, so listings need not decode every table
        self._types: dict[Key, str] = {}
        #: (database, table) -> partition values -> the encoded hms.Partition
        self.partitions: dict[Key, dict[Values, bytes]] = {}
        #: (database, table, partition name or "", column) -> the encoded ColumnStatisticsObj
        self.column_stats: dict[tuple[str, str, str, str], bytes] = {}
        self._functions: dict[Key, bytes] = {}
        #: Set once the HMS endpoint serves this catalog: then managed tables have files.
        self.files: ScratchWarehouse | None = None

    # ------------------------------------------------------------ databases

    def database_names(self) -> list[str]:
        return sorted(self._databases)

    def database(self, name: str) -> hms.Database | None:
        data = self._databases.get(name)
        return decode(hms.Database, data) if data is not None else None

    def put_database(self, db: hms.Database) -> None:
        """Create or replace a database (its tables stay)."""
        self._databases[db.name] = encode(db)
        self._tables.setdefault(db.name, {})

    def drop_database(self, name: str, delete_data: bool) -> None:
        """Drop a database with its tables and functions (the caller has checked it may)."""
        for table in self.table_names(name):
            self.drop_table(name, table, delete_data)
        for key in [k for k in self._functions if k[0] == name]:
            del self._functions[key]
        self._databases.pop(name, None)
        self._tables.pop(name, None)
        if delete_data and self.files is not None:
            self.delete_unless_used(self.files.database_uri(name), f"database {name}", min_depth=1)

    def rename_database(self, name: str, new_name: str) -> None:
        """Rename a database and everything in it (locations stay where they are)."""
        db = self.database(name)
        assert db is not None
        db.name = new_name
        del self._databases[name]
        self._databases[new_name] = encode(db)
        tables = self._tables.pop(name, {})
        for table, data in tables.items():
            self._types[(new_name, table)] = self._types.pop((name, table), codec.MANAGED_TABLE)
            tbl = decode(hms.Table, data)
            tbl.dbName = new_name
            tables[table] = encode(tbl)
            parts = self.partitions.pop((name, table), {})
            for values, pdata in parts.items():
                part = decode(hms.Partition, pdata)
                part.dbName = new_name
                parts[values] = encode(part)
            self.partitions[(new_name, table)] = parts
        self._tables[new_name] = tables
        for (d, t, p, c) in [k for k in self.column_stats if k[0] == name]:
            self.column_stats[(new_name, t, p, c)] = self.column_stats.pop((d, t, p, c))
        for (d, f) in [k for k in self._functions if k[0] == name]:
            fn = decode(hms.Function, self._functions.pop((d, f)))
            fn.dbName = new_name
            self._functions[(new_name, f)] = encode(fn)

    # ------------------------------------------------------------ tables and views

    def table_names(self, database: str) -> list[str]:
        """Tables and views of a database, sorted (none when it does not exist)."""
        return sorted(self._tables.get(database, {}))

    def table(self, database: str, name: str) -> hms.Table | None:
        data = self._tables.get(database, {}).get(name)
        return decode(hms.Table, data) if data is not None else None

    def table_type(self, database: str, name: str) -> str | None:
        return self._types.get((database, name))

    def served(self, tbl: hms.Table) -> hms.Table:
        """``tbl`` as the endpoint serves it: a location the catalog API made up (``memory:``, kept
        as the API shows it) is the table's directory in the scratch warehouse, where Spark writes."""
        if self.files is not None and tbl.sd is not None and (tbl.sd.location or "").startswith("memory:"):
            tbl.sd.location = file_uri(self.files.database_dir(tbl.dbName) / tbl.tableName)
        return tbl

    def put_table(self, tbl: hms.Table) -> None:
        """Create or replace a table in an existing database (keyed by its dbName and tableName)."""
        self._tables[tbl.dbName][tbl.tableName] = encode(tbl)
        self._types[(tbl.dbName, tbl.tableName)] = tbl.tableType or codec.MANAGED_TABLE
        self.partitions.setdefault((tbl.dbName, tbl.tableName), {})

    def used_by_others(self, location: str | None, own_table: Key | None = None) -> str | None:
        """Which remaining table or partition stands in the way of deleting ``location`` (None: none).

        Its directory may not be ``location`` nor lie below it, and ``location`` may not lie inside
        another table's or partition's directory (a partition inside its own table's, ``own_table``,
        is fine): deleting it would take another object's files (a table created at, altered to,
        renamed onto, or given a partition on another one's directory). A memory catalog lives in
        the daemon's memory, so reading all of it is cheap next to the deletion.
        """
        path = path_of(location)
        if path is None:
            return None
        real = path.resolve()
        for database, tables in self._tables.items():
            for table, data in tables.items():
                tbl = decode(hms.Table, data)
                if codec.has_no_directory(tbl):  # an Iceberg view's metadata directory counts
                    continue
                own = (database, table) == own_table
                places: list[tuple[str, str | None]] = []
                if not own and tbl.sd is not None:
                    places.append((f"table {database}.{table}", self.served(tbl).sd.location))
                for pdata in self.partitions.get((database, table), {}).values():
                    part = decode(hms.Partition, pdata)
                    places.append((f"a partition of {database}.{table}", part.sd.location if part.sd else None))
                for what, other in places:
                    other_path = path_of(other)
                    if other_path is None:
                        continue
                    other_real = other_path.resolve()
                    if other_real == real or strictly_inside(other_real, real):
                        return f"the directory of {what} is {other}"
                    if strictly_inside(real, other_real) and not own:
                        return f"it lies inside the directory of {what}, {other}"
        return None

    def delete_unless_used(self, location: str | None, what: str, own_table: Key | None = None,
                           min_depth: int = 2) -> None:
        """Delete ``location``'s files (confined to the scratch warehouse) unless another object uses them."""
        if self.files is None:
            return
        blocker = self.used_by_others(location, own_table)
        if blocker:
            logger.warning("memory catalog: %s dropped; its files %s were left in place: %s", what, location, blocker)
            return
        self.files.delete(location, min_depth=min_depth)

    def drop_table(self, database: str, name: str, delete_data: bool) -> hms.Table | None:
        """Drop a table with its partitions and statistics; with ``delete_data`` a managed table's
        files go too (only those inside the scratch warehouse)."""
        data = self._tables.get(database, {}).pop(name, None)
        self._types.pop((database, name), None)
        parts = self.partitions.pop((database, name), {})
        self.drop_column_stats(database, name)
        if data is None:
            return None
        tbl = self.served(decode(hms.Table, data))
        if delete_data and self.files is not None and tbl.tableType != codec.VIRTUAL_VIEW and not is_external(tbl):
            # The table and its partitions are gone from the store already: what remains is others'.
            for pdata in parts.values():
                part = decode(hms.Partition, pdata)
                self.delete_unless_used(part.sd.location if part.sd else None, f"a partition of {database}.{name}")
            self.delete_unless_used(tbl.sd.location if tbl.sd else None, f"table {database}.{name}")
        return tbl

    def rename_table(self, database: str, name: str, new: hms.Table) -> None:
        """Store ``new`` in place of ``name``: its partitions and statistics follow it."""
        new_name = new.tableName
        del self._tables[database][name]
        self._types.pop((database, name), None)
        parts = self.partitions.pop((database, name), {})
        for values, data in parts.items():
            part = decode(hms.Partition, data)
            part.tableName = new_name
            parts[values] = encode(part)
        for (d, t, p, c) in [k for k in self.column_stats if k[:2] == (database, name)]:
            self.column_stats[(d, new_name, p, c)] = self.column_stats.pop((d, t, p, c))
        self.put_table(new)
        self.partitions[(database, new_name)] = parts

    def drop_column_stats(self, database: str, name: str) -> None:
        for key in [k for k in self.column_stats if k[:2] == (database, name)]:
            del self.column_stats[key]

    # ------------------------------------------------------------ functions

    def function_names(self, database: str) -> list[str]:
        return sorted(n for d, n in self._functions if d == database)

    def function(self, database: str, name: str) -> hms.Function | None:
        data = self._functions.get((database, name))
        return decode(hms.Function, data) if data is not None else None

    def put_function(self, fn: hms.Function) -> None:
        self._functions[(fn.dbName, fn.functionName)] = encode(fn)

    def drop_function(self, database: str, name: str) -> bool:
        return self._functions.pop((database, name), None) is not None
