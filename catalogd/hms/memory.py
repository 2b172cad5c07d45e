"""ThriftHiveMetastore answers for a memory catalog, which has no metastore behind it.

The answers come from the catalog's ``MemoryStore``, the one place a memory catalog keeps
its objects: the HMS objects clients wrote are served back as they were written, and the
catalogd API reads the same objects through the codec. This module holds the endpoint's
rules (HMS's names, patterns, partitions, statistics and its answers to each call); the
files of managed tables live under one scratch warehouse directory
(``catalog.memory_files``), outside of which nothing is ever deleted.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.base import check_name
from catalogd.catalog.memory import MemoryCatalog
from catalogd.catalog.memory_files import ScratchWarehouse, path_of
from catalogd.catalog.memory_store import decode, encode, is_external
from catalogd.errors import CatalogError, InvalidArgumentError, PermissionDeniedError, TableAlreadyExistsError
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.errors import to_hms_error
from catalogd.hms.partition_filter import FilterError, PartitionFilter

logger = logging.getLogger(__name__)

__all__ = ["SCRATCH_WAREHOUSE", "MemoryMetastore"]

#: Where the endpoint keeps memory catalogs' files: ``<data dir>/scratch-warehouse/<catalog>``.
SCRATCH_WAREHOUSE = "scratch-warehouse"

T = TypeVar("T")

#: Characters Hive escapes in a partition directory name (FileUtils.escapePathName).
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^')
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def escape_path_name(value: str) -> str:
    if not value:
        return DEFAULT_PARTITION
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or ord(c) < 0x20 else c for c in value)


def _unescape_path_name(value: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


def _hive_pattern(pattern: str | None) -> Callable[[str], bool]:
    """HMS's name pattern: ``*`` any run of characters, ``|`` alternatives, case-insensitive."""
    if pattern is None or pattern in ("", "*"):
        return lambda name: True
    alternatives = [re.compile(re.escape(p.strip()).replace(r"\*", ".*"), re.IGNORECASE)
                    for p in pattern.split("|")]
    return lambda name: any(a.fullmatch(name) for a in alternatives)


def _changed(old: str | None, new: str | None) -> bool:
    """Whether a location changes: ``file:/x``, ``file:///x/`` and ``/x`` are one place (Spark sends
    back the first spelling of what the store holds in the second)."""
    if not new:
        return False
    old_path, new_path = path_of(old), path_of(new)
    if old_path is not None and new_path is not None:
        return os.path.normpath(old_path) != os.path.normpath(new_path)
    return (old or "").rstrip("/") != new.rstrip("/")


def _limit(items: list[T], max_parts: int | None) -> list[T]:
    return items if max_parts is None or max_parts < 0 else items[:max_parts]


class MemoryMetastore:
    """ThriftHiveMetastore answers for one memory catalog, from its store."""

    def __init__(self, catalog: MemoryCatalog, warehouse: Path, *, root: Path | None = None) -> None:
        """``warehouse``: ``<data-dir>/scratch-warehouse/<catalog>``; ``root`` (default its parent's
        parent, the data dir): ``close()`` removes ``warehouse`` only when it lies inside ``root``."""
        self.catalog = catalog
        self.name = catalog.name
        self.store = catalog.store
        self.files = ScratchWarehouse(catalog.name, warehouse, root=root)
        self.warehouse = self.files.path
        with self.store.lock:
            # From now on managed tables have files: drops through either face delete them.
            self.store.files = self.files
        self._handlers: dict[str, Callable[[Any], Any]] = {
            name[len("_m_"):]: getattr(self, name) for name in dir(self) if name.startswith("_m_")
        }

    # ------------------------------------------------------------ entry points

    def call(self, method: str, args: Any) -> Any:
        handler = self._handlers.get(method)
        if handler is None:
            raise hms.MetaException(message=f"catalogd: {method} is not supported on memory catalog {self.name}")
        # One lock with the catalog API: a call's reads, checks and writes are never interleaved.
        with self.store.lock:
            try:
                return handler(args)
            except CatalogError as e:
                raise to_hms_error(e, method) from None

    def close(self) -> None:
        """Daemon stop: the catalog's scratch warehouse goes (only it, and only inside the data dir)."""
        with self.store.lock:
            self.files.close()

    # ------------------------------------------------------------ databases

    def _database(self, name: str) -> hms.Database:
        db = self.store.database(name)
        if db is None:
            raise hms.NoSuchObjectException(message=f"database {name} does not exist")
        # Every database's files are in the scratch warehouse, whatever location the API gave it.
        db.locationUri = self.files.database_uri(name)
        return db

    def _m_get_database(self, a: Any) -> hms.Database:
        return self._database(a.name)

    def _m_get_databases(self, a: Any) -> list[str]:
        match = _hive_pattern(a.pattern)
        return [d for d in self.store.database_names() if match(d)]

    def _m_get_all_databases(self, a: Any) -> list[str]:
        return self.store.database_names()

    def _m_create_database(self, a: Any) -> None:
        db: hms.Database = copy.deepcopy(a.database)
        if not db or not db.name:
            raise hms.InvalidObjectException(message="a database needs a name")
        db.name = db.name.lower()
        check_name(db.name, "database")
        if self.store.database(db.name) is not None:
            raise hms.AlreadyExistsException(message=f"database {self.name}.{db.name} already exists")
        db.locationUri = self.files.database_uri(db.name)
        self.store.put_database(db)
        self.files.database_dir(db.name).mkdir(parents=True, exist_ok=True)

    def _m_alter_database(self, a: Any) -> None:
        self._database(a.dbname)
        stored = self.store.database(a.dbname)
        assert stored is not None
        new: hms.Database = copy.deepcopy(a.db)
        # The name and the location stay (HMS renames no database; the files stay where they are).
        new.name, new.locationUri = stored.name, stored.locationUri
        self.store.put_database(new)

    def _m_drop_database(self, a: Any) -> None:
        name = a.name
        self._database(name)
        if name == self.catalog.default_database:  # refused before anything is dropped, as HMS does
            raise hms.MetaException(message=f"Can not drop {name} database")
        if self.store.table_names(name) and not a.cascade:
            raise hms.InvalidOperationException(
                message=f"Database {name} is not empty. One or more tables exist.")
        self.store.drop_database(name, delete_data=bool(a.deleteData))

    # ------------------------------------------------------------ tables

    def _table_names(self, db: str) -> list[str]:
        self._database(db)
        return self.store.table_names(db)

    def _table(self, db: str, name: str) -> hms.Table:
        tbl = self.store.table(db, name)
        if tbl is None:
            self._database(db)
            raise hms.NoSuchObjectException(message=f"{db}.{name} table not found")
        made_by_api = bool(tbl.sd and (tbl.sd.location or "").startswith("memory:"))
        tbl = self.store.served(tbl)
        if made_by_api and tbl.tableType == codec.MANAGED_TABLE and not is_external(tbl):
            # As HMS makes a managed table's directory: Spark refuses to read a path that is not there.
            self.files.make_dir(tbl.sd.location)
        return tbl

    def _m_get_table(self, a: Any) -> hms.Table:
        return self._table(a.dbname, a.tbl_name)

    def _m_get_table_req(self, a: Any) -> hms.GetTableResult:
        return hms.GetTableResult(table=self._table(a.req.dbName, a.req.tblName))

    def _m_get_tables(self, a: Any) -> list[str]:
        match = _hive_pattern(a.pattern)
        return [t for t in self._table_names(a.db_name) if match(t)]

    def _m_get_all_tables(self, a: Any) -> list[str]:
        return self._table_names(a.db_name)

    def _m_get_tables_by_type(self, a: Any) -> list[str]:
        match = _hive_pattern(a.pattern)
        return [t for t in self._table_names(a.db_name)
                if match(t) and (not a.tableType or self.store.table_type(a.db_name, t) == a.tableType)]

    def _m_get_table_meta(self, a: Any) -> list[hms.TableMeta]:
        db_match, tbl_match = _hive_pattern(a.db_patterns), _hive_pattern(a.tbl_patterns)
        types = set(a.tbl_types or [])
        metas = []
        for db in self.store.database_names():
            if not db_match(db):
                continue
            for name in self._table_names(db):
                if not tbl_match(name):
                    continue
                tbl = self._table(db, name)
                if types and tbl.tableType not in types:
                    continue
                metas.append(hms.TableMeta(dbName=db, tableName=name, tableType=tbl.tableType,
                                           comments=(tbl.parameters or {}).get("comment")))
        return metas

    def _objects(self, db: str, names: list[str] | None) -> list[hms.Table]:
        self._database(db)
        found = []
        for name in names or []:
            try:
                found.append(self._table(db, name))
            except hms.NoSuchObjectException:
                continue  # as HMS: missing names are left out
        return found

    def _m_get_table_objects_by_name(self, a: Any) -> list[hms.Table]:
        return self._objects(a.dbname, a.tbl_names)

    def _m_get_table_objects_by_name_req(self, a: Any) -> hms.GetTablesResult:
        return hms.GetTablesResult(tables=self._objects(a.req.dbName, a.req.tblNames))

    def _create_table(self, given: hms.Table) -> None:
        tbl: hms.Table = copy.deepcopy(given)
        if not tbl.tableName or not tbl.dbName:
            raise hms.InvalidObjectException(message="a table needs a name and a database")
        tbl.tableName, tbl.dbName = tbl.tableName.lower(), tbl.dbName.lower()
        db = self._database(tbl.dbName)
        if tbl.sd is None:
            raise hms.InvalidObjectException(message=f"{tbl.dbName}.{tbl.tableName}: no storage descriptor")
        if not tbl.tableType:
            tbl.tableType = codec.MANAGED_TABLE
        view = tbl.tableType == codec.VIRTUAL_VIEW
        if not view and not tbl.sd.location:
            tbl.sd.location = f"{db.locationUri}/{tbl.tableName}"
        if not tbl.createTime:
            tbl.createTime = int(time.time())
        tbl.parameters = dict(tbl.parameters or {})
        # The catalog's rules for a new table hold for Spark's tables too.
        model = codec.to_table(self.name, tbl)
        if view:
            self.catalog.check_view(model)
        else:
            self.catalog.check_table(model)
        existing = self.store.table(tbl.dbName, tbl.tableName)
        if existing is not None:
            what = "view" if existing.tableType == codec.VIRTUAL_VIEW else "table"
            raise hms.AlreadyExistsException(message=f"{what} {self.name}.{tbl.dbName}.{tbl.tableName} already "
                                                     "exists")
        if not view:
            self.catalog.check_connector(model)
            self._claim(tbl, tbl.sd.location, f"table {tbl.dbName}.{tbl.tableName}")
        self.store.put_table(tbl)
        if not view and not is_external(tbl):
            self.files.make_dir(tbl.sd.location)

    def check_claim(self, location: str, what: str, own_table: tuple[str, str] | None = None) -> None:
        """Refuse ``location`` for ``what`` as a create or alter of a table would (the REST door
        checks a table's location before it writes the table's metadata file there).

        Raises:
            PermissionDeniedError: outside the allowed locations, or another object's directory.
        """
        try:
            self._claim(None, location, what, own_table)
        except hms.MetaException as e:
            raise PermissionDeniedError(str(e.message).removeprefix("catalogd: ")) from None

    def _claim(self, tbl: hms.Table | None, location: str | None, what: str,
               own_table: tuple[str, str] | None = None) -> None:
        """Refuse a directory (and a data source table's Spark ``path``) that another table or partition
        of the catalog uses: at it, below it, or around it (a partition inside its own table's is fine).

        Dropped, the new object would take the other's files; Spark's ``INSERT OVERWRITE`` would
        clear them at once. Hive catalogs refuse these through their claims (``catalogd.hms.claims``).
        """
        places = [location]
        path = codec.spark_path(tbl) if tbl is not None and tbl.sd is not None else None
        if path and _changed(location, path):
            places.append(path)
        for place in places:
            try:
                self.catalog.confine(place, what if place == location else f"{what} (its Spark path)")
            except CatalogError as e:  # outside allowed-locations
                raise hms.MetaException(message=f"catalogd: {e.message}") from None
            blocker = self.store.used_by_others(place, own_table)
            if blocker:
                raise hms.MetaException(message=f"catalogd: {what}: location {place} cannot be used on memory "
                                                f"catalog {self.name}: {blocker}")

    def _m_create_table(self, a: Any) -> None:
        self._create_table(a.tbl)

    def _m_create_table_with_environment_context(self, a: Any) -> None:
        self._create_table(a.tbl)

    def _alter_table(self, db: str, name: str, new: hms.Table, cascade: bool = False) -> None:
        old = self._table(db, name)
        new = copy.deepcopy(new)
        new.dbName = (new.dbName or db).lower()
        new.tableName = (new.tableName or name).lower()
        if new.dbName != db:
            raise hms.InvalidOperationException(
                message=f"catalogd: moving {db}.{name} to database {new.dbName} is not supported on memory "
                        f"catalog {self.name}")
        if new.tableType != old.tableType and {new.tableType, old.tableType} & {codec.VIRTUAL_VIEW}:
            raise hms.InvalidOperationException(message=f"{db}.{name}: a table cannot become a view or back")
        if old.tableType != codec.VIRTUAL_VIEW:
            self._check_alter(old, new)
            if new.sd is not None and new.tableName == name and _changed(old.sd.location if old.sd else None,
                                                                                  new.sd.location):
                self._claim(new, new.sd.location, f"table {db}.{name}", own_table=(db, name))
        if new.tableName != name:
            self._rename(old, new)
            name = new.tableName
        if cascade and new.sd is not None:
            parts = self.store.partitions.get((db, name), {})
            for values, data in parts.items():
                part = decode(hms.Partition, data)
                if part.sd is not None:
                    part.sd.cols = copy.deepcopy(new.sd.cols)
                parts[values] = encode(part)
        self.store.put_table(new)

    def _check_alter(self, old: hms.Table, new: hms.Table) -> None:
        """The catalog's rules for a changed table: new columns of known types and new names, and a
        connector table keeps its connector."""
        model_old, model_new = codec.to_table(self.name, old), codec.to_table(self.name, new)
        if codec.CONNECTOR in model_old.properties and codec.CONNECTOR not in model_new.properties:
            raise InvalidArgumentError(f"table {self.name}.{old.dbName}.{old.tableName}: a connector table keeps "
                                       "its connector option")
        old_names = [c.name.lower() for c in model_old.columns]
        if [c.name.lower() for c in model_new.columns[:len(old_names)]] == old_names:
            self.catalog.added_columns(model_old, model_new.columns[len(old_names):])

    def _rename(self, old: hms.Table, new: hms.Table) -> None:
        """As HMS: a managed table in its default place moves its directory (and partitions) along."""
        db, name, new_name = old.dbName, old.tableName, new.tableName
        check_name(new_name, "table")
        if self.store.table(db, new_name) is not None:
            raise TableAlreadyExistsError(f"table {self.name}.{db}.{new_name} already exists")
        old_location = old.sd.location if old.sd else None
        default_old = f"{self._database(db).locationUri}/{name}"
        default_new = f"{self._database(db).locationUri}/{new_name}"
        moved = (old.tableType == codec.MANAGED_TABLE and not is_external(old)
                 and old_location == default_old and new.sd is not None
                 and new.sd.location in (None, old_location, default_new))
        if not moved and new.sd is not None and _changed(old_location, new.sd.location):
            self._claim(new, new.sd.location, f"table {db}.{new_name}", own_table=(db, name))
        if moved:
            self._claim(new, default_new, f"table {db}.{new_name}", own_table=(db, name))
            self.files.move(default_old, default_new)
            assert new.sd is not None
            new.sd.location = default_new
            if codec.spark_path(new) in (old_location, default_new):
                codec.set_spark_path(new, default_new)
        self.store.rename_table(db, name, new)
        if moved:
            parts = self.store.partitions[(db, new_name)]
            for values, data in list(parts.items()):
                part = decode(hms.Partition, data)
                if part.sd and part.sd.location and part.sd.location.startswith(default_old + "/"):
                    part.sd.location = default_new + part.sd.location[len(default_old):]
                parts[values] = encode(part)

    def _m_alter_table(self, a: Any) -> None:
        self._alter_table(a.dbname, a.tbl_name, a.new_tbl)

    def _m_alter_table_with_environment_context(self, a: Any) -> None:
        context = (a.environment_context.properties or {}) if a.environment_context else {}
        self._alter_table(a.dbname, a.tbl_name, a.new_tbl, cascade=context.get("CASCADE", "").lower() == "true")

    def _m_alter_table_with_cascade(self, a: Any) -> None:
        self._alter_table(a.dbname, a.tbl_name, a.new_tbl, cascade=bool(a.cascade))

    def _drop_table(self, db: str, name: str, delete_data: bool) -> None:
        self._table(db, name)
        self.store.drop_table(db, name, delete_data)

    def _m_drop_table(self, a: Any) -> None:
        self._drop_table(a.dbname, a.name, bool(a.deleteData))

    def _m_drop_table_with_environment_context(self, a: Any) -> None:
        self._drop_table(a.dbname, a.name, bool(a.deleteData))

    # ------------------------------------------------------------ partitions

    def _partition_table(self, db: str, name: str) -> tuple[hms.Table, dict[tuple[str, ...], bytes]]:
        tbl = self._table(db, name)
        return tbl, self.store.partitions.setdefault((db, name), {})

    @staticmethod
    def _name(tbl: hms.Table, values: list[str] | tuple[str, ...]) -> str:
        return "/".join(f"{escape_path_name(k.name.lower())}={escape_path_name(v)}"
                        for k, v in zip(tbl.partitionKeys, values, strict=True))

    def _values_of_name(self, tbl: hms.Table, part_name: str) -> tuple[str, ...]:
        pairs = [p.split("=", 1) for p in part_name.split("/")]
        keys = [k.name.lower() for k in tbl.partitionKeys or []]
        if any(len(p) != 2 for p in pairs) or [_unescape_path_name(p[0]).lower() for p in pairs] != keys:
            raise hms.MetaException(message=f"Invalid partition name {part_name!r} for {tbl.dbName}.{tbl.tableName}")
        return tuple(_unescape_path_name(p[1]) for p in pairs)

    def _sorted(self, tbl: hms.Table, parts: dict[tuple[str, ...], bytes]) -> list[tuple[tuple[str, ...], bytes]]:
        return sorted(parts.items(), key=lambda item: self._name(tbl, item[0]))

    def _get_partition(self, db: str, name: str, values: list[str] | tuple[str, ...]) -> hms.Partition:
        _tbl, parts = self._partition_table(db, name)
        data = parts.get(tuple(values))
        if data is None:
            raise hms.NoSuchObjectException(message=f"partition values={list(values)} of {db}.{name} not found")
        return decode(hms.Partition, data)

    def _add_partition(self, given: hms.Partition, if_not_exists: bool = False) -> hms.Partition | None:
        part: hms.Partition = copy.deepcopy(given)
        db, name = (part.dbName or "").lower(), (part.tableName or "").lower()
        tbl, parts = self._partition_table(db, name)
        keys = tbl.partitionKeys or []
        values = tuple(part.values or [])
        if not keys or len(values) != len(keys):
            raise hms.MetaException(
                message=f"{db}.{name}: partition values {list(values)} do not match its partition keys "
                        f"{[k.name for k in keys]}")
        if values in parts:
            if if_not_exists:
                return None
            raise hms.AlreadyExistsException(message=f"partition {self._name(tbl, values)} of {db}.{name} exists")
        part.dbName, part.tableName = db, name
        if part.sd is None:
            part.sd = copy.deepcopy(tbl.sd)
            part.sd.location = None
        if part.sd.location:
            self._claim(None, part.sd.location, f"partition {self._name(tbl, values)} of {db}.{name}",
                        own_table=(db, name))
        elif tbl.sd and tbl.sd.location:
            part.sd.location = f"{tbl.sd.location}/{self._name(tbl, values)}"
            if not is_external(tbl):
                self.files.make_dir(part.sd.location)
        if not part.createTime:
            part.createTime = int(time.time())
        part.parameters = dict(part.parameters or {})
        parts[values] = encode(part)
        return part

    def _m_add_partition(self, a: Any) -> hms.Partition:
        added = self._add_partition(a.new_part)
        assert added is not None
        return added

    def _m_add_partition_with_environment_context(self, a: Any) -> hms.Partition:
        return self._m_add_partition(a)

    def _add_all(self, parts: list[hms.Partition], if_not_exists: bool) -> list[hms.Partition]:
        # All or nothing, as HMS: check every one first.
        seen: set[tuple[str, str, tuple[str, ...]]] = set()
        for part in parts:
            key = ((part.dbName or "").lower(), (part.tableName or "").lower(), tuple(part.values or []))
            if key in seen:
                raise hms.InvalidObjectException(message=f"partition {list(key[2])} given twice")
            seen.add(key)
            _, existing = self._partition_table(key[0], key[1])
            if key[2] in existing and not if_not_exists:
                raise hms.AlreadyExistsException(message=f"partition {list(key[2])} of {key[0]}.{key[1]} exists")
        added = []
        for part in parts:
            done = self._add_partition(part, if_not_exists)
            if done is not None:
                added.append(done)
        return added

    def _m_add_partitions(self, a: Any) -> int:
        return len(self._add_all(a.new_parts or [], False))

    def _m_add_partitions_req(self, a: Any) -> hms.AddPartitionsResult:
        request: hms.AddPartitionsRequest = a.request
        parts = request.parts or []
        for part in parts:
            part.dbName, part.tableName = part.dbName or request.dbName, part.tableName or request.tblName
            if (part.dbName.lower(), part.tableName.lower()) != (request.dbName.lower(), request.tblName.lower()):
                raise hms.MetaException(message="every partition of add_partitions_req belongs to its table")
        added = self._add_all(parts, bool(request.ifNotExists))
        return hms.AddPartitionsResult(partitions=added if request.needResult else None)

    def _m_append_partition(self, a: Any) -> hms.Partition:
        added = self._add_partition(hms.Partition(values=list(a.part_vals or []), dbName=a.db_name,
                                                  tableName=a.tbl_name))
        assert added is not None
        return added

    def _alter_partition(self, db: str, name: str, given: hms.Partition) -> None:
        _tbl, parts = self._partition_table(db, name)
        values = tuple(given.values or [])
        if values not in parts:
            raise hms.InvalidOperationException(message=f"alter is not possible: partition {list(values)} of "
                                                        f"{db}.{name} does not exist")
        part = copy.deepcopy(given)
        part.dbName, part.tableName = db, name
        old = decode(hms.Partition, parts[values])
        new_location = part.sd.location if part.sd else None
        if new_location and _changed(old.sd.location if old.sd else None, new_location):
            self._claim(None, new_location, f"partition {list(values)} of {db}.{name}", own_table=(db, name))
        parts[values] = encode(part)

    def _m_alter_partition(self, a: Any) -> None:
        self._alter_partition(a.db_name, a.tbl_name, a.new_part)

    def _m_alter_partition_with_environment_context(self, a: Any) -> None:
        self._alter_partition(a.db_name, a.tbl_name, a.new_part)

    def _m_alter_partitions(self, a: Any) -> None:
        _, parts = self._partition_table(a.db_name, a.tbl_name)
        for part in a.new_parts or []:
            if tuple(part.values or []) not in parts:
                raise hms.InvalidOperationException(message=f"alter is not possible: partition {part.values} "
                                                            f"of {a.db_name}.{a.tbl_name} does not exist")
        for part in a.new_parts or []:
            self._alter_partition(a.db_name, a.tbl_name, part)

    def _m_alter_partitions_with_environment_context(self, a: Any) -> None:
        self._m_alter_partitions(a)

    def _m_rename_partition(self, a: Any) -> None:
        _tbl, parts = self._partition_table(a.db_name, a.tbl_name)
        old = tuple(a.part_vals or [])
        new = copy.deepcopy(a.new_part)
        if old not in parts:
            raise hms.InvalidOperationException(message=f"partition {list(old)} does not exist")
        if tuple(new.values) in parts:
            raise hms.AlreadyExistsException(message=f"partition {new.values} exists")
        del parts[old]
        new.dbName, new.tableName = a.db_name, a.tbl_name
        parts[tuple(new.values)] = encode(new)

    def _drop_partition(self, db: str, name: str, values: tuple[str, ...], delete_data: bool) -> hms.Partition:
        tbl, parts = self._partition_table(db, name)
        data = parts.pop(values, None)
        if data is None:
            raise hms.NoSuchObjectException(message=f"partition {list(values)} of {db}.{name} does not exist")
        part = decode(hms.Partition, data)
        part_name = self._name(tbl, values)
        for key in [k for k in self.store.column_stats if k[:3] == (db, name, part_name)]:
            del self.store.column_stats[key]
        if delete_data and not is_external(tbl):
            # Gone from the store already: what remains (its own table's directory aside) is others'.
            self.store.delete_unless_used(part.sd.location if part.sd else None, f"partition {part_name} of "
                                          f"{db}.{name}", own_table=(db, name))
        return part

    def _m_drop_partition(self, a: Any) -> bool:
        self._drop_partition(a.db_name, a.tbl_name, tuple(a.part_vals or []), bool(a.deleteData))
        return True

    def _m_drop_partition_with_environment_context(self, a: Any) -> bool:
        return self._m_drop_partition(a)

    def _m_drop_partition_by_name(self, a: Any) -> bool:
        tbl = self._table(a.db_name, a.tbl_name)
        self._drop_partition(a.db_name, a.tbl_name, self._values_of_name(tbl, a.part_name), bool(a.deleteData))
        return True

    def _m_drop_partition_by_name_with_environment_context(self, a: Any) -> bool:
        return self._m_drop_partition_by_name(a)

    def _m_drop_partitions_req(self, a: Any) -> hms.DropPartitionsResult:
        req: hms.DropPartitionsRequest = a.req
        tbl, parts = self._partition_table(req.dbName, req.tblName)
        if req.parts is None or req.parts.names is None:
            raise hms.MetaException(message=f"catalogd: drop_partitions_req by expression is not supported on "
                                            f"memory catalog {self.name}")
        wanted = [self._values_of_name(tbl, n) for n in req.parts.names]
        missing = [v for v in wanted if v not in parts]
        if missing and not req.ifExists:
            raise hms.NoSuchObjectException(message=f"partitions {missing} of {req.dbName}.{req.tblName} do not exist")
        delete = True if req.deleteData is None else bool(req.deleteData)
        dropped = [self._drop_partition(req.dbName, req.tblName, v, delete) for v in wanted if v in parts]
        return hms.DropPartitionsResult(partitions=dropped if req.needResult else None)

    def _m_get_partition(self, a: Any) -> hms.Partition:
        return self._get_partition(a.db_name, a.tbl_name, a.part_vals or [])

    def _m_get_partition_with_auth(self, a: Any) -> hms.Partition:
        return self._get_partition(a.db_name, a.tbl_name, a.part_vals or [])

    def _m_get_partition_by_name(self, a: Any) -> hms.Partition:
        tbl = self._table(a.db_name, a.tbl_name)
        return self._get_partition(a.db_name, a.tbl_name, self._values_of_name(tbl, a.part_name))

    def _all(self, db: str, name: str, max_parts: int | None = -1,
             keep: Callable[[tuple[str, ...]], bool] | None = None) -> list[hms.Partition]:
        tbl, parts = self._partition_table(db, name)
        chosen = [decode(hms.Partition, data) for values, data in self._sorted(tbl, parts)
                  if keep is None or keep(values)]
        return _limit(chosen, max_parts)

    def _m_get_partitions(self, a: Any) -> list[hms.Partition]:
        return self._all(a.db_name, a.tbl_name, a.max_parts)

    def _m_get_partitions_with_auth(self, a: Any) -> list[hms.Partition]:
        return self._all(a.db_name, a.tbl_name, a.max_parts)

    def _spec(self, db: str, name: str, part_vals: list[str] | None) -> Callable[[tuple[str, ...]], bool]:
        """A partial specification: an empty value matches any, as HMS."""
        tbl = self._table(db, name)
        spec = list(part_vals or [])
        if len(spec) > len(tbl.partitionKeys or []):
            raise hms.MetaException(message=f"{db}.{name}: more partition values than partition keys")
        return lambda values: all(not s or s == v for s, v in zip(spec, values, strict=False))

    def _m_get_partitions_ps(self, a: Any) -> list[hms.Partition]:
        return self._all(a.db_name, a.tbl_name, a.max_parts, self._spec(a.db_name, a.tbl_name, a.part_vals))

    def _m_get_partitions_ps_with_auth(self, a: Any) -> list[hms.Partition]:
        return self._m_get_partitions_ps(a)

    def _m_get_partition_names(self, a: Any) -> list[str]:
        tbl, parts = self._partition_table(a.db_name, a.tbl_name)
        return _limit([self._name(tbl, v) for v, _ in self._sorted(tbl, parts)], a.max_parts)

    def _m_get_partition_names_ps(self, a: Any) -> list[str]:
        tbl, parts = self._partition_table(a.db_name, a.tbl_name)
        keep = self._spec(a.db_name, a.tbl_name, a.part_vals)
        return _limit([self._name(tbl, v) for v, _ in self._sorted(tbl, parts) if keep(v)], a.max_parts)

    def _m_get_partitions_by_names(self, a: Any) -> list[hms.Partition]:
        tbl, parts = self._partition_table(a.db_name, a.tbl_name)
        found = []
        for part_name in a.names or []:
            try:
                values = self._values_of_name(tbl, part_name)
            except hms.MetaException:
                continue
            if values in parts:
                found.append(decode(hms.Partition, parts[values]))
        return found

    def _m_get_partitions_by_filter(self, a: Any) -> list[hms.Partition]:
        tbl = self._table(a.db_name, a.tbl_name)
        try:
            flt = PartitionFilter(a.filter or "", {k.name: k.type for k in tbl.partitionKeys or []})
        except FilterError as e:
            logger.warning("memory catalog %s: partition filter %r of %s.%s: %s", self.name, a.filter,
                           a.db_name, a.tbl_name, e)
            raise hms.MetaException(message=f"Error parsing partition filter {a.filter!r}: {e}") from None
        return self._all(a.db_name, a.tbl_name, a.max_parts, lambda values: flt.matches(list(values)))

    # ------------------------------------------------------------ column statistics

    def _update_stats(self, stats: hms.ColumnStatistics, table_level: bool) -> bool:
        desc = stats.statsDesc
        db, name = desc.dbName.lower(), desc.tableName.lower()
        tbl = self._table(db, name)
        part_name = ""
        if not table_level:
            values = self._values_of_name(tbl, desc.partName or "")
            self._get_partition(db, name, values)
            part_name = self._name(tbl, values)
        for obj in stats.statsObj or []:
            self.store.column_stats[(db, name, part_name, obj.colName.lower())] = encode(obj)
        return True

    def _m_update_table_column_statistics(self, a: Any) -> bool:
        return self._update_stats(a.stats_obj, True)

    def _m_update_partition_column_statistics(self, a: Any) -> bool:
        return self._update_stats(a.stats_obj, False)

    def _stats(self, db: str, name: str, part_name: str, col: str) -> hms.ColumnStatisticsObj:
        data = self.store.column_stats.get((db, name, part_name, col.lower()))
        if data is None:
            raise hms.NoSuchObjectException(message=f"no statistics of column {col} of {db}.{name} {part_name}")
        return decode(hms.ColumnStatisticsObj, data)

    def _m_get_table_column_statistics(self, a: Any) -> hms.ColumnStatistics:
        self._table(a.db_name, a.tbl_name)
        obj = self._stats(a.db_name, a.tbl_name, "", a.col_name)
        return hms.ColumnStatistics(statsDesc=hms.ColumnStatisticsDesc(
            isTblLevel=True, dbName=a.db_name, tableName=a.tbl_name), statsObj=[obj])

    def _m_get_partition_column_statistics(self, a: Any) -> hms.ColumnStatistics:
        tbl = self._table(a.db_name, a.tbl_name)
        part_name = self._name(tbl, self._values_of_name(tbl, a.part_name))
        obj = self._stats(a.db_name, a.tbl_name, part_name, a.col_name)
        return hms.ColumnStatistics(statsDesc=hms.ColumnStatisticsDesc(
            isTblLevel=False, dbName=a.db_name, tableName=a.tbl_name, partName=part_name), statsObj=[obj])

    def _m_get_table_statistics_req(self, a: Any) -> hms.TableStatsResult:
        req = a.request
        self._table(req.dbName, req.tblName)
        found = [decode(hms.ColumnStatisticsObj, data) for col in req.colNames or []
                 if (data := self.store.column_stats.get((req.dbName, req.tblName, "", col.lower()))) is not None]
        return hms.TableStatsResult(tableStats=found)

    def _m_get_partitions_statistics_req(self, a: Any) -> hms.PartitionsStatsResult:
        req = a.request
        tbl = self._table(req.dbName, req.tblName)
        result: dict[str, list[hms.ColumnStatisticsObj]] = {}
        for raw in req.partNames or []:
            part_name = self._name(tbl, self._values_of_name(tbl, raw))
            stats = self.store.column_stats
            objs = [decode(hms.ColumnStatisticsObj, data) for col in req.colNames or []
                    if (data := stats.get((req.dbName, req.tblName, part_name, col.lower()))) is not None]
            if objs:
                result[raw] = objs
        return hms.PartitionsStatsResult(partStats=result)

    def _m_delete_table_column_statistics(self, a: Any) -> bool:
        self._table(a.db_name, a.tbl_name)
        keys = [k for k in self.store.column_stats if k[:3] == (a.db_name, a.tbl_name, "")
                and (a.col_name is None or k[3] == a.col_name.lower())]
        if not keys:
            raise hms.NoSuchObjectException(message=f"no column statistics of {a.db_name}.{a.tbl_name}")
        for k in keys:
            del self.store.column_stats[k]
        return True

    def _m_delete_partition_column_statistics(self, a: Any) -> bool:
        tbl = self._table(a.db_name, a.tbl_name)
        part_name = self._name(tbl, self._values_of_name(tbl, a.part_name))
        keys = [k for k in self.store.column_stats if k[:3] == (a.db_name, a.tbl_name, part_name)
                and (a.col_name is None or k[3] == a.col_name.lower())]
        if not keys:
            raise hms.NoSuchObjectException(message=f"no column statistics of {a.db_name}.{a.tbl_name} {part_name}")
        for k in keys:
            del self.store.column_stats[k]
        return True

    # ------------------------------------------------------------ functions

    def _function(self, db: str, name: str) -> hms.Function:
        fn = self.store.function(db.lower(), name.lower())
        if fn is None:
            raise hms.NoSuchObjectException(message=f"Function {db}.{name} does not exist")
        return fn

    def _check_function(self, fn: hms.Function) -> None:
        """The catalog's rules for a function hold for Spark's functions too."""
        model = codec.to_function(self.name, fn)
        check_name(model.name, "function")
        self.catalog.check_function(model)

    def _m_get_function(self, a: Any) -> hms.Function:
        return self._function(a.dbName, a.funcName)

    def _m_get_functions(self, a: Any) -> list[str]:
        match = _hive_pattern(a.pattern)
        return [f for f in self.catalog.list_functions(a.dbName) if match(f)]

    def _m_get_all_functions(self, a: Any) -> hms.GetAllFunctionsResponse:
        return hms.GetAllFunctionsResponse(functions=[
            self._function(db, f) for db in self.store.database_names() for f in self.store.function_names(db)])

    def _m_create_function(self, a: Any) -> None:
        fn: hms.Function = copy.deepcopy(a.func)
        if not fn or not fn.functionName or not fn.dbName:
            raise hms.InvalidObjectException(message="a function needs a name and a database")
        fn.functionName, fn.dbName = fn.functionName.lower(), fn.dbName.lower()
        self._database(fn.dbName)
        if not fn.createTime:
            fn.createTime = int(time.time())
        self._check_function(fn)
        if self.store.function(fn.dbName, fn.functionName) is not None:
            raise hms.AlreadyExistsException(
                message=f"function {self.name}.{fn.dbName}.{fn.functionName} already exists")
        self.store.put_function(fn)

    def _m_drop_function(self, a: Any) -> None:
        self._function(a.dbName, a.funcName)
        self.store.drop_function(a.dbName.lower(), a.funcName.lower())

    def _m_alter_function(self, a: Any) -> None:
        self._function(a.dbName, a.funcName)
        fn: hms.Function = copy.deepcopy(a.newFunc)
        key = (a.dbName.lower(), a.funcName.lower())
        if (fn.dbName or key[0]).lower() != key[0] or (fn.functionName or key[1]).lower() != key[1]:
            raise hms.InvalidOperationException(
                message=f"catalogd: renaming function {key[0]}.{key[1]} is not supported on memory catalog "
                        f"{self.name}")
        fn.dbName, fn.functionName = key
        self._check_function(fn)
        self.store.put_function(fn)
