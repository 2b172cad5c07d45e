"""How a Hive 3.1 / 4.x call is said in Hive 2.3: the ``*_req`` variants a 2.3 metastore does not know.

A Hive 3 or 4 client sends ``alter_table_req``, ``get_partitions_by_names_req``,
``get_database_req``, ... where a Hive 2.3 client sends ``alter_table_with_environment_context``,
``get_partitions_by_names``, ``get_database``. A Hive 2.3 metastore (the embedded one, or a remote
2.3) answers the new names with ``UNKNOWN_METHOD``. For every such call with a 2.3 equivalent, this
module says the call in 2.3 (``as_hive2``) and the 2.3 answer as the new call's result struct
(``result_of``), so the endpoint answers it as a Hive 3/4 metastore would.

A call is said in 2.3 only when nothing it asks is lost: a request asking for what 2.3 cannot do
(column statistics with the partitions, a conditional alter, a clone of a partition, a database
of a data connector, ...) has no 2.3 form and is answered ``UNKNOWN_METHOD``, as an HMS 2.3 server
would: never a silently different answer. ``judged_as`` is the lossy form for catalogd's rules
(which read only the objects' names and locations): the 2.3 call whose rule judges the call.

Nothing here does I/O: ``answer`` makes the 2.3 call through the function it is given. (The other
direction, Hive 2.3 calls to an HMS 4 backend, is ``backend_dialect``'s.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import methods
from catalogd.metastore.messages import EXCEPTION, REPLY, Message, decode, encode

__all__ = ["EQUIVALENTS", "answer", "as_hive2", "is_unknown_method", "judged_as", "result_of"]

#: One decoded call on the metastore (2.3 method, its args) -> its result struct.
Call = Callable[[str, Any], Any]


def _get(obj: Any, name: str) -> Any:
    # The IDL overlay's fields; absent on a struct of the 2.3 IDL.
    return getattr(obj, name, None)


def _set(*values: Any) -> bool:
    """Whether any of the values asks for something (a true flag, a non-empty string or list)."""
    return any(bool(v) for v in values)


def _args(method: str, **fields: Any) -> Any:
    return getattr(ThriftHiveMetastore, f"{method}_args")(**fields)


@dataclass(frozen=True)
class _Downgrade:
    """One 3/4-only method: its 2.3 equivalent, how its args are said there, how the answer comes back."""

    #: The 2.3 call's args (method, args); None: it cannot be said in 2.3 without losing what it asks.
    call: Callable[[Any], tuple[str, Any] | None]
    #: The 2.3 call's success value -> the new method's success value (None for a void method).
    success: Callable[[Any, Any], Any]
    #: For the rules only: the 2.3 call whose rule judges it (lossy); None: ``call``.
    judged: Callable[[Any], tuple[str, Any]] | None = None


def _void(_args: Any, _value: Any) -> Any:
    return None


def _same(_args: Any, value: Any) -> Any:
    return value


# ---------------------------------------------------------------- databases


def _get_database(a: Any) -> tuple[str, Any] | None:
    r = a.request
    if r is None:
        return None
    return "get_database", _args("get_database", name=r.name)


def _create_database(a: Any) -> tuple[str, Any] | None:
    r = a.createDatabaseRequest
    if r is None or _set(_get(r, "managedLocationUri"), _get(r, "dataConnectorName"), _get(r, "remote_dbname")) \
            or _get(r, "type") not in (None, 1):  # DatabaseType.NATIVE
        return None
    return _create_database_judged(a)


def _create_database_judged(a: Any) -> tuple[str, Any]:
    r = a.createDatabaseRequest
    db = hms.Database(name=r.databaseName, description=r.description, locationUri=r.locationUri,
                      parameters=r.parameters, privileges=r.privileges, ownerName=r.ownerName,
                      ownerType=r.ownerType)
    if _get(r, "managedLocationUri"):
        # Judged as the location it also claims (claims.py claims both).
        db.managedLocationUri = r.managedLocationUri
    return "create_database", _args("create_database", database=db)


def _alter_database(a: Any) -> tuple[str, Any] | None:
    r = a.alterDbReq
    if r is None:
        return None
    return "alter_database", _args("alter_database", dbname=r.oldDbName, db=r.newDb)


def _drop_database(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or _set(_get(r, "softDelete")):
        return None
    return _drop_database_judged(a)


def _drop_database_judged(a: Any) -> tuple[str, Any]:
    r = a.req
    delete = True if r.deleteData is None else bool(r.deleteData)
    return "drop_database", _args("drop_database", name=r.name, deleteData=delete, cascade=bool(r.cascade))


# ---------------------------------------------------------------- tables


def _create_table(a: Any) -> tuple[str, Any] | None:
    r = a.request
    if r is None or _set(_get(r, "uniqueConstraints"), _get(r, "notNullConstraints"),
                         _get(r, "defaultConstraints"), _get(r, "checkConstraints")):
        return None  # constraints 2.3 has no place for
    if _set(r.primaryKeys, r.foreignKeys):
        if r.envContext is not None:
            return None  # 2.3's create with constraints takes no environment context
        return "create_table_with_constraints", _args("create_table_with_constraints", tbl=r.table,
                                                      primaryKeys=r.primaryKeys or [],
                                                      foreignKeys=r.foreignKeys or [])
    return _create_table_judged(a)


def _create_table_judged(a: Any) -> tuple[str, Any]:
    r = a.request
    return "create_table_with_environment_context", _args("create_table_with_environment_context",
                                                          tbl=r.table, environment_context=r.envContext)


def _alter_table(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or _set(_get(r, "expectedParameterKey")):
        return None  # a conditional alter (Iceberg's commit check) cannot be made atomically in 2.3
    return _alter_table_judged(a)


def _alter_table_judged(a: Any) -> tuple[str, Any]:
    r = a.req
    return "alter_table_with_environment_context", _args(
        "alter_table_with_environment_context", dbname=r.dbName, tbl_name=r.tableName, new_tbl=r.table,
        environment_context=r.environmentContext)


def _drop_table(a: Any) -> tuple[str, Any] | None:
    r = a.dropTableReq
    if r is None or _get(r, "dropPartitions") is False:
        return None
    return _drop_table_judged(a)


def _drop_table_judged(a: Any) -> tuple[str, Any]:
    r = a.dropTableReq
    delete = True if r.deleteData is None else bool(r.deleteData)
    return "drop_table_with_environment_context", _args(
        "drop_table_with_environment_context", dbname=r.dbName, name=r.tableName, deleteData=delete,
        environment_context=r.envContext)


def _fields(method: str) -> Callable[[Any], tuple[str, Any] | None]:
    def call(a: Any) -> tuple[str, Any] | None:
        r = a.req
        if r is None:
            return None
        return method, _args(method, db_name=r.dbName, table_name=r.tblName, environment_context=r.envContext)

    return call


def _fields_success(response: str) -> Callable[[Any, Any], Any]:
    def success(_a: Any, value: Any) -> Any:
        return getattr(hms, response)(fields=value)

    return success


# ---------------------------------------------------------------- partitions


def _read_only_partitions(r: Any) -> bool:
    """Whether a partition read asks only what 2.3 answers (no projection, statistics or file metadata)."""
    return not _set(_get(r, "skipColumnSchemaForPartition"), _get(r, "includeParamKeyPattern"),
                    _get(r, "excludeParamKeyPattern"))


def _max(value: Any) -> int:
    return -1 if value is None else int(value)


def _get_partitions(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or not _read_only_partitions(r):
        return None
    return "get_partitions", _args("get_partitions", db_name=r.dbName, tbl_name=r.tblName,
                                   max_parts=_max(r.maxParts))


def _fetch_partition_names(a: Any) -> tuple[str, Any] | None:
    r = a.partitionReq
    if r is None:
        return None
    return "get_partition_names", _args("get_partition_names", db_name=r.dbName, tbl_name=r.tblName,
                                        max_parts=_max(r.maxParts))


def _get_partition(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None:
        return None
    return "get_partition", _args("get_partition", db_name=r.dbName, tbl_name=r.tblName,
                                  part_vals=list(r.partVals or []))


def _get_partitions_by_names(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or _set(r.get_col_stats, _get(r, "getFileMetadata")) or not _read_only_partitions(r):
        return None  # statistics or file metadata with the partitions: 2.3 answers neither
    return "get_partitions_by_names", _args("get_partitions_by_names", db_name=r.db_name, tbl_name=r.tbl_name,
                                            names=list(r.names or []))


def _get_partitions_by_filter(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or not _read_only_partitions(r):
        return None
    return "get_partitions_by_filter", _args("get_partitions_by_filter", db_name=r.dbName, tbl_name=r.tblName,
                                             filter=r.filter, max_parts=_max(r.maxParts))


def _get_partition_names_ps(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None:
        return None
    return "get_partition_names_ps", _args("get_partition_names_ps", db_name=r.dbName, tbl_name=r.tblName,
                                           part_vals=list(r.partValues or []), max_parts=_max(r.maxParts))


def _get_partitions_ps_with_auth(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or _set(_get(r, "partNames")) or not _read_only_partitions(r):
        return None
    if r.partVals is None:
        return "get_partitions_with_auth", _args("get_partitions_with_auth", db_name=r.dbName, tbl_name=r.tblName,
                                                 max_parts=_max(r.maxParts), user_name=r.userName,
                                                 group_names=r.groupNames)
    return "get_partitions_ps_with_auth", _args("get_partitions_ps_with_auth", db_name=r.dbName,
                                                tbl_name=r.tblName, part_vals=list(r.partVals),
                                                max_parts=_max(r.maxParts), user_name=r.userName,
                                                group_names=r.groupNames)


def _partitions_spec_by_expr(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or not _read_only_partitions(r) or _set(_get(r, "order")):
        return None  # an order (with a limit, which partitions) 2.3 does not keep
    return "get_partitions_by_expr", _args("get_partitions_by_expr", req=hms.PartitionsByExprRequest(
        dbName=r.dbName, tblName=r.tblName, expr=r.expr, defaultPartitionName=r.defaultPartitionName,
        maxParts=r.maxParts))


def _partitions_spec_success(a: Any, value: Any) -> Any:
    # One spec listing the partitions (a spec may also share one storage descriptor; listed is as valid).
    parts = list(value.partitions or []) if value is not None else []
    spec = hms.PartitionSpec(dbName=a.req.dbName, tableName=a.req.tblName,
                             partitionList=hms.PartitionListComposingSpec(partitions=parts))
    return hms.PartitionsSpecByExprResult(partitionsSpec=[spec] if parts else [],
                                          hasUnknownPartitions=value.hasUnknownPartitions if value else False)


def _append_partition(a: Any) -> tuple[str, Any] | None:
    r = a.appendPartitionsReq
    if r is None:
        return None
    # Without a context, 2.3's plainest spelling (the one every 2.3 metastore, and a memory catalog, answers).
    context = r.environmentContext
    if r.name:
        if context is None:
            return "append_partition_by_name", _args("append_partition_by_name", db_name=r.dbName,
                                                     tbl_name=r.tableName, part_name=r.name)
        return "append_partition_by_name_with_environment_context", _args(
            "append_partition_by_name_with_environment_context", db_name=r.dbName, tbl_name=r.tableName,
            part_name=r.name, environment_context=context)
    if context is None:
        return "append_partition", _args("append_partition", db_name=r.dbName, tbl_name=r.tableName,
                                         part_vals=list(r.partVals or []))
    return "append_partition_with_environment_context", _args(
        "append_partition_with_environment_context", db_name=r.dbName, tbl_name=r.tableName,
        part_vals=list(r.partVals or []), environment_context=context)


def _drop_partition(a: Any) -> tuple[str, Any] | None:
    r = a.dropPartitionReq
    if r is None:
        return None
    delete = True if r.deleteData is None else bool(r.deleteData)
    context = r.environmentContext
    if r.partName:
        if context is None:
            return "drop_partition_by_name", _args("drop_partition_by_name", db_name=r.dbName, tbl_name=r.tblName,
                                                   part_name=r.partName, deleteData=delete)
        return "drop_partition_by_name_with_environment_context", _args(
            "drop_partition_by_name_with_environment_context", db_name=r.dbName, tbl_name=r.tblName,
            part_name=r.partName, deleteData=delete, environment_context=context)
    if context is None:
        return "drop_partition", _args("drop_partition", db_name=r.dbName, tbl_name=r.tblName,
                                       part_vals=list(r.partVals or []), deleteData=delete)
    return "drop_partition_with_environment_context", _args(
        "drop_partition_with_environment_context", db_name=r.dbName, tbl_name=r.tblName,
        part_vals=list(r.partVals or []), deleteData=delete, environment_context=context)


def _alter_partitions(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or _set(_get(r, "skipColumnSchemaForPartition")):
        return None
    return "alter_partitions_with_environment_context", _args(
        "alter_partitions_with_environment_context", db_name=r.dbName, tbl_name=r.tableName,
        new_parts=list(r.partitions or []), environment_context=r.environmentContext)


def _rename_partition(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None or _set(_get(r, "clonePart")):
        return None  # a copy of the partition, not a rename: 2.3 has no such call
    return _rename_partition_judged(a)


def _rename_partition_judged(a: Any) -> tuple[str, Any]:
    r = a.req
    return "rename_partition", _args("rename_partition", db_name=r.dbName, tbl_name=r.tableName,
                                     part_vals=list(r.partVals or []), new_part=r.newPart)


# ---------------------------------------------------------------- statistics, transactions


def _set_stats(a: Any) -> tuple[str, Any] | None:
    r = a.req
    if r is None:
        return None
    return "set_aggr_stats_for", _args("set_aggr_stats_for", request=hms.SetPartitionsStatsRequest(
        colStats=r.colStats, needMerge=r.needMerge))


def _get_open_txns(_a: Any) -> tuple[str, Any] | None:
    # 2.3 has one kind of transaction: excluding the others (read-only, ...) excludes nothing.
    return "get_open_txns", _args("get_open_txns")


def _response(name: str, field: str) -> Callable[[Any, Any], Any]:
    def success(_a: Any, value: Any) -> Any:
        return getattr(hms, name)(**{field: value})

    return success


def _empty(name: str) -> Callable[[Any, Any], Any]:
    def success(_a: Any, _value: Any) -> Any:
        return getattr(hms, name)()

    return success


def _constraints_table(a: Any) -> tuple[str, Any] | None:
    # Hive 2.3 has no NOT NULL, UNIQUE, CHECK or DEFAULT constraints: the table's answer is none
    # (the 2.3 call only checks that the table is there).
    r = a.request
    return "get_table", _args("get_table", dbname=r.db_name, tbl_name=r.tbl_name)


def _no_constraints(name: str, field: str) -> Callable[[Any, Any], Any]:
    def success(_a: Any, _value: Any) -> Any:
        return getattr(hms, name)(**{field: []})

    return success


#: Every 3/4-only method with a 2.3 equivalent.
EQUIVALENTS: dict[str, _Downgrade] = {
    "get_database_req": _Downgrade(_get_database, _same),
    "create_database_req": _Downgrade(_create_database, _void, _create_database_judged),
    "alter_database_req": _Downgrade(_alter_database, _void),
    "drop_database_req": _Downgrade(_drop_database, _void, _drop_database_judged),
    "create_table_req": _Downgrade(_create_table, _void, _create_table_judged),
    "alter_table_req": _Downgrade(_alter_table, _empty("AlterTableResponse"), _alter_table_judged),
    "drop_table_req": _Downgrade(_drop_table, _void, _drop_table_judged),
    "get_fields_req": _Downgrade(_fields("get_fields_with_environment_context"), _fields_success("GetFieldsResponse")),
    "get_schema_req": _Downgrade(_fields("get_schema_with_environment_context"), _fields_success("GetSchemaResponse")),
    "get_partitions_req": _Downgrade(_get_partitions, _response("PartitionsResponse", "partitions")),
    "fetch_partition_names_req": _Downgrade(_fetch_partition_names, _same),
    "get_partition_req": _Downgrade(_get_partition, _response("GetPartitionResponse", "partition")),
    "get_partitions_by_names_req": _Downgrade(_get_partitions_by_names,
                                              _response("GetPartitionsByNamesResult", "partitions")),
    "get_partitions_by_filter_req": _Downgrade(_get_partitions_by_filter, _same),
    "get_partition_names_ps_req": _Downgrade(_get_partition_names_ps,
                                             _response("GetPartitionNamesPsResponse", "names")),
    "get_partitions_ps_with_auth_req": _Downgrade(_get_partitions_ps_with_auth,
                                                  _response("GetPartitionsPsWithAuthResponse", "partitions")),
    "get_partitions_spec_by_expr": _Downgrade(_partitions_spec_by_expr, _partitions_spec_success),
    "append_partition_req": _Downgrade(_append_partition, _same),
    "drop_partition_req": _Downgrade(_drop_partition, _same),
    "alter_partitions_req": _Downgrade(_alter_partitions, _empty("AlterPartitionsResponse")),
    "rename_partition_req": _Downgrade(_rename_partition, _empty("RenamePartitionResponse"),
                                       _rename_partition_judged),
    "update_table_column_statistics_req": _Downgrade(_set_stats, _response("SetPartitionsStatsResponse", "result")),
    "update_partition_column_statistics_req": _Downgrade(_set_stats,
                                                         _response("SetPartitionsStatsResponse", "result")),
    "get_open_txns_req": _Downgrade(_get_open_txns, _same),
    "get_not_null_constraints": _Downgrade(_constraints_table,
                                           _no_constraints("NotNullConstraintsResponse", "notNullConstraints")),
    "get_unique_constraints": _Downgrade(_constraints_table,
                                         _no_constraints("UniqueConstraintsResponse", "uniqueConstraints")),
    "get_check_constraints": _Downgrade(_constraints_table,
                                        _no_constraints("CheckConstraintsResponse", "checkConstraints")),
    "get_default_constraints": _Downgrade(_constraints_table,
                                          _no_constraints("DefaultConstraintsResponse", "defaultConstraints")),
}


def as_hive2(method: str, args: Any) -> tuple[str, Any] | None:
    """The 2.3 call that asks exactly what ``method(args)`` asks: (method, args); None: there is none.

    The 2.3 args share the structs of ``args`` (a table, a partition list): not copied.
    """
    found = EQUIVALENTS.get(method)
    return found.call(args) if found is not None else None


def judged_as(method: str, args: Any) -> tuple[str, Any]:
    """The call whose rule judges ``method(args)`` (its 2.3 equivalent, perhaps losing what no rule
    reads); ``(method, args)`` itself when it has none."""
    found = EQUIVALENTS.get(method)
    if found is None:
        return method, args
    said = found.judged(args) if found.judged is not None else found.call(args)
    return said if said is not None else (method, args)


def result_of(method: str, args: Any, hive2_result: Any) -> Any:
    """``method``'s result struct saying what the 2.3 call's result says (its value, or its error).

    Raises:
        TApplicationException: the 2.3 error has no place in ``method``'s result (nor has a MetaException).
    """
    cls = getattr(ThriftHiveMetastore, f"{method}_result")
    failure = next((v for k, v in vars(hive2_result).items() if k != "success" and v is not None), None)
    if failure is not None:
        if method == "drop_database_req" and isinstance(failure, hms.NoSuchObjectException) and \
                _get(args.req, "ignoreUnknownDb"):
            return cls()
        placed = methods.error_result(method, failure)
        if placed is None:
            raise TApplicationException(TApplicationException.INTERNAL_ERROR,
                                        str(getattr(failure, "message", None) or failure))
        return placed
    found = EQUIVALENTS[method]
    value = found.success(args, getattr(hive2_result, "success", None))
    return cls(success=value) if value is not None else cls()


def is_unknown_method(reply: Message) -> bool:
    """Whether the reply is the metastore's ``UNKNOWN_METHOD`` (a method its IDL does not have)."""
    if reply.type != EXCEPTION:
        return False
    try:
        error = decode(TApplicationException(), reply.body)
    except Exception:  # an exception we cannot read is not ours to answer
        return False
    return bool(error.type == TApplicationException.UNKNOWN_METHOD)


def answer(method: str, seqid: int, args: Any, call: Call) -> bytes | None:
    """The reply to ``method(args)`` made with its 2.3 equivalent through ``call``; None: it has none.

    For a metastore that answered ``method`` with ``UNKNOWN_METHOD``.
    """
    said = as_hive2(method, args)
    if said is None:
        return None
    hive2_method, hive2_args = said
    try:
        result = result_of(method, args, call(hive2_method, hive2_args))
    except TApplicationException as e:
        return encode(method, EXCEPTION, seqid, e)
    return encode(method, REPLY, seqid, result)
