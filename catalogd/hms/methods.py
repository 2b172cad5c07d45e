"""The HMS method table: for every ThriftHiveMetastore method, its kind and where its args and results name databases.

The endpoint's router decodes a call with hmsclient's generated
``ThriftHiveMetastore.<method>_args`` (the Hive 2.3 IDL) and asks this module
what the call is (a read or a write, of one catalog or of none), which
databases and objects it names, and how to rename databases between the
client's names (``<prefix>db`` for a non-default catalog) and the backing
metastore's (``db``). Nothing here does I/O.

Database names inside structs are found by walking each struct by its
``thrift_spec`` with one table (``STRUCT_DB_FIELDS``: struct class -> the
fields that hold a database name); the walk only descends into fields whose
type can (transitively) hold one, so a 2,000-partition reply costs one
attribute write per partition.

Hive 3+ clients may spell a database ``@<catalog>#<db>``: the router turns those
names into the 2.3 spelling first (``catalog_names``, through ``visit_args``) and
back in the answer (``visit_result``); an envelope that reaches the renames here
anyway is kept as it is and only the database part is renamed.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from thrift.Thrift import TType

from catalogd.hive_idl import ThriftHiveMetastore, hive2_field_ids, ttypes

log = logging.getLogger(__name__)

Rename = Callable[[str], str]


class Kind(enum.Enum):
    """What a call does, for routing and for the catalog's rules."""

    #: Reads objects of the database(s) it names.
    READ = "read"
    #: Writes objects of the database(s) it names.
    WRITE = "write"
    #: Names no database for routing (locks, txns, roles, config, ...): goes to the default catalog.
    GLOBAL_READ = "global-read"
    GLOBAL_WRITE = "global-write"


#: Struct class -> its fields that hold a database name.
STRUCT_DB_FIELDS: dict[type, tuple[str, ...]] = {
    ttypes.AddDynamicPartitions: ("dbname",),
    ttypes.AddPartitionsRequest: ("dbName",),
    ttypes.CacheFileMetadataRequest: ("dbName",),
    ttypes.ColumnStatisticsDesc: ("dbName",),
    ttypes.CompactionRequest: ("dbname",),
    ttypes.Database: ("name",),
    ttypes.DropConstraintRequest: ("dbname",),
    ttypes.DropPartitionsRequest: ("dbName",),
    ttypes.FireEventRequest: ("dbName",),
    ttypes.ForeignKeysRequest: ("parent_db_name", "foreign_db_name"),
    ttypes.Function: ("dbName",),
    ttypes.GetTableRequest: ("dbName",),
    ttypes.GetTablesRequest: ("dbName",),
    ttypes.HiveObjectRef: ("dbName",),
    ttypes.Index: ("dbName",),
    ttypes.LockComponent: ("dbname",),
    ttypes.NotificationEvent: ("dbName",),
    ttypes.Partition: ("dbName",),
    ttypes.PartitionSpec: ("dbName",),
    ttypes.PartitionsByExprRequest: ("dbName",),
    ttypes.PartitionsStatsRequest: ("dbName",),
    ttypes.PrimaryKeysRequest: ("db_name",),
    ttypes.SQLForeignKey: ("pktable_db", "fktable_db"),
    ttypes.SQLPrimaryKey: ("table_db",),
    ttypes.ShowCompactResponseElement: ("dbname",),
    ttypes.ShowLocksRequest: ("dbname",),
    ttypes.ShowLocksResponseElement: ("dbname",),
    ttypes.Table: ("dbName",),
    ttypes.TableMeta: ("dbName",),
    ttypes.TableStatsRequest: ("dbName",),
}

#: The Hive 3.1 / 4.x structs (the IDL overlay adds them) -> their fields that hold a database name.
_HIVE4_STRUCT_DB_FIELDS: dict[str, tuple[str, ...]] = {
    # requests of the ``*_req`` calls routed by database
    "AllTableConstraintsRequest": ("dbName",),
    "AlterDatabaseRequest": ("oldDbName",),
    "AlterPartitionsRequest": ("dbName",),
    "AlterTableRequest": ("dbName",),
    "AppendPartitionsRequest": ("dbName",),
    "CheckConstraintsRequest": ("db_name",),
    "CreateDatabaseRequest": ("databaseName",),
    "CreationMetadata": ("dbName",),
    "DefaultConstraintsRequest": ("db_name",),
    "DropDatabaseRequest": ("name",),
    "DropPartitionRequest": ("dbName",),
    "DropTableRequest": ("dbName",),
    "GetDatabaseRequest": ("name",),
    "GetFieldsRequest": ("dbName",),
    "GetPartitionNamesPsRequest": ("dbName",),
    "GetPartitionRequest": ("dbName",),
    "GetPartitionsByFilterRequest": ("dbName",),
    "GetPartitionsByNamesRequest": ("db_name",),
    "GetPartitionsPsWithAuthRequest": ("dbName",),
    "GetPartitionsRequest": ("dbName",),
    "GetSchemaRequest": ("dbName",),
    "GetTablesExtRequest": ("database",),
    "NotNullConstraintsRequest": ("db_name",),
    "PartitionValuesRequest": ("dbName",),
    "PartitionsRequest": ("dbName",),
    "RenamePartitionRequest": ("dbName",),
    "TruncateTableRequest": ("dbName",),
    "UniqueConstraintsRequest": ("db_name",),
    # constraints, in requests and answers
    "SQLCheckConstraint": ("table_db",),
    "SQLDefaultConstraint": ("table_db",),
    "SQLNotNullConstraint": ("table_db",),
    "SQLUniqueConstraint": ("table_db",),
    # stored procedures, packages, schemas
    "AddPackageRequest": ("dbName",),
    "DropPackageRequest": ("dbName",),
    "GetPackageRequest": ("dbName",),
    "ISchema": ("dbName",),
    "ISchemaName": ("dbName",),
    "ListPackageRequest": ("dbName",),
    "ListStoredProcedureRequest": ("dbName",),
    "Package": ("dbName",),
    "StoredProcedure": ("dbName",),
    "StoredProcedureRequest": ("dbName",),
    # transactions, write ids, compactions, notifications (global calls: read by the lock and
    # compaction rules, never renamed)
    "AllocateTableWriteIdsRequest": ("dbName",),
    "BasicTxnInfo": ("dbname",),
    "NotificationEventRequest": ("dbName",),
    "CompactionInfoStruct": ("dbname",),
    "CompactionMetricsDataRequest": ("dbName",),
    "CompactionMetricsDataStruct": ("dbname",),
    "GetAllWriteEventInfoRequest": ("dbName",),
    "GetLatestCommittedCompactionInfoRequest": ("dbname",),
    "MaxAllocatedTableWriteIdRequest": ("dbName",),
    "NotificationEventsCountRequest": ("dbName",),
    "ReplTblWriteIdStateRequest": ("dbName",),
    "SeedTableWriteIdsRequest": ("dbName",),
    "ShowCompactRequest": ("dbName",),
    "WriteEventInfo": ("database",),
    "WriteNotificationLogBatchRequest": ("db",),
    "WriteNotificationLogRequest": ("db",),
}
STRUCT_DB_FIELDS.update({getattr(ttypes, name): fields for name, fields in _HIVE4_STRUCT_DB_FIELDS.items()})


@dataclass(frozen=True)
class _Target:
    """Where a call names the objects it reads or writes.

    ``base`` leads from the args to one object or (ending in ``[]``) a list of
    them; ``db`` and ``table`` lead from each base object to the database name
    and the table name(s) (``table`` ending in ``[]``: a list of names; empty:
    the database itself).
    """

    base: str
    db: str
    table: str = ""


@dataclass(frozen=True)
class _Spec:
    kind: Kind
    #: Args fields that are database names (plain strings; structs are walked).
    db: tuple[str, ...] = ()
    targets: tuple[_Target, ...] = ()


def _r(db: str = "", table: str = "", base: str = "", *more: _Target) -> _Spec:
    return _Spec(Kind.READ, (db,) if db and not base else (), (_Target(base, db, table), *more))


def _w(db: str = "", table: str = "", base: str = "", *more: _Target) -> _Spec:
    return _Spec(Kind.WRITE, (db,) if db and not base else (), (_Target(base, db, table), *more))


_GR = _Spec(Kind.GLOBAL_READ)
_GW = _Spec(Kind.GLOBAL_WRITE)

# Most per-table calls spell their arguments one of these two ways.
_DT = ("db_name", "tbl_name")
_DT2 = ("dbname", "tbl_name")

_SPECS: dict[str, _Spec] = {
    # -- databases
    "create_database": _w("name", "", "database"),
    "get_database": _r("name"),
    "drop_database": _w("name"),
    "alter_database": _Spec(Kind.WRITE, ("dbname",), (_Target("", "dbname"),)),
    # Patterns, expanded per catalog by the router (PATTERN_METHODS); they name no database.
    "get_databases": _Spec(Kind.READ),
    "get_all_databases": _Spec(Kind.READ),
    "get_table_meta": _Spec(Kind.READ),
    # -- tables
    "get_all_tables": _r("db_name"),
    "get_tables": _r("db_name"),
    "get_tables_by_type": _r("db_name"),
    "get_table": _r(*_DT2),
    "get_table_req": _r("dbName", "tblName", "req"),
    "get_table_objects_by_name": _r("dbname", "tbl_names[]"),
    "get_table_objects_by_name_req": _r("dbName", "tblNames[]", "req"),
    "get_table_names_by_filter": _r("dbname"),
    "get_fields": _r("db_name", "table_name"),
    "get_fields_with_environment_context": _r("db_name", "table_name"),
    "get_schema": _r("db_name", "table_name"),
    "get_schema_with_environment_context": _r("db_name", "table_name"),
    "create_table": _w("dbName", "tableName", "tbl"),
    "create_table_with_environment_context": _w("dbName", "tableName", "tbl"),
    "create_table_with_constraints": _w("dbName", "tableName", "tbl"),
    "drop_constraint": _w("dbname", "tablename", "req"),
    "add_primary_key": _w("table_db", "table_name", "req.primaryKeyCols[]"),
    "add_foreign_key": _w("fktable_db", "fktable_name", "req.foreignKeyCols[]"),
    "drop_table": _w("dbname", "name"),
    "drop_table_with_environment_context": _w("dbname", "name"),
    # An alter may move the table (rename, even to another database): both names are written.
    "alter_table": _w(*_DT2, "", _Target("new_tbl", "dbName", "tableName")),
    "alter_table_with_environment_context": _w(*_DT2, "", _Target("new_tbl", "dbName", "tableName")),
    "alter_table_with_cascade": _w(*_DT2, "", _Target("new_tbl", "dbName", "tableName")),
    # -- partitions
    "add_partition": _w("dbName", "tableName", "new_part"),
    "add_partition_with_environment_context": _w("dbName", "tableName", "new_part"),
    "add_partitions": _w("dbName", "tableName", "new_parts[]"),
    "add_partitions_pspec": _w("dbName", "tableName", "new_parts[]"),
    "add_partitions_req": _w("dbName", "tblName", "request"),
    "append_partition": _w(*_DT),
    "append_partition_with_environment_context": _w(*_DT),
    "append_partition_by_name": _w(*_DT),
    "append_partition_by_name_with_environment_context": _w(*_DT),
    "drop_partition": _w(*_DT),
    "drop_partition_with_environment_context": _w(*_DT),
    "drop_partition_by_name": _w(*_DT),
    "drop_partition_by_name_with_environment_context": _w(*_DT),
    "drop_partitions_req": _w("dbName", "tblName", "req"),
    "alter_partition": _w(*_DT),
    "alter_partition_with_environment_context": _w(*_DT),
    "alter_partitions": _w(*_DT),
    "alter_partitions_with_environment_context": _w(*_DT),
    "rename_partition": _w(*_DT),
    "markPartitionForEvent": _w(*_DT),
    "isPartitionMarkedForEvent": _r(*_DT),
    "exchange_partition": _Spec(
        Kind.WRITE,
        ("source_db", "dest_db"),
        (_Target("", "source_db", "source_table_name"), _Target("", "dest_db", "dest_table_name")),
    ),
    "exchange_partitions": _Spec(
        Kind.WRITE,
        ("source_db", "dest_db"),
        (_Target("", "source_db", "source_table_name"), _Target("", "dest_db", "dest_table_name")),
    ),
    "get_partition": _r(*_DT),
    "get_partition_with_auth": _r(*_DT),
    "get_partition_by_name": _r(*_DT),
    "get_partitions": _r(*_DT),
    "get_partitions_with_auth": _r(*_DT),
    "get_partitions_pspec": _r(*_DT),
    "get_partition_names": _r(*_DT),
    "get_partitions_ps": _r(*_DT),
    "get_partitions_ps_with_auth": _r(*_DT),
    "get_partition_names_ps": _r(*_DT),
    "get_partitions_by_filter": _r(*_DT),
    "get_part_specs_by_filter": _r(*_DT),
    "get_partitions_by_expr": _r("dbName", "tblName", "req"),
    "get_num_partitions_by_filter": _r(*_DT),
    "get_partitions_by_names": _r(*_DT),
    # -- indexes, keys
    # Adding an index also creates its index table.
    "add_index": _w("dbName", "origTableName", "new_index", _Target("index_table", "dbName", "tableName")),
    "alter_index": _w("dbname", "base_tbl_name"),
    "drop_index_by_name": _w(*_DT),
    "get_index_by_name": _r(*_DT),
    "get_indexes": _r(*_DT),
    "get_index_names": _r(*_DT),
    "get_primary_keys": _r("db_name", "tbl_name", "request"),
    "get_foreign_keys": _r(
        "parent_db_name", "parent_tbl_name", "request", _Target("request", "foreign_db_name", "foreign_tbl_name")
    ),
    # -- statistics
    "update_table_column_statistics": _w("statsDesc.dbName", "statsDesc.tableName", "stats_obj"),
    "update_partition_column_statistics": _w("statsDesc.dbName", "statsDesc.tableName", "stats_obj"),
    "get_table_column_statistics": _r(*_DT),
    "get_partition_column_statistics": _r(*_DT),
    "get_table_statistics_req": _r("dbName", "tblName", "request"),
    "get_partitions_statistics_req": _r("dbName", "tblName", "request"),
    "get_aggr_stats_for": _r("dbName", "tblName", "request"),
    "set_aggr_stats_for": _w("statsDesc.dbName", "statsDesc.tableName", "request.colStats[]"),
    "delete_partition_column_statistics": _w(*_DT),
    "delete_table_column_statistics": _w(*_DT),
    # -- functions (a function belongs to a database; the target is the database)
    "create_function": _w("dbName", "", "func"),
    "drop_function": _w("dbName"),
    "alter_function": _w("dbName"),
    "get_functions": _r("dbName"),
    "get_function": _r("dbName"),
    # An INSERT event on a named table: a metadata write of that table's catalog.
    "fire_listener_event": _w("dbName", "tableName", "rqst"),
    # -- names no database: the default catalog's (functions listing, types, config, ...)
    "get_all_functions": _GR,
    "create_type": _GW,
    "get_type": _GR,
    "drop_type": _GW,
    "get_type_all": _GR,
    "getMetaConf": _GR,
    "setMetaConf": _GW,
    "get_config_value": _GR,
    "partition_name_to_vals": _GR,
    "partition_name_to_spec": _GR,
    "partition_name_has_valid_characters": _GR,
    "flushCache": _GW,
    "set_ugi": _GR,
    # roles and privileges (a HiveObjectRef may name a database: still global for routing)
    "create_role": _GW,
    "drop_role": _GW,
    "get_role_names": _GR,
    "grant_role": _GW,
    "revoke_role": _GW,
    "list_roles": _GR,
    "grant_revoke_role": _GW,
    "get_principals_in_role": _GR,
    "get_role_grants_for_principal": _GR,
    "get_privilege_set": _GR,
    "list_privileges": _GR,
    "grant_privileges": _GW,
    "revoke_privileges": _GW,
    "grant_revoke_privileges": _GW,
    # tokens and keys
    "get_delegation_token": _GW,
    "renew_delegation_token": _GW,
    "cancel_delegation_token": _GW,
    "add_token": _GW,
    "remove_token": _GW,
    "get_token": _GR,
    "get_all_token_identifiers": _GR,
    "add_master_key": _GW,
    "update_master_key": _GW,
    "remove_master_key": _GW,
    "get_master_keys": _GR,
    # transactions, locks, compactions
    "get_open_txns": _GR,
    "get_open_txns_info": _GR,
    "open_txns": _GW,
    "abort_txn": _GW,
    "abort_txns": _GW,
    "commit_txn": _GW,
    "add_dynamic_partitions": _GW,
    "lock": _GW,
    # check_lock may acquire a waiting lock.
    "check_lock": _GW,
    "unlock": _GW,
    "show_locks": _GR,
    "heartbeat": _GW,
    "heartbeat_txn_range": _GW,
    "compact": _GW,
    "compact2": _GW,
    "show_compact": _GR,
    # notifications
    "get_next_notification": _GR,
    "get_current_notificationEventId": _GR,
    # file metadata
    "get_file_metadata_by_expr": _GR,
    "get_file_metadata": _GR,
    "put_file_metadata": _GW,
    "clear_file_metadata": _GW,
    "cache_file_metadata": _GW,
}

# -- Hive 3.1 and 4.x (the IDL overlay adds them): every ``*_req`` variant is routed, judged and
# cached as its Hive 2.3 equivalent; transaction, write-id, compaction, replication, scheduled-query,
# resource-plan, data-connector and catalog calls name no database for routing (the default catalog's
# metastore answers them: a Hive 2.3 one with UNKNOWN_METHOD, as an HMS 2.3 server would).
_SPECS.update({
    # databases
    "get_database_req": _r("name", "", "request"),
    "create_database_req": _w("databaseName", "", "createDatabaseRequest"),
    "alter_database_req": _w("oldDbName", "", "alterDbReq"),
    "drop_database_req": _w("name", "", "req"),
    # tables
    "create_table_req": _w("dbName", "tableName", "request.table"),
    # A dry run of a create: the metastore answers the table it would make, and makes nothing.
    "translate_table_dryrun": _r("dbName", "tableName", "request.table"),
    "alter_table_req": _w("dbName", "tableName", "req", _Target("req.table", "dbName", "tableName")),
    "drop_table_req": _w("dbName", "tableName", "dropTableReq"),
    "truncate_table": _w("dbName", "tableName"),
    "truncate_table_req": _w("dbName", "tableName", "req"),
    "get_fields_req": _r("dbName", "tblName", "req"),
    "get_schema_req": _r("dbName", "tblName", "req"),
    "get_tables_ext": _r("database", "", "req"),
    "get_materialized_views_for_rewriting": _r("db_name"),
    "update_creation_metadata": _w("dbname", "tbl_name"),
    # constraints
    "add_unique_constraint": _w("table_db", "table_name", "req.uniqueConstraintCols[]"),
    "add_not_null_constraint": _w("table_db", "table_name", "req.notNullConstraintCols[]"),
    "add_default_constraint": _w("table_db", "table_name", "req.defaultConstraintCols[]"),
    "add_check_constraint": _w("table_db", "table_name", "req.checkConstraintCols[]"),
    "get_unique_constraints": _r("db_name", "tbl_name", "request"),
    "get_not_null_constraints": _r("db_name", "tbl_name", "request"),
    "get_default_constraints": _r("db_name", "tbl_name", "request"),
    "get_check_constraints": _r("db_name", "tbl_name", "request"),
    "get_all_table_constraints": _r("dbName", "tblName", "request"),
    # partitions
    "append_partition_req": _w("dbName", "tableName", "appendPartitionsReq"),
    "drop_partition_req": _w("dbName", "tblName", "dropPartitionReq"),
    "alter_partitions_req": _w("dbName", "tableName", "req"),
    "rename_partition_req": _w("dbName", "tableName", "req"),
    "get_partition_req": _r("dbName", "tblName", "req"),
    "get_partitions_req": _r("dbName", "tblName", "req"),
    "get_partitions_by_names_req": _r("db_name", "tbl_name", "req"),
    "get_partitions_by_filter_req": _r("dbName", "tblName", "req"),
    "get_partitions_ps_with_auth_req": _r("dbName", "tblName", "req"),
    "get_partition_names_ps_req": _r("dbName", "tblName", "req"),
    "get_partition_names_req": _r("dbName", "tblName", "req"),
    "fetch_partition_names_req": _r("dbName", "tblName", "partitionReq"),
    "get_partitions_spec_by_expr": _r("dbName", "tblName", "req"),
    "get_partitions_with_specs": _r("dbName", "tblName", "request"),
    "get_partition_values": _r("dbName", "tblName", "request"),
    # statistics
    "update_table_column_statistics_req": _w("statsDesc.dbName", "statsDesc.tableName", "req.colStats[]"),
    "update_partition_column_statistics_req": _w("statsDesc.dbName", "statsDesc.tableName", "req.colStats[]"),
    # stored procedures and packages (HPL/SQL) belong to a database
    "create_stored_procedure": _w("dbName", "", "proc"),
    "drop_stored_procedure": _w("dbName", "", "request"),
    "get_stored_procedure": _r("dbName", "", "request"),
    "get_all_stored_procedures": _r("dbName", "", "request"),
    "add_package": _w("dbName", "", "request"),
    "drop_package": _w("dbName", "", "request"),
    "find_package": _r("dbName", "", "request"),
    "get_all_packages": _r("dbName", "", "request"),
    # schema registry (an ISchema belongs to a database)
    "create_ischema": _w("dbName", "", "schema"),
    "alter_ischema": _w("dbName", "", "rqst.name"),
    "drop_ischema": _w("dbName", "", "name"),
    "get_ischema": _r("dbName", "", "name"),
    "add_schema_version": _w("dbName", "", "schemaVersion.schema"),
    "drop_schema_version": _w("dbName", "", "schemaVersion.schema"),
    "get_schema_version": _r("dbName", "", "schemaVersion.schema"),
    "get_schema_latest_version": _r("dbName", "", "schemaName"),
    "get_schema_all_versions": _r("dbName", "", "schemaName"),
    "map_schema_version_to_serde": _w("dbName", "", "rqst.schemaVersion.schema"),
    "set_schema_version_state": _w("dbName", "", "rqst.schemaVersion.schema"),
    "get_schemas_by_cols": _GR,
    "add_serde": _GW,
    "get_serde": _GR,
    # catalogs
    "get_catalogs": _GR,
    "get_catalog": _GR,
    "create_catalog": _GW,
    "alter_catalog": _GW,
    "drop_catalog": _GW,
    # data connectors
    "get_dataconnectors": _GR,
    "get_dataconnector_req": _GR,
    "create_dataconnector_req": _GW,
    "alter_dataconnector_req": _GW,
    "drop_dataconnector_req": _GW,
    # transactions and write ids
    "get_open_txns_req": _GR,
    "get_latest_txnid_in_conflict": _GR,
    "get_valid_write_ids": _GR,
    "allocate_table_write_ids": _GW,
    "get_max_allocated_table_write_id": _GR,
    "seed_write_id": _GW,
    "seed_txn_id": _GW,
    "repl_tbl_writeid_state": _GW,
    "add_write_ids_to_min_history": _GW,
    "update_transaction_statistics": _GW,
    "add_write_notification_log": _GW,
    "add_write_notification_log_in_batch": _GW,
    "get_all_write_event_info": _GR,
    # materialized views (the rebuild lock is a transaction-table lock)
    "get_all_materialized_view_objects_for_rewriting": _GR,
    "get_materialization_invalidation_info": _GR,
    "get_lock_materialization_rebuild": _Spec(Kind.GLOBAL_WRITE, ("dbName",)),
    "heartbeat_lock_materialization_rebuild": _Spec(Kind.GLOBAL_WRITE, ("dbName",)),
    # compactions
    "abort_Compactions": _GW,
    "find_next_compact": _GW,
    "find_next_compact2": _GW,
    "update_compactor_state": _GW,
    "find_columns_with_stats": _GR,
    "mark_cleaned": _GW,
    "mark_compacted": _GW,
    "mark_failed": _GW,
    "mark_refused": _GW,
    "set_hadoop_jobid": _GW,
    "update_compaction_metrics_data": _GW,
    "remove_compaction_metrics_data": _GW,
    "get_latest_committed_compaction_info": _GR,
    "submit_for_cleanup": _GW,
    # change management: moves (or, purge, deletes) the files of any path it is given
    "cm_recycle": _GW,
    # notifications, replication, runtime statistics
    "get_notification_events_count": _GR,
    "add_replication_metrics": _GW,
    "get_replication_metrics": _GR,
    "add_runtime_stats": _GW,
    "get_runtime_stats": _GR,
    # scheduled queries (a poll takes an execution)
    "scheduled_query_poll": _GW,
    "scheduled_query_maintenance": _GW,
    "scheduled_query_progress": _GW,
    "get_scheduled_query": _GR,
    # workload management (resource plans, pools, triggers, mappings)
    "create_resource_plan": _GW,
    "get_resource_plan": _GR,
    "get_active_resource_plan": _GR,
    "get_all_resource_plans": _GR,
    "alter_resource_plan": _GW,
    "validate_resource_plan": _GR,
    "drop_resource_plan": _GW,
    "create_wm_trigger": _GW,
    "alter_wm_trigger": _GW,
    "drop_wm_trigger": _GW,
    "get_triggers_for_resourceplan": _GR,
    "create_wm_pool": _GW,
    "alter_wm_pool": _GW,
    "drop_wm_pool": _GW,
    "create_or_update_wm_mapping": _GW,
    "drop_wm_mapping": _GW,
    "create_or_drop_wm_trigger_to_pool_mapping": _GW,
    # metastore properties, identity, privileges
    "get_properties": _GR,
    "set_properties": _GW,
    "get_metastore_db_uuid": _GR,
    "refresh_privileges": _GW,
})

#: Methods whose args carry a database *pattern* (HMS syntax: ``*`` any, ``|`` or), with
#: the args field; ``None``: no field, the call lists every database. The router expands
#: these per catalog; ``rename_args`` leaves the pattern as it is.
PATTERN_METHODS: dict[str, str | None] = {
    "get_databases": "pattern",
    "get_all_databases": None,
    "get_table_meta": "db_patterns",
}


def database_pattern(method: str, args: Any) -> str | None:
    """The database pattern of a ``PATTERN_METHODS`` call (``*`` for ``get_all_databases``); ``None`` for others."""
    if method not in PATTERN_METHODS:
        return None
    field = PATTERN_METHODS[method]
    value = getattr(args, field, None) if field is not None else None
    # HMS reads a missing pattern as "every database".
    return value if isinstance(value, str) and value else "*"


#: Methods whose success value is a list of database names.
DB_LIST_RESULTS = frozenset({"get_databases", "get_all_databases"})
_DB_LIST_RESULTS = DB_LIST_RESULTS

#: Every method of the IDL (the Hive 2.3 ThriftHiveMetastore service, not its fb303 base).
IDL_METHODS: frozenset[str] = frozenset(n[:-5] for n in dir(ThriftHiveMetastore) if n.endswith("_args"))


def kind(method: str) -> Kind | None:
    """The call's kind; ``None``: not in the IDL (the router relays it untouched to the default catalog)."""
    spec = _SPECS.get(method)
    return spec.kind if spec is not None else None


def is_global(method: str) -> bool:
    """True for a method that names no database (or is unknown): it goes to the default catalog."""
    k = kind(method)
    return k is None or k in (Kind.GLOBAL_READ, Kind.GLOBAL_WRITE)


# -- the Hive 3 ``@catalog#db`` envelope

_CAT_MARK = "@"
_CAT_SEP = "#"
_DB_EMPTY = "!"


def _split_envelope(name: str) -> tuple[str, str]:
    """``@hive#db`` -> (``@hive#``, ``db``); a plain name -> ("", name)."""
    if name.startswith(_CAT_MARK):
        head, sep, db = name.partition(_CAT_SEP)
        if sep:
            return head + sep, db
    return "", name


def _rename(fn: Rename, name: Any) -> Any:
    if not isinstance(name, str):
        return name
    head, db = _split_envelope(name)
    if head and db in ("", _DB_EMPTY):
        return name
    return head + fn(db)


def _bare(name: str) -> str:
    return _split_envelope(name)[1]


# -- paths through args


def _values(obj: Any, path: str) -> list[Any]:
    """The values at ``path`` (dotted; a part ending in ``[]`` fans out over a list), Nones dropped."""
    current = [obj]
    if path:
        for part in path.split("."):
            many = part.endswith("[]")
            name = part[:-2] if many else part
            step: list[Any] = []
            for item in current:
                value = getattr(item, name, None)
                if value is None:
                    continue
                if many:
                    step.extend(v for v in value if v is not None)
                else:
                    step.append(value)
            current = step
    return current


# -- the struct walk, planned once per struct class by its thrift_spec

#: struct class -> (db-name fields, fields to descend into with their (ttype, type args)).
_Plan = tuple[tuple[str, ...], tuple[tuple[str, int, Any], ...]]
_plans: dict[type, _Plan] = {}


def _type_holds(ttype: int, targs: Any, seen: frozenset[type]) -> bool:
    if ttype == TType.STRUCT:
        cls = targs[0]
        if cls in seen:
            return False
        db, descend = _plan(cls, seen)
        return bool(db or descend)
    if ttype in (TType.LIST, TType.SET):
        return _type_holds(targs[0], targs[1], seen)
    if ttype == TType.MAP:
        return _type_holds(targs[0], targs[1], seen) or _type_holds(targs[2], targs[3], seen)
    return False


def _plan(cls: type, seen: frozenset[type] = frozenset()) -> _Plan:
    plan = _plans.get(cls)
    if plan is not None:
        return plan
    inner = seen | {cls}
    descend = tuple(
        (s[2], s[1], s[3])
        for s in getattr(cls, "thrift_spec", None) or ()
        if s is not None and _type_holds(s[1], s[3], inner)
    )
    plan = (STRUCT_DB_FIELDS.get(cls, ()), descend)
    if not seen:
        # Plans computed inside a cycle guard may be partial; only top-level ones are kept.
        _plans[cls] = plan
    return plan


def _walk(value: Any, ttype: int, targs: Any, visit: Callable[[Any, tuple[str, ...]], None]) -> None:
    if value is None:
        return
    if ttype == TType.STRUCT:
        db, descend = _plan(targs[0])
        visit(value, db)
        for name, sub_type, sub_args in descend:
            _walk(getattr(value, name, None), sub_type, sub_args, visit)
    elif ttype in (TType.LIST, TType.SET):
        for item in value:
            _walk(item, targs[0], targs[1], visit)
    elif ttype == TType.MAP:
        for k, v in value.items():
            _walk(k, targs[0], targs[1], visit)
            _walk(v, targs[2], targs[3], visit)


def _walk_struct(struct: Any, visit: Callable[[Any, tuple[str, ...]], None]) -> None:
    """Visit ``struct`` and every struct inside it that holds a database name."""
    _walk(struct, TType.STRUCT, [type(struct), None], visit)


def _args_class(method: str) -> type | None:
    return getattr(ThriftHiveMetastore, f"{method}_args", None)


def _result_class(method: str) -> type | None:
    return getattr(ThriftHiveMetastore, f"{method}_result", None)


# -- the interface


def databases_in_args(method: str, args: Any) -> list[str]:
    """The databases a call names, as the client spelt them (without a ``@catalog#`` envelope), in order, once each.

    Empty for GLOBAL and unknown methods (they name no database for routing) and
    for pattern methods (see ``PATTERN_METHODS``).
    """
    spec = _SPECS.get(method)
    if spec is None or spec.kind in (Kind.GLOBAL_READ, Kind.GLOBAL_WRITE):
        return []
    found: list[str] = []
    for field in spec.db:
        found.extend(v for v in _values(args, field) if isinstance(v, str))

    def visit(struct: Any, fields: tuple[str, ...]) -> None:
        for f in fields:
            v = getattr(struct, f, None)
            if isinstance(v, str):
                found.append(v)

    for value in _struct_args(method, args):
        for struct in value if isinstance(value, list) else [value]:
            _walk_struct(struct, visit)
    out: list[str] = []
    for name in found:
        bare = _bare(name)
        if bare not in out and bare not in ("", _DB_EMPTY):
            out.append(bare)
    return out


def _struct_args(method: str, args: Any) -> list[Any]:
    """The args' values that are structs or lists of structs."""
    cls = _args_class(method)
    out: list[Any] = []
    for s in getattr(cls, "thrift_spec", None) or ():
        if s is None:
            continue
        value = getattr(args, s[2], None)
        if value is None:
            continue
        if s[1] == TType.STRUCT or (s[1] in (TType.LIST, TType.SET) and s[3][0] == TType.STRUCT):
            out.append(list(value) if isinstance(value, (list, set)) else value)
    return out


def target_in_args(method: str, args: Any) -> list[tuple[str, str]]:
    """The ``(database, table)`` objects a call reads or writes; table ``""``: the database itself.

    Names as the client spelt them (without a ``@catalog#`` envelope), in order,
    once each. Empty for GLOBAL, unknown and pattern methods.
    """
    spec = _SPECS.get(method)
    if spec is None or spec.kind in (Kind.GLOBAL_READ, Kind.GLOBAL_WRITE):
        return []
    out: list[tuple[str, str]] = []
    for target in spec.targets:
        for base in _values(args, target.base):
            dbs = [v for v in _values(base, target.db) if isinstance(v, str)]
            if not dbs:
                continue
            tables = [v for v in _values(base, target.table) if isinstance(v, str)] if target.table else []
            for table in tables or [""]:
                pair = (_bare(dbs[0]), table)
                if pair not in out:
                    out.append(pair)
    return out


def rename_args(method: str, args: Any, fn: Rename, on_table: Callable[[Any], None] | None = None) -> None:
    """Rename, in place, every database name in a call's args (patterns excepted).

    ``on_table`` (optional) is called with every ``Table`` struct in the args
    just before its rename (for rewriting view texts). Structural: the router decides
    whether a call is renamed at all (a GLOBAL call sent to the default catalog is not).
    """
    spec = _SPECS.get(method)
    if spec is None:
        return
    for field in spec.db:
        if "." not in field and "[]" not in field:
            value = getattr(args, field, None)
            if value is not None:
                setattr(args, field, _rename(fn, value))
    visit = _renamer(fn, on_table)
    for value in _struct_args(method, args):
        for struct in value if isinstance(value, list) else [value]:
            _walk_struct(struct, visit)


def visit_args(method: str, args: Any, visit: Callable[[Any, tuple[str, ...]], None]) -> None:
    """Call ``visit(holder, fields)`` for the args themselves (their direct database-name
    fields) and for every struct in them that holds a database name (patterns excepted).

    ``visit`` may change the fields in place (``catalog_names`` reads a struct's ``catName``
    beside its database name, so it needs the holder, not only the name).
    """
    spec = _SPECS.get(method)
    if spec is None:
        return
    direct = tuple(f for f in spec.db if "." not in f and "[]" not in f)
    if direct:
        visit(args, direct)
    for value in _struct_args(method, args):
        for struct in value if isinstance(value, list) else [value]:
            _walk_struct(struct, visit)


def visit_result(method: str, result_value: Any, visit: Callable[[Any, tuple[str, ...]], None]) -> Any:
    """Call ``visit(struct, fields)`` for every struct in a call's success value that holds a
    database name; returns the value."""
    if result_value is None:
        return None
    cls = _result_class(method)
    spec = getattr(cls, "thrift_spec", None) or ()
    success = spec[0] if spec and spec[0] is not None and spec[0][2] == "success" else None
    if success is not None:
        _walk(result_value, success[1], success[3], visit)
    return result_value


def _renamer(fn: Rename, on_table: Callable[[Any], None] | None) -> Callable[[Any, tuple[str, ...]], None]:
    def visit(struct: Any, fields: tuple[str, ...]) -> None:
        # The hook sees the names as they were (a view's own database before its rename).
        if on_table is not None and isinstance(struct, ttypes.Table):
            on_table(struct)
        for f in fields:
            v = getattr(struct, f, None)
            if v is not None:
                setattr(struct, f, _rename(fn, v))

    return visit


def rename_result(method: str, result_value: Any, fn: Rename, on_table: Callable[[Any], None] | None = None) -> Any:
    """Rename every database name in a call's success value; returns it (structs are renamed in place).

    ``on_table`` as for ``rename_args``.
    """
    if result_value is None:
        return None
    if method in _DB_LIST_RESULTS:
        return [_rename(fn, v) for v in result_value]
    cls = _result_class(method)
    spec = getattr(cls, "thrift_spec", None) or ()
    success = spec[0] if spec and spec[0] is not None and spec[0][2] == "success" else None
    if success is None:
        return result_value
    _walk(result_value, success[1], success[3], _renamer(fn, on_table))
    return result_value


def error_result(method: str, exc: Exception) -> Any | None:
    """The ``<method>_result`` carrying ``exc`` in the first exception field whose type fits.

    When none fits and the method declares a ``MetaException``, that field gets a
    MetaException with ``exc``'s message. ``None`` when the method declares no
    exception field (or only others that do not fit): the router then answers
    with a TApplicationException.

    Hive 4 gave some 2.3 methods exception fields of their own (``get_partitions_by_names``'s
    ``o3 InvalidObjectException``): a 2.3 client skips such a field and would see no answer at
    all, so 2.3's own fields are chosen first (a MetaException with the message where none fits),
    which is also what a Hive 2.3 metastore would answer a Hive 4 client.
    """
    cls = _result_class(method)
    if cls is None:
        return None
    fields = [
        s
        for s in getattr(cls, "thrift_spec", None) or ()
        if s is not None and s[2] != "success" and s[1] == TType.STRUCT
    ]
    hive2 = hive2_field_ids(cls)
    groups = [fields] if hive2 is None else [[s for s in fields if s[0] in hive2],
                                             [s for s in fields if s[0] not in hive2]]
    for group in groups:
        for s in group:
            if isinstance(exc, s[3][0]):
                return cls(**{s[2]: exc})
        for s in group:
            if s[3][0] is ttypes.MetaException:
                return cls(**{s[2]: ttypes.MetaException(message=_message(exc))})
    return None


def _message(exc: Exception) -> str:
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc)


def tables_in(value: Any) -> Iterator[Any]:
    """Every ``Table`` struct in a value (a struct, or a list of them)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    found: list[Any] = []

    def visit(struct: Any, fields: tuple[str, ...]) -> None:
        if isinstance(struct, ttypes.Table):
            found.append(struct)

    for item in items:
        if getattr(item, "thrift_spec", None) is not None:
            _walk_struct(item, visit)
    return iter(found)
