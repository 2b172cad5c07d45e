"""Drops a client asks the endpoint for that catalogd makes itself instead of relaying them.

A drop that deletes files goes by catalogd's deletion rules (``HiveSession.drop_table`` and
``drop_partition``: files deleted only where allowed); a dynamic table's drop stops its job
first (as ``dt drop`` does); a database dropped with cascade has its open stages aborted
first. A drop that deletes nothing is relayed as it is, but for a database dropped with cascade and
deleteData=false: its tables are unregistered with deleteData=false first, so no metastore
deletes a managed table's files on a keep-data drop. Partitions dropped by name
(``drop_partition_by_name*``, ``drop_partitions_req``) go by ``drop_partition``'s rule. Hive 3/4's
drops (``drop_table_req``, ``drop_partition_req``, ``drop_database_req``) are made as their Hive 2.3
equivalents (``downgrade``); a truncate (``truncate_table*``) is relayed only when every directory
it would empty is catalogd's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from catalogd.catalog.base import Catalog
from catalogd.catalog.relay_target import RelayTarget
from catalogd.errors import CatalogError, InvalidArgumentError, NotFoundError, PermissionDeniedError, UnsupportedError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import downgrade
from catalogd.hms.policy import DROP_TABLE, CurrentTable, is_dynamic
from catalogd.hms.refused import Refused, meta_error
from catalogd.hms.rules import Rule, rule_of
from catalogd.manager import CatalogManager, parse_stage_id
from catalogd.names import NamespacePath, ObjectPath

logger = logging.getLogger(__name__)

__all__ = ["Drops"]

_DROP_PARTITION = frozenset({"drop_partition", "drop_partition_with_environment_context"})
_DROP_PARTITION_BY_NAME = frozenset({"drop_partition_by_name", "drop_partition_by_name_with_environment_context"})
#: Hive 3/4's truncate: deletes a table's (or its named partitions') files, keeps the table.
_TRUNCATE = frozenset({"truncate_table", "truncate_table_req"})
#: One decoded call on the catalog's metastore (method, args) -> its result struct.
Upstream = Callable[[str, Any], Any]


class Drops:
    """Makes the drops catalogd makes itself.

    Args:
        manager: drops tables and databases through their catalogs.
        drop_dynamic: drops a dynamic table as ``dt drop`` does; None: as a table.
    """

    def __init__(self, manager: CatalogManager, drop_dynamic: Callable[[ObjectPath], None] | None = None) -> None:
        self.manager = manager
        self._drop_dynamic = drop_dynamic

    def drop(self, method: str, args: Any, catalog: Catalog, target: RelayTarget, database: Callable[[str], str],
             current: CurrentTable, upstream: Upstream | None = None) -> Any | None:
        """Make the drop ``method`` asks for: its result struct; None: not one catalogd makes (relay it).

        Args:
            database: a client's database name as the catalog knows it.
            current: reads a table as the metastore has it now.
            upstream: one decoded call on the catalog's metastore (method, args) -> its result
                struct; None: the drops that need one are relayed (unit tests of the others).
        """
        if method in _TRUNCATE:
            self._check_truncate(method, args, target, database, current, upstream)
            return None  # judged: relayed as it is
        if method in downgrade.EQUIVALENTS and rule_of(method) is Rule.DROP:
            # A Hive 3/4 drop (drop_table_req, ...) is made as its Hive 2.3 equivalent is.
            said = downgrade.as_hive2(method, args)
            if said is None:
                raise meta_error(f"catalogd: {method} refused: what it asks beyond its Hive 2.3 equivalent (a "
                                 "soft delete, a table dropped without its partitions) is not a drop catalogd "
                                 "can make by its deletion rules", UnsupportedError)
            made = self._drop(said[0], said[1], catalog, target, database, current, upstream)
            return downgrade.result_of(method, args, made) if made is not None else None
        return self._drop(method, args, catalog, target, database, current, upstream)

    def _drop(self, method: str, args: Any, catalog: Catalog, target: RelayTarget, database: Callable[[str], str],
              current: CurrentTable, upstream: Upstream | None = None) -> Any | None:
        if method in DROP_TABLE:
            name = database(args.dbname)
            path = ObjectPath(catalog.name, name, args.name.lower())
            purge = _purge(getattr(args, "environment_context", None))
            try:
                found = current(name, args.name)
            except Refused:
                found = None
            if found is None:
                raise Refused(hms.NoSuchObjectException(message=f"{name}.{args.name} table not found"))
            if self._drop_dynamic is not None and is_dynamic(found.parameters):
                self._drop_dynamic(path)
            elif not args.deleteData:
                return None  # the metastore deletes nothing: relayed as it is
            else:
                self.manager.drop_table(path, ignore_if_not_exists=False, purge=purge)
            return _result(method)
        if method in _DROP_PARTITION and args.deleteData:
            target.drop_partition(database(args.db_name), args.tbl_name.lower(), list(args.part_vals or []),
                                  purge=_purge(getattr(args, "environment_context", None)))
            return _result(method, success=True)
        if method in _DROP_PARTITION_BY_NAME and args.deleteData:
            # The same rule as drop_partition: by name is only another spelling of its values.
            name = database(args.db_name)
            values = _values_of_name(_table(current, name, args.tbl_name), args.part_name)
            target.drop_partition(name, args.tbl_name.lower(), values,
                                  purge=_purge(getattr(args, "environment_context", None)))
            return _result(method, success=True)
        if method == "drop_partitions_req":
            return self._drop_partitions(args.req, target, database, current, upstream)
        if method == "drop_database":
            name = database(args.name)
            if args.cascade:
                _abort_stages(catalog, name)
            if not args.deleteData and upstream is not None:
                return self._drop_database_keeping_data(name, bool(args.cascade), upstream)
            self.manager.drop_database(NamespacePath(catalog.name, name), ignore_if_not_exists=False,
                                       cascade=bool(args.cascade))
            return _result(method)
        return None


    def _check_truncate(self, method: str, args: Any, target: RelayTarget, database: Callable[[str], str],
                        current: CurrentTable, upstream: Upstream | None) -> None:
        """Refuse a truncate unless every directory it would empty is catalogd's: a managed table's
        whose files a drop of it (or of the named partitions) would delete."""
        request = args.req if method == "truncate_table_req" else args
        if request is None:
            raise meta_error(f"catalogd: {method} without a request refused", InvalidArgumentError)
        name, table = database(request.dbName), str(request.tableName or "").lower()
        tbl = _table(current, name, table)
        parts = None
        if request.partNames:
            if upstream is None:
                raise meta_error(f"catalogd: {method} of partitions refused: they cannot be read", UnsupportedError)
            parts = _value(upstream("get_partitions_by_names", ThriftHiveMetastore.get_partitions_by_names_args(
                name, table, list(request.partNames)))) or []
        with target.files():
            why = target.truncation_blocker(tbl, parts)
        if why:
            raise meta_error(f"catalogd: {method} of table {name}.{table} refused: {why}", PermissionDeniedError)

    def _drop_partitions(self, req: Any, target: RelayTarget, database: Callable[[str], str], current: CurrentTable,
                         upstream: Upstream | None) -> Any | None:
        """drop_partitions_req: with deleteData (its default), each partition by drop_partition's rule."""
        if req.deleteData is not None and not req.deleteData:
            return None  # the metastore deletes nothing: relayed as it is
        if req.parts is None or req.parts.names is None:
            # Which partitions an expression names is the metastore's to tell; their files are not.
            raise meta_error("catalogd: drop_partitions_req with deleteData and partitions given by expression "
                             "refused: catalogd cannot judge which directories it would delete; drop them by "
                             "name, or with deleteData=false", UnsupportedError)
        name, table = database(req.dbName), req.tblName.lower()
        tbl = _table(current, name, req.tblName)
        wanted = [_values_of_name(tbl, n) for n in req.parts.names]
        dropped = []
        purge = _purge(req.environmentContext)
        for values in wanted:
            part = None
            if req.needResult and upstream is not None:
                part = _value(upstream("get_partition", ThriftHiveMetastore.get_partition_args(name, table, values)))
            try:
                target.drop_partition(name, table, values, purge=purge)
            except NotFoundError:
                if req.ifExists is None or req.ifExists:
                    continue
                raise
            if part is not None:
                dropped.append(part)
        return _result("drop_partitions_req",
                       success=hms.DropPartitionsResult(partitions=dropped if req.needResult else None))

    def _drop_database_keeping_data(self, name: str, cascade: bool, upstream: Upstream) -> Any | None:
        """drop_database(deleteData=false): every table unregistered with deleteData=false first
        (whatever the metastore would do with a cascade), then the database relayed as asked."""
        if cascade:
            tables = _value(upstream("get_all_tables", ThriftHiveMetastore.get_all_tables_args(name))) or []
            for table in tables:
                _value(upstream("drop_table", ThriftHiveMetastore.drop_table_args(name, table, False)))
        return None


def _value(result: Any) -> Any:
    """A result struct's value; the HMS exception it carries is the client's answer."""
    failure = next((v for k, v in vars(result).items() if k != "success" and v is not None), None)
    if failure is not None:
        raise Refused(failure)
    return getattr(result, "success", None)  # a void method's result has none


def _table(current: CurrentTable, database: str, table: str) -> Any:
    try:
        found = current(database, table)
    except Refused:
        found = None
    if found is None:
        raise Refused(hms.NoSuchObjectException(message=f"{database}.{table} table not found"))
    return found


def _values_of_name(tbl: Any, part_name: str) -> list[str]:
    """A partition name (``k=v/k2=v2``, path-escaped) as its values, in the table's key order."""
    pairs = [p.split("=", 1) for p in part_name.split("/")]
    keys = [k.name.lower() for k in tbl.partitionKeys or []]
    if any(len(p) != 2 for p in pairs) or [_unescape(p[0]).lower() for p in pairs] != keys:
        raise meta_error(f"Invalid partition name {part_name!r} for {tbl.dbName}.{tbl.tableName}")
    return [_unescape(p[1]) for p in pairs]


def _unescape(value: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


def _abort_stages(catalog: Catalog, database: str) -> None:
    try:
        stages = catalog.list_stages()
    except UnsupportedError:  # a catalog that stages no writes has none to abort
        return
    for stage in stages:
        if stage.database.lower() == database and stage.state.name == "OPEN":
            try:
                catalog.abort_stage(stage.database, parse_stage_id(stage.id)[2], writer_stopped=False)
            except CatalogError as e:
                logger.warning("HMS endpoint: aborting stage %s before dropping %s: %s", stage.id, database, e)


def _result(method: str, **fields: Any) -> Any:
    """The method's ``_result`` struct, as the metastore would have answered the drop."""
    return getattr(ThriftHiveMetastore, f"{method}_result")(**fields)


def _purge(context: Any) -> bool:
    properties = getattr(context, "properties", None) or {}
    return str(properties.get("ifPurge", "")).lower() == "true"
