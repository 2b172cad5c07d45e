"""The role every operation needs: each Thrift RPC, each REST route, each kind of HMS call.

These tables are the roles table of docs/security.md; a test fails when an RPC of the IDL is missing here.
"""

from __future__ import annotations

from catalogd.auth.model import Role

__all__ = ["HMS_ADMIN_METHODS", "JOB_STAGE_RPCS", "OWNED_STAGE_RPCS", "REST_ROLES", "THRIFT_ROLES", "hms_role"]

_R, _W, _A = Role.READER, Role.WRITER, Role.ADMIN

#: CatalogService RPC -> the role it needs on the catalog it names (daemon-wide ones: on "*").
THRIFT_ROLES: dict[str, Role] = {
    # reads; ping and authenticate are open to every caller (a connection authenticates with the second)
    "ping": _R,
    "authenticate": _R,
    "listCatalogs": _R,
    "getCatalog": _R,
    "listDatabases": _R,
    "getDatabase": _R,
    "databaseExists": _R,
    "listTables": _R,
    "getTable": _R,
    "tableExists": _R,
    "listPartitions": _R,
    "getPartition": _R,
    "listViews": _R,
    "getView": _R,
    "listFunctions": _R,
    "getFunction": _R,
    "listStages": _R,
    "getStage": _R,
    "listDynamicTables": _R,
    "getDynamicTable": _R,
    "dynamicTableHistory": _R,
    "getRefreshJob": _R,
    "clusterStatus": _R,
    # DDL
    "createDatabase": _W,
    "alterDatabase": _W,
    "renameDatabase": _W,
    "dropDatabase": _W,
    "createTable": _W,
    "alterTable": _W,
    "renameTable": _W,
    "dropTable": _W,
    "addPartition": _W,
    "dropPartition": _W,
    "createView": _W,
    "alterView": _W,
    "renameView": _W,
    "dropView": _W,
    "createFunction": _W,
    "alterFunction": _W,
    "renameFunction": _W,
    "dropFunction": _W,
    # stages: heartbeat, commit and abort also need the stage's owner or an admin (OWNED_STAGE_RPCS)
    "beginStage": _W,
    "heartbeatStage": _W,
    "commitStage": _W,
    "abortStage": _W,
    # dynamic tables; a statement needs what its verb needs (the handler checks; SHOW CREATE only reader)
    "createDynamicTable": _W,
    "refreshDynamicTables": _W,
    "executeStatement": _W,
    "alterDynamicTable": _A,
    "dropDynamicTable": _A,
    # daemon-wide
    "reloadConfig": _A,
}

#: Stage RPCs only the stage's owner (the principal that began it) or an admin may make.
OWNED_STAGE_RPCS = frozenset({"heartbeatStage", "commitStage", "abortStage"})
#: What a refresh job's minted token may do beyond reading: its own table's stages.
JOB_STAGE_RPCS = frozenset({"beginStage", "heartbeatStage", "commitStage", "abortStage", "getStage"})

#: "METHOD path" of the HTTP API -> the role it needs; a route not listed (``/healthz``,
#: ``/readyz``) is open to every caller. ``{jobId}`` stands for any job id.
REST_ROLES: dict[str, Role] = {
    "GET /metrics": _R,
    "GET /v3/openapi.json": _R,
    "GET /openapi.json": _R,
    "POST /v3/dynamic-tables/refresh": _W,
    "GET /v3/dynamic-tables/refresh/{jobId}": _R,
    "GET /v3/dynamic-tables": _R,
    "GET /v3/dynamic-tables/{table}/runs": _R,
    "GET /v3/stages": _R,
    "GET /v3/health": _R,
}

#: HMS methods that manage the metastore's own roles and privileges: admin.
HMS_ADMIN_METHODS = frozenset({
    "create_role", "drop_role", "grant_role", "revoke_role", "grant_revoke_role", "grant_privileges",
    "revoke_privileges", "grant_revoke_privileges", "setMetaConf", "add_master_key", "update_master_key",
    "remove_master_key", "add_token", "remove_token",
    # Hive 3.1 / 4.x: the metastore's privileges and properties, its connections to other databases,
    # workload management, scheduled queries (run as any user), replication state, the compactor's own calls
    "refresh_privileges", "set_properties", "create_dataconnector_req", "alter_dataconnector_req",
    "drop_dataconnector_req", "create_resource_plan", "alter_resource_plan", "drop_resource_plan",
    "create_wm_trigger", "alter_wm_trigger", "drop_wm_trigger", "create_wm_pool", "alter_wm_pool", "drop_wm_pool",
    "create_or_update_wm_mapping", "drop_wm_mapping", "create_or_drop_wm_trigger_to_pool_mapping",
    "scheduled_query_maintenance", "scheduled_query_poll", "scheduled_query_progress", "seed_txn_id",
    "seed_write_id", "repl_tbl_writeid_state", "add_replication_metrics", "find_next_compact", "find_next_compact2",
    "update_compactor_state", "mark_cleaned", "mark_compacted", "mark_failed", "mark_refused", "set_hadoop_jobid",
    "update_compaction_metrics_data", "remove_compaction_metrics_data",
})
#: Global HMS writes a reader makes while reading (locks, transactions, its session's delegation tokens).
HMS_READER_WRITES = frozenset({
    "lock", "check_lock", "unlock", "heartbeat", "heartbeat_txn_range", "open_txns", "commit_txn", "abort_txn",
    "abort_txns", "get_delegation_token", "renew_delegation_token", "cancel_delegation_token", "show_locks",
    # Hive 4: a reader's open transaction records the write ids it reads (for the cleaner).
    "add_write_ids_to_min_history",
})


def hms_role(kind: str | None, method: str = "") -> Role:
    """The role an HMS call of ``kind`` (``catalogd.hms.methods.Kind`` value) needs on its catalog.

    ``read``/``global-read``: reader; ``write``: writer; ``global-write``: reader for the writes
    a reader's session makes (locks, transactions), admin for the metastore's roles, privileges
    and keys, else writer. A method the IDL does not know (``None``) needs admin: catalogd cannot
    tell whether it writes.
    """
    if method in HMS_ADMIN_METHODS:
        return _A
    if kind in ("read", "global-read") or method in HMS_READER_WRITES:
        return _R
    if kind in ("write", "global-write"):
        return _W
    return _A
