"""ThriftHiveMetastore answers for a memory catalog, which has no metastore behind it.

The endpoint keeps the HMS objects clients wrote (encoded, so nothing mutable is
shared) and keeps the ``MemoryCatalog`` in step through the codec, so the catalogd
API and CLI see what Spark made and Spark sees what the API made. Files of managed
tables live under one scratch warehouse directory; nothing outside it is ever deleted.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from hmsclient.genthrift.hive_metastore import ttypes as hms
from thrift.protocol import TBinaryProtocol
from thrift.TSerialization import deserialize, serialize

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.memory import MemoryCatalog
from catalogd.errors import (
    AlreadyExistsError,
    CatalogError,
    DatabaseNotEmptyError,
    InvalidArgumentError,
    NotFoundError,
)
from catalogd.hms.partition_filter import FilterError, PartitionFilter
from catalogd.model import Database, DatabaseUpdate, Table, TableKind, TableUpdate, ViewUpdate

logger = logging.getLogger(__name__)

__all__ = ["MemoryMetastore"]

T = TypeVar("T")
_PROTOCOL = TBinaryProtocol.TBinaryProtocolFactory()

#: Characters Hive escapes in a partition directory name (FileUtils.escapePathName).
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^')
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _encode(obj: Any) -> bytes:
    return bytes(serialize(obj, _PROTOCOL))


def _decode(kind: type[T], data: bytes) -> T:
    return deserialize(kind(), data, _PROTOCOL)


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


def _path_of(location: str | None) -> Path | None:
    """The local path of a ``file:`` URI or plain path; None for anything else."""
    if not location:
        return None
    parsed = urlparse(location)
    if parsed.scheme in ("", "file") and (parsed.netloc in ("", "localhost")):
        return Path(unquote(parsed.path))
    return None


def _uri(path: Path) -> str:
    return f"file://{path}"


def _is_external(tbl: hms.Table) -> bool:
    return (tbl.tableType == codec.EXTERNAL_TABLE
            or str((tbl.parameters or {}).get("EXTERNAL", "")).upper() == "TRUE")


def _limit(items: list[T], max_parts: int | None) -> list[T]:
    return items if max_parts is None or max_parts < 0 else items[:max_parts]


class MemoryMetastore:
    """ThriftHiveMetastore answers for one memory catalog."""

    def __init__(self, catalog: MemoryCatalog, warehouse: Path, *, root: Path | None = None) -> None:
        """``warehouse``: ``<data-dir>/scratch-warehouse/<catalog>``; ``root`` (default its parent's
        parent, the data dir): ``close()`` removes ``warehouse`` only when it lies inside ``root``."""
        self.catalog = catalog
        self.name = catalog.name
        self.warehouse = Path(os.path.abspath(warehouse))
        self._root = Path(os.path.abspath(root)) if root is not None else self.warehouse.parent.parent
        self._lock = threading.RLock()
        self._databases: dict[str, bytes] = {}
        #: (db, table) -> the encoded hms.Table, and the catalog's model table right after our last write.
        self._tables: dict[tuple[str, str], bytes] = {}
        self._seen: dict[tuple[str, str], Table] = {}
        #: (db, table) -> {partition values: encoded hms.Partition}
        self._partitions: dict[tuple[str, str], dict[tuple[str, ...], bytes]] = {}
        self._functions: dict[tuple[str, str], bytes] = {}
        #: (db, table, partition name or "", column) -> encoded ColumnStatisticsObj
        self._col_stats: dict[tuple[str, str, str, str], bytes] = {}
        self._handlers: dict[str, Callable[[Any], Any]] = {
            name[len("_m_"):]: getattr(self, name) for name in dir(self) if name.startswith("_m_")
        }

    # ------------------------------------------------------------ entry points

    def call(self, method: str, args: Any) -> Any:
        handler = self._handlers.get(method)
        if handler is None:
            raise hms.MetaException(message=f"catalogd: {method} is not supported on memory catalog {self.name}")
        with self._lock:
            try:
                return handler(args)
            except CatalogError as e:
                raise self._hms_error(e) from None

    def close(self) -> None:
        """Daemon stop: the catalog's scratch warehouse goes (only it, and only inside the data dir)."""
        with self._lock:
            warehouse = self.warehouse
            if warehouse.is_symlink() or not warehouse.is_dir():
                return
            real = warehouse.resolve()
            if not _strictly_inside(real, self._root.resolve()):
                logger.warning("memory catalog %s: not removing %s, which is outside %s", self.name, real, self._root)
                return
            shutil.rmtree(real, ignore_errors=True)
            logger.info("memory catalog %s: removed its scratch warehouse %s", self.name, real)

    @staticmethod
    def _hms_error(e: CatalogError) -> Exception:
        if isinstance(e, NotFoundError):
            return hms.NoSuchObjectException(message=str(e))
        if isinstance(e, AlreadyExistsError):
            return hms.AlreadyExistsException(message=str(e))
        if isinstance(e, DatabaseNotEmptyError):
            return hms.InvalidOperationException(message=str(e))
        if isinstance(e, InvalidArgumentError):
            return hms.InvalidObjectException(message=str(e))
        return hms.MetaException(message=str(e))

    # ------------------------------------------------------------ files

    def _db_dir(self, db: str) -> Path:
        return self.warehouse / f"{db.lower()}.db"

    def _deletable(self, location: str | None, min_depth: int) -> Path | None:
        """The real directory to delete for ``location``, or None: it must lie strictly inside the
        warehouse (symlinks and ``..`` resolved first), ``min_depth`` levels down at least."""
        path = _path_of(location)
        if path is None or not path.is_absolute():
            return None
        real = path.resolve()
        warehouse = self.warehouse.resolve()
        if not _strictly_inside(real, warehouse) or len(real.relative_to(warehouse).parts) < min_depth:
            if real.exists():
                logger.warning("memory catalog %s: not deleting %s (outside its warehouse %s)",
                               self.name, location, warehouse)
            return None
        return real

    def _delete(self, location: str | None, min_depth: int = 2) -> None:
        real = self._deletable(location, min_depth)
        if real is not None and real.is_dir():
            shutil.rmtree(real, ignore_errors=True)
        elif real is not None and real.is_file():
            real.unlink(missing_ok=True)

    def _make_dir(self, location: str | None) -> None:
        path = _path_of(location)
        if path is not None and path.is_absolute() and _strictly_inside(path.resolve(), self.warehouse.resolve()):
            path.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ databases

    def _database(self, name: str) -> hms.Database:
        try:
            model = self.catalog.get_database(name)
        except NotFoundError:
            self._databases.pop(name, None)
            raise hms.NoSuchObjectException(message=f"database {name} does not exist") from None
        stored = self._databases.get(name)
        db = _decode(hms.Database, stored) if stored is not None else codec.to_hms_database(model, None)
        db.name = model.name
        db.description = model.comment
        db.parameters = dict(model.properties)
        db.locationUri = _uri(self._db_dir(name))
        return db

    def _m_get_database(self, a: Any) -> hms.Database:
        return self._database(a.name)

    def _m_get_databases(self, a: Any) -> list[str]:
        match = _hive_pattern(a.pattern)
        return [d for d in self.catalog.list_databases() if match(d)]

    def _m_get_all_databases(self, a: Any) -> list[str]:
        return self.catalog.list_databases()

    def _m_create_database(self, a: Any) -> None:
        db: hms.Database = copy.deepcopy(a.database)
        if not db or not db.name:
            raise hms.InvalidObjectException(message="a database needs a name")
        db.name = db.name.lower()
        location = _uri(self._db_dir(db.name))
        self.catalog.create_database(Database(name=db.name, comment=db.description or None, location=location,
                                              properties=dict(db.parameters or {}), owner=db.ownerName))
        db.locationUri = location
        self._databases[db.name] = _encode(db)
        self._db_dir(db.name).mkdir(parents=True, exist_ok=True)

    def _m_alter_database(self, a: Any) -> None:
        current = self._database(a.dbname)
        new: hms.Database = a.db
        params = dict(new.parameters or {})
        old_params = dict(current.parameters or {})
        self.catalog.alter_database(a.dbname, DatabaseUpdate(
            comment=new.description if new.description != current.description else None,
            set_properties={k: v for k, v in params.items() if old_params.get(k) != v},
            unset_properties=[k for k in old_params if k not in params]))
        stored = copy.deepcopy(new)
        stored.name, stored.locationUri = current.name, current.locationUri
        self._databases[current.name] = _encode(stored)

    def _m_drop_database(self, a: Any) -> None:
        name = a.name
        self._database(name)
        if name == self.catalog.default_database:  # refused before anything is dropped, as HMS does
            raise hms.MetaException(message=f"Can not drop {name} database")
        tables = self._table_names(name)
        if tables and not a.cascade:
            raise hms.InvalidOperationException(
                message=f"Database {name} is not empty. One or more tables exist.")
        for table in tables:
            self._drop_table(name, table, delete_data=bool(a.deleteData))
        for key in [k for k in self._functions if k[0] == name]:
            del self._functions[key]
        self.catalog.drop_database(name, cascade=True)
        self._databases.pop(name, None)
        if a.deleteData:
            self._delete(_uri(self._db_dir(name)), min_depth=1)

    # ------------------------------------------------------------ tables

    def _table_names(self, db: str) -> list[str]:
        self._database(db)
        return sorted({*self.catalog.list_tables(db), *self.catalog.list_views(db)})

    def _forget(self, key: tuple[str, str], stored: bytes) -> None:
        """A table dropped (or renamed) through the catalogd API: forget it; a drop takes its managed files."""
        tbl = _decode(hms.Table, stored)
        self._tables.pop(key, None)
        self._seen.pop(key, None)
        parts = self._partitions.pop(key, {})
        self._drop_stats(key)
        if _is_external(tbl) or tbl.tableType == codec.VIRTUAL_VIEW:
            return
        # Renamed through the API: the table under its new name still uses these files.
        in_use = set()
        try:
            for name in self.catalog.list_tables(key[0]):
                location = self.catalog.get_table(key[0], name).location
                path = _path_of(location)
                if path is not None:
                    in_use.add(path.resolve())
        except CatalogError:
            pass
        for location in [*(p.sd.location for p in map(lambda b: _decode(hms.Partition, b), parts.values())
                           if p.sd), tbl.sd.location if tbl.sd else None]:
            path = _path_of(location)
            if path is not None and any(path.resolve() == u or _strictly_inside(path.resolve(), u) for u in in_use):
                continue
            self._delete(location)

    def _table(self, db: str, name: str) -> hms.Table:
        key = (db, name)
        try:
            model = self.catalog.get_table(db, name)
        except NotFoundError:
            stored = self._tables.get(key)
            if stored is not None:
                self._forget(key, stored)
            self._database(db)
            raise hms.NoSuchObjectException(message=f"{db}.{name} table not found") from None
        stored = self._tables.get(key)
        if stored is None:
            tbl = self._from_model(model)
            return tbl
        seen = self._seen.get(key)
        if seen is not None and (seen.created, seen.kind, seen.format, seen.location) != (
                model.created, model.kind, model.format, model.location):
            # Dropped and made again through the catalogd API: the stored object is another table's.
            # Its files may be the new table's too, so nothing is deleted here.
            self._tables.pop(key, None)
            self._seen.pop(key, None)
            self._partitions.pop(key, None)
            self._drop_stats(key)
            return self._from_model(model)
        tbl = _decode(hms.Table, stored)
        if seen is not None and seen != model:
            # Changed through the catalogd API since: carry the change into the HMS object.
            tbl = self._merge(tbl, seen, model)
            self._tables[key] = _encode(tbl)
            self._seen[key] = model
        return tbl

    def _from_model(self, model: Table) -> hms.Table:
        if model.kind is TableKind.VIEW:
            tbl = codec.to_hms_view(model, model.owner)
        else:
            tbl = codec.to_hms_table(model, model.owner)
            if tbl.sd and tbl.sd.location and tbl.sd.location.startswith("memory:"):
                tbl.sd.location = _uri(self._db_dir(model.database) / model.name)
        if model.created:
            tbl.createTime = model.created
        if model.kind is TableKind.MANAGED and tbl.sd is not None:
            # As HMS makes a managed table's directory: Spark refuses to read a path that is not there.
            self._make_dir(tbl.sd.location)
        return tbl

    @staticmethod
    def _merge(tbl: hms.Table, seen: Table, model: Table) -> hms.Table:
        params = dict(tbl.parameters or {})
        for key in seen.properties:
            if key not in model.properties:
                params.pop(key, None)
        params.update(model.properties)
        if model.comment is not None:
            params["comment"] = model.comment
        tbl.parameters = params
        if model.columns != seen.columns and codec.spark_schema.PROVIDER not in params and tbl.sd is not None:
            tbl.sd.cols = codec.field_schemas(model.columns)
        return tbl

    def _remember(self, tbl: hms.Table) -> None:
        key = (tbl.dbName, tbl.tableName)
        self._tables[key] = _encode(tbl)
        self._seen[key] = self.catalog.get_table(*key)

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
                if match(t) and (not a.tableType or self._table(a.db_name, t).tableType == a.tableType)]

    def _m_get_table_meta(self, a: Any) -> list[hms.TableMeta]:
        db_match, tbl_match = _hive_pattern(a.db_patterns), _hive_pattern(a.tbl_patterns)
        types = set(a.tbl_types or [])
        metas = []
        for db in self.catalog.list_databases():
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
        model = codec.to_table(self.name, tbl)
        if view:
            self.catalog.create_view(model)
        else:
            self.catalog.create_table(model)
        self._partitions[(tbl.dbName, tbl.tableName)] = {}
        self._remember(tbl)
        if not view and not _is_external(tbl):
            self._make_dir(tbl.sd.location)

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
        if new.tableName != name:
            self._rename(old, new)
            name = new.tableName
        model_old = self.catalog.get_table(db, name)
        model_new = codec.to_table(self.name, new)
        if old.tableType == codec.VIRTUAL_VIEW:
            self.catalog.alter_view(db, name, ViewUpdate(
                query=new.viewOriginalText, expanded_text=new.viewExpandedText, columns=model_new.columns,
                comment=model_new.comment if model_new.comment != model_old.comment else None,
                set_properties={k: v for k, v in model_new.properties.items() if model_old.properties.get(k) != v},
                unset_properties=[k for k in model_old.properties if k not in model_new.properties]))
        else:
            old_names = [c.name.lower() for c in model_old.columns]
            added = model_new.columns[len(old_names):]
            if [c.name.lower() for c in model_new.columns[:len(old_names)]] != old_names:
                # The MemoryCatalog only adds columns; the HMS object keeps what the client wrote.
                logger.info("memory catalog %s: %s.%s columns changed beyond additions; the catalogd API keeps "
                            "the earlier columns", self.name, db, name)
                added = []
            self.catalog.alter_table(db, name, TableUpdate(
                comment=model_new.comment if model_new.comment != model_old.comment else None,
                set_properties={k: v for k, v in model_new.properties.items() if model_old.properties.get(k) != v},
                unset_properties=[k for k in model_old.properties if k not in model_new.properties],
                add_columns=added))
            if model_new.statistics != model_old.statistics:
                self.catalog.set_statistics(db, name, model_new.statistics)
        if cascade and new.sd is not None:
            key = (db, name)
            for values, data in self._partitions.get(key, {}).items():
                part = _decode(hms.Partition, data)
                if part.sd is not None:
                    part.sd.cols = copy.deepcopy(new.sd.cols)
                self._partitions[key][values] = _encode(part)
        self._remember(new)

    def _rename(self, old: hms.Table, new: hms.Table) -> None:
        """As HMS: a managed table in its default place moves its directory (and partitions) along."""
        db, name, new_name = old.dbName, old.tableName, new.tableName
        self.catalog.rename_table(db, name, new_name)
        key, new_key = (db, name), (db, new_name)
        parts = self._partitions.pop(key, {})
        self._tables.pop(key, None)
        self._seen.pop(key, None)
        for (d, t, p, c) in [k for k in self._col_stats if k[:2] == key]:
            self._col_stats[(d, new_name, p, c)] = self._col_stats.pop((d, t, p, c))
        old_location = old.sd.location if old.sd else None
        default_old = f"{self._database(db).locationUri}/{name}"
        default_new = f"{self._database(db).locationUri}/{new_name}"
        moved = (old.tableType == codec.MANAGED_TABLE and not _is_external(old)
                 and old_location == default_old and new.sd is not None
                 and new.sd.location in (None, old_location, default_new))
        if moved:
            src, dst = _path_of(default_old), _path_of(default_new)
            assert src is not None and dst is not None
            if self._deletable(default_old, 2) is not None and src.is_dir() and not dst.exists():
                src.rename(dst)
            assert new.sd is not None
            new.sd.location = default_new
            if codec.spark_path(new) in (old_location, default_new):
                codec.set_spark_path(new, default_new)
            for values, data in list(parts.items()):
                part = _decode(hms.Partition, data)
                if part.sd and part.sd.location and part.sd.location.startswith(default_old + "/"):
                    part.sd.location = default_new + part.sd.location[len(default_old):]
                part.tableName = new_name
                parts[values] = _encode(part)
        else:
            for values, data in list(parts.items()):
                part = _decode(hms.Partition, data)
                part.tableName = new_name
                parts[values] = _encode(part)
        self._partitions[new_key] = parts

    def _m_alter_table(self, a: Any) -> None:
        self._alter_table(a.dbname, a.tbl_name, a.new_tbl)

    def _m_alter_table_with_environment_context(self, a: Any) -> None:
        context = (a.environment_context.properties or {}) if a.environment_context else {}
        self._alter_table(a.dbname, a.tbl_name, a.new_tbl, cascade=context.get("CASCADE", "").lower() == "true")

    def _m_alter_table_with_cascade(self, a: Any) -> None:
        self._alter_table(a.dbname, a.tbl_name, a.new_tbl, cascade=bool(a.cascade))

    def _drop_table(self, db: str, name: str, delete_data: bool) -> None:
        tbl = self._table(db, name)
        key = (db, name)
        parts = [_decode(hms.Partition, b) for b in self._partitions.get(key, {}).values()]
        if tbl.tableType == codec.VIRTUAL_VIEW:
            self.catalog.drop_view(db, name)
        else:
            self.catalog.drop_table(db, name)
        self._tables.pop(key, None)
        self._seen.pop(key, None)
        self._partitions.pop(key, None)
        self._drop_stats(key)
        if delete_data and tbl.tableType != codec.VIRTUAL_VIEW and not _is_external(tbl):
            for part in parts:
                self._delete(part.sd.location if part.sd else None)
            self._delete(tbl.sd.location if tbl.sd else None)

    def _m_drop_table(self, a: Any) -> None:
        self._drop_table(a.dbname, a.name, bool(a.deleteData))

    def _m_drop_table_with_environment_context(self, a: Any) -> None:
        self._drop_table(a.dbname, a.name, bool(a.deleteData))

    # ------------------------------------------------------------ partitions

    def _partition_table(self, db: str, name: str) -> tuple[hms.Table, dict[tuple[str, ...], bytes]]:
        tbl = self._table(db, name)
        return tbl, self._partitions.setdefault((db, name), {})

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
        return _decode(hms.Partition, data)

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
        if not part.sd.location and tbl.sd and tbl.sd.location:
            part.sd.location = f"{tbl.sd.location}/{self._name(tbl, values)}"
            if not _is_external(tbl):
                self._make_dir(part.sd.location)
        if not part.createTime:
            part.createTime = int(time.time())
        part.parameters = dict(part.parameters or {})
        parts[values] = _encode(part)
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
        parts[values] = _encode(part)

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
        parts[tuple(new.values)] = _encode(new)

    def _drop_partition(self, db: str, name: str, values: tuple[str, ...], delete_data: bool) -> hms.Partition:
        tbl, parts = self._partition_table(db, name)
        data = parts.pop(values, None)
        if data is None:
            raise hms.NoSuchObjectException(message=f"partition {list(values)} of {db}.{name} does not exist")
        part = _decode(hms.Partition, data)
        part_name = self._name(tbl, values)
        for key in [k for k in self._col_stats if k[:3] == (db, name, part_name)]:
            del self._col_stats[key]
        if delete_data and not _is_external(tbl):
            self._delete(part.sd.location if part.sd else None)
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
        chosen = [_decode(hms.Partition, data) for values, data in self._sorted(tbl, parts)
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
                found.append(_decode(hms.Partition, parts[values]))
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

    def _drop_stats(self, key: tuple[str, str]) -> None:
        for k in [k for k in self._col_stats if k[:2] == key]:
            del self._col_stats[k]

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
            self._col_stats[(db, name, part_name, obj.colName.lower())] = _encode(obj)
        return True

    def _m_update_table_column_statistics(self, a: Any) -> bool:
        return self._update_stats(a.stats_obj, True)

    def _m_update_partition_column_statistics(self, a: Any) -> bool:
        return self._update_stats(a.stats_obj, False)

    def _stats(self, db: str, name: str, part_name: str, col: str) -> hms.ColumnStatisticsObj:
        data = self._col_stats.get((db, name, part_name, col.lower()))
        if data is None:
            raise hms.NoSuchObjectException(message=f"no statistics of column {col} of {db}.{name} {part_name}")
        return _decode(hms.ColumnStatisticsObj, data)

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
        found = [_decode(hms.ColumnStatisticsObj, data) for col in req.colNames or []
                 if (data := self._col_stats.get((req.dbName, req.tblName, "", col.lower()))) is not None]
        return hms.TableStatsResult(tableStats=found)

    def _m_get_partitions_statistics_req(self, a: Any) -> hms.PartitionsStatsResult:
        req = a.request
        tbl = self._table(req.dbName, req.tblName)
        result: dict[str, list[hms.ColumnStatisticsObj]] = {}
        for raw in req.partNames or []:
            part_name = self._name(tbl, self._values_of_name(tbl, raw))
            objs = [_decode(hms.ColumnStatisticsObj, data) for col in req.colNames or []
                    if (data := self._col_stats.get((req.dbName, req.tblName, part_name, col.lower()))) is not None]
            if objs:
                result[raw] = objs
        return hms.PartitionsStatsResult(partStats=result)

    def _m_delete_table_column_statistics(self, a: Any) -> bool:
        self._table(a.db_name, a.tbl_name)
        keys = [k for k in self._col_stats if k[:3] == (a.db_name, a.tbl_name, "")
                and (a.col_name is None or k[3] == a.col_name.lower())]
        if not keys:
            raise hms.NoSuchObjectException(message=f"no column statistics of {a.db_name}.{a.tbl_name}")
        for k in keys:
            del self._col_stats[k]
        return True

    def _m_delete_partition_column_statistics(self, a: Any) -> bool:
        tbl = self._table(a.db_name, a.tbl_name)
        part_name = self._name(tbl, self._values_of_name(tbl, a.part_name))
        keys = [k for k in self._col_stats if k[:3] == (a.db_name, a.tbl_name, part_name)
                and (a.col_name is None or k[3] == a.col_name.lower())]
        if not keys:
            raise hms.NoSuchObjectException(message=f"no column statistics of {a.db_name}.{a.tbl_name} {part_name}")
        for k in keys:
            del self._col_stats[k]
        return True

    # ------------------------------------------------------------ functions

    def _function(self, db: str, name: str) -> hms.Function:
        key = (db.lower(), name.lower())
        try:
            model = self.catalog.get_function(*key)
        except NotFoundError:
            self._functions.pop(key, None)
            raise hms.NoSuchObjectException(message=f"Function {db}.{name} does not exist") from None
        stored = self._functions.get(key)
        if stored is not None:
            fn = _decode(hms.Function, stored)
            if codec.to_function(self.name, fn).class_name == model.class_name:
                return fn
        fn = codec.to_hms_function(model, model.owner)
        if model.created:
            fn.createTime = model.created
        return fn

    def _m_get_function(self, a: Any) -> hms.Function:
        return self._function(a.dbName, a.funcName)

    def _m_get_functions(self, a: Any) -> list[str]:
        match = _hive_pattern(a.pattern)
        return [f for f in self.catalog.list_functions(a.dbName) if match(f)]

    def _m_get_all_functions(self, a: Any) -> hms.GetAllFunctionsResponse:
        return hms.GetAllFunctionsResponse(functions=[
            self._function(db, f) for db in self.catalog.list_databases() for f in self.catalog.list_functions(db)])

    def _m_create_function(self, a: Any) -> None:
        fn: hms.Function = copy.deepcopy(a.func)
        if not fn or not fn.functionName or not fn.dbName:
            raise hms.InvalidObjectException(message="a function needs a name and a database")
        fn.functionName, fn.dbName = fn.functionName.lower(), fn.dbName.lower()
        self._database(fn.dbName)
        if not fn.createTime:
            fn.createTime = int(time.time())
        self.catalog.create_function(codec.to_function(self.name, fn))
        self._functions[(fn.dbName, fn.functionName)] = _encode(fn)

    def _m_drop_function(self, a: Any) -> None:
        self._function(a.dbName, a.funcName)
        self.catalog.drop_function(a.dbName.lower(), a.funcName.lower())
        self._functions.pop((a.dbName.lower(), a.funcName.lower()), None)

    def _m_alter_function(self, a: Any) -> None:
        self._function(a.dbName, a.funcName)
        fn: hms.Function = copy.deepcopy(a.newFunc)
        key = (a.dbName.lower(), a.funcName.lower())
        if (fn.dbName or key[0]).lower() != key[0] or (fn.functionName or key[1]).lower() != key[1]:
            raise hms.InvalidOperationException(
                message=f"catalogd: renaming function {key[0]}.{key[1]} is not supported on memory catalog "
                        f"{self.name}")
        fn.dbName, fn.functionName = key
        self.catalog.alter_function(*key, codec.to_function(self.name, fn))
        self._functions[key] = _encode(fn)


def _strictly_inside(path: Path, parent: Path) -> bool:
    try:
        return path != parent and bool(path.relative_to(parent).parts)
    except ValueError:
        return False


