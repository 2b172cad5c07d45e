"""The JSON form of each CLI result: these field names and their order are an interface.

docs/cli.md ("Output") documents them; scripts read them. ``to_json`` turns a result
(a model object or a ``catalogd.cli.results`` view) into plain lists and dicts.
"""

from __future__ import annotations

import datetime
from functools import singledispatch
from typing import Any

from catalogd.cli.human import human_duration, within_target_reason
from catalogd.cli.results import (
    AuditEntries,
    Catalogs,
    DescribedTable,
    Done,
    DynamicTables,
    IcebergSettings,
    Names,
    PartitionDropped,
    Partitions,
    Runs,
    SparkSettings,
    StageAborted,
    StageCommitted,
    Stages,
    View,
)
from catalogd.model import (
    CatalogInfo,
    ClusterStatus,
    Column,
    Database,
    DynamicTable,
    Function,
    Partition,
    RefreshJob,
    RefreshRun,
    ReloadResult,
    Stage,
    StatementResult,
    Statistics,
    Table,
)


def iso_millis(ms: int | None) -> str | None:
    """Milliseconds since the epoch as ISO 8601 UTC, ``2026-11-22T18:44:45.120Z``."""
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@singledispatch
def to_json(result: object) -> Any:
    """The JSON value of a result."""
    raise TypeError(f"no JSON form for {type(result).__name__}")


def _columns_json(columns: list[Column]) -> list[dict[str, Any]]:
    return [{"name": c.name, "type": c.type, "comment": c.comment} for c in columns]


@to_json.register
def _audit_json(result: AuditEntries) -> list[dict[str, Any]]:
    return list(result.entries)


@to_json.register
def _names_json(result: Names) -> list[str]:
    return result.names


@to_json.register
def _catalogs_json(result: Catalogs) -> list[str]:
    return [c.name for c in result.catalogs]


@to_json.register
def catalog_json(info: CatalogInfo) -> dict[str, Any]:
    # read_only comes last: the order this object has always had.
    form: dict[str, Any] = {
        "name": info.name, "type": info.type, "default": info.default, "default_database": info.default_database,
        "metastore": info.metastore, "warehouse": info.warehouse, "atomic_writes": info.atomic_writes}
    if info.type == "jdbc":  # metastore is its JDBC URL (no credentials)
        form.update(jdbc_user=info.jdbc_user, jdbc_driver_jar=info.jdbc_driver_jar)
    form["read_only"] = info.read_only
    return form


@to_json.register
def _spark_settings_json(result: SparkSettings) -> dict[str, str]:
    return result.settings


@to_json.register
def _iceberg_settings_json(result: IcebergSettings) -> dict[str, Any]:
    s = result.settings
    return {"catalog": s.catalog, "name": s.name, "uri": s.uri, "warehouse": s.warehouse, "auth": s.auth,
            "token_env": s.token_env if s.auth else None, "ca": s.ca, "pyiceberg": s.pyiceberg, "spark": s.spark,
            "trino": s.trino, "duckdb": s.duckdb, "flink": s.flink, "notes": s.notes}


@to_json.register
def _done_json(result: Done) -> dict[str, str]:
    return {result.action: result.name, "to": result.to} if result.to is not None else {result.action: result.name}


@to_json.register
def _reload_json(result: ReloadResult) -> dict[str, Any]:
    return {"source": result.source, "added": result.added, "removed": result.removed, "changed": result.changed,
            "unchanged": result.unchanged, "restart_needed": result.restart_needed}


def iso_seconds(seconds: float | None) -> str | None:
    """Epoch seconds as ISO-8601 UTC with milliseconds (None stays None)."""
    return None if seconds is None else iso_millis(int(seconds * 1000))


@to_json.register
def _cluster_status_json(status: ClusterStatus) -> dict[str, Any]:
    return {
        "clustered": status.clustered,
        "leader": status.leader,
        "leader_since": iso_seconds(status.leader_since),
        "epoch": status.epoch,
        "lease_age": None if status.lease_age is None else round(status.lease_age, 3),
        "lease": status.lease,
        "lease_store": status.lease_store,
        "leading": status.leading,
        "problem": status.problem,
        "members": [{"address": m.address, "up": m.up, "leader": m.leader, "answering": m.answering,
                     "problem": m.problem, "hms_uri": m.hms_uri, "http_address": m.http_address}
                    for m in status.members],
    }


@to_json.register
def _database_json(db: Database) -> dict[str, Any]:
    return {"catalog": db.catalog, "name": db.name, "comment": db.comment, "location": db.location,
            "properties": db.properties, "owner": db.owner}


def _statistics_json(stats: Statistics) -> dict[str, int | None]:
    return {"row_count": stats.row_count, "total_size": stats.total_size, "file_count": stats.file_count}


@to_json.register
def _table_json(table: Table) -> dict[str, Any]:
    return {
        "catalog": table.catalog,
        "database": table.database,
        "name": table.name,
        "kind": table.kind.value,
        "columns": _columns_json(table.columns),
        "partition_keys": _columns_json(table.partition_keys),
        "format": table.format.value if table.format else None,
        "location": table.location,
        "properties": table.properties,
        "comment": table.comment,
        "owner": table.owner,
        "created": table.created,
        "statistics": _statistics_json(table.statistics),
    }


@to_json.register
def _described_table_json(result: DescribedTable) -> dict[str, Any]:
    return _table_json(result.table)


@to_json.register
def _partition_json(partition: Partition) -> dict[str, Any]:
    return {
        "name": partition.name,
        "values": partition.spec,
        "location": partition.location,
        "properties": partition.properties,
        "created": partition.created,
        "statistics": _statistics_json(partition.statistics),
    }


@to_json.register
def _partitions_json(result: Partitions) -> list[dict[str, Any]]:
    return [_partition_json(p) for p in result.partitions]


@to_json.register
def _partition_dropped_json(result: PartitionDropped) -> dict[str, str]:
    return {"dropped": result.name, "table": result.table}


@to_json.register
def _view_json(result: View) -> dict[str, Any]:
    view = result.view
    return {
        "catalog": view.catalog,
        "database": view.database,
        "name": view.name,
        "columns": _columns_json(view.columns),
        "query": view.view_text,
        "expanded_query": view.view_expanded_text,
        "comment": view.comment,
        "properties": view.properties,
        "owner": view.owner,
        "created": view.created,
    }


@to_json.register
def _function_json(function: Function) -> dict[str, Any]:
    return {
        "catalog": function.catalog,
        "database": function.database,
        "name": function.name,
        "class_name": function.class_name,
        "language": function.language.value,
        "resources": [{"type": r.type, "uri": r.uri} for r in function.resources],
        "owner": function.owner,
        "created": function.created,
    }


@to_json.register
def stage_json(stage: Stage) -> dict[str, Any]:
    return {
        "id": stage.id,
        "target": stage.target_name,
        "purpose": stage.purpose.value,
        "state": stage.state.value,
        "owner": stage.owner,
        "created": iso_millis(stage.created),
        "lease_deadline": iso_millis(stage.lease_deadline),
        "staging_table": f"{stage.database}.{stage.staging_table}" if stage.staging_table else None,
        "message": stage.message,
    }


@to_json.register
def _stages_json(result: Stages) -> list[dict[str, Any]]:
    return [stage_json(s) for s in result.stages]


@to_json.register
def _stage_committed_json(result: StageCommitted) -> dict[str, Any]:
    return stage_json(result.stage)


@to_json.register
def _stage_aborted_json(result: StageAborted) -> dict[str, Any]:
    return stage_json(result.stage)


@to_json.register
def _run_json(run: RefreshRun) -> dict[str, object]:
    return run.to_json()


@to_json.register
def _runs_json(result: Runs) -> list[dict[str, object]]:
    return [r.to_json() for r in result.runs]


@to_json.register
def _job_json(job: RefreshJob) -> dict[str, Any]:
    return {"job_id": job.id, "status": job.status.value, "error": job.error, "cluster_info": job.cluster_info,
            "runs": [r.to_json() for r in job.runs]}


@to_json.register
def _dynamic_table_json(dt: DynamicTable) -> dict[str, Any]:
    return {
        "catalog": dt.catalog,
        "database": dt.database,
        "name": dt.name,
        "query": dt.query,
        "expanded_query": dt.expanded_query,
        "freshness": dt.freshness,
        "declared_mode": dt.declared_mode.value if dt.declared_mode else None,
        "refresh_mode": dt.refresh_mode.value,
        "state": dt.state.value,
        "job_detail": dt.job_detail,
        "columns": _columns_json(dt.columns),
        "partition_keys": _columns_json(dt.partition_keys),
        "options": dt.options,
        "comment": dt.comment,
        "schedule": dt.schedule,
        "created": dt.created,
        "last_refresh": dt.last_refresh.to_json() if dt.last_refresh else None,
        "freshness_lag": dt.freshness_lag,
        "within_target": dt.within_target,
        # Additions for people and scripts that show them: the same facts in words.
        "freshness_lag_text": human_duration(dt.freshness_lag) if dt.freshness_lag is not None else None,
        "within_target_reason": within_target_reason(dt),
        "data_time": dt.data_time,
        "data_time_run": dt.data_time_run.id if dt.data_time_run else None,
    }


@to_json.register
def _dynamic_tables_json(result: DynamicTables) -> list[dict[str, Any]]:
    return [_dynamic_table_json(d) for d in result.tables]


@to_json.register
def _statement_json(result: StatementResult) -> dict[str, Any]:
    return {"kind": result.kind, "message": result.message,
            "table": _dynamic_table_json(result.table) if result.table else None,
            "job": _job_json(result.job) if result.job else None}
