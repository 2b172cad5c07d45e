"""Model objects and errors <-> the generated Thrift types of ``idl/catalogd.thrift``.

Shared by the server and the client, so both sides translate the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from catalogd import errors
from catalogd.gen.catalogd_thrift import ttypes as t
from catalogd.model import (
    CatalogInfo,
    ClusterStatus,
    Column,
    Database,
    DatabaseUpdate,
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    Function,
    FunctionLanguage,
    MemberStatus,
    Partition,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    RefreshState,
    ReloadResult,
    Resource,
    RunStatus,
    Stage,
    StagePurpose,
    StageRequest,
    StageState,
    StatementResult,
    Statistics,
    Table,
    TableFormat,
    TableKind,
    TableUpdate,
    ViewUpdate,
)
from catalogd.names import NamespacePath, ObjectPath

_KINDS = {TableKind.MANAGED: t.TableKind.MANAGED, TableKind.EXTERNAL: t.TableKind.EXTERNAL,
          TableKind.VIEW: t.TableKind.VIEW}
_KINDS_BACK = {v: k for k, v in _KINDS.items()}


# ---------------------------------------------------------------- names

def namespace_to_thrift(path: NamespacePath) -> t.NamespacePath:
    return t.NamespacePath(catalog=path.catalog, database=path.database)


def namespace_from_thrift(path: t.NamespacePath) -> NamespacePath:
    if path is None or not path.database:
        raise errors.InvalidArgumentError("a database name is required")
    return NamespacePath(path.catalog or None, path.database)


def object_to_thrift(path: ObjectPath) -> t.ObjectPath:
    return t.ObjectPath(catalog=path.catalog, database=path.database, name=path.name)


def object_from_thrift(path: t.ObjectPath) -> ObjectPath:
    if path is None or not path.name:
        raise errors.InvalidArgumentError("an object name is required")
    return ObjectPath(path.catalog or None, path.database or None, path.name)


# ---------------------------------------------------------------- objects

def catalog_to_thrift(info: CatalogInfo) -> t.CatalogInfo:
    return t.CatalogInfo(name=info.name, type=info.type, isDefault=info.default,
                         defaultDatabase=info.default_database, readOnly=info.read_only,
                         metastore=info.metastore, warehouse=info.warehouse, atomicWrites=info.atomic_writes,
                         hmsEndpoint=info.hms_endpoint, hmsPrefix=info.hms_prefix, hmsTls=info.hms_tls,
                         hmsTruststore=info.hms_truststore, hmsTruststorePasswordEnv=info.hms_truststore_password_env,
                         jdbcUser=info.jdbc_user, jdbcDriverJar=info.jdbc_driver_jar,
                         hmsKerberosPrincipal=info.hms_kerberos_principal, icebergUri=info.iceberg_uri)


def catalog_from_thrift(info: t.CatalogInfo) -> CatalogInfo:
    return CatalogInfo(name=info.name, type=info.type, default=bool(info.isDefault),
                       default_database=info.defaultDatabase, read_only=bool(info.readOnly),
                       metastore=info.metastore, warehouse=info.warehouse,
                       atomic_writes=info.atomicWrites is not False, hms_endpoint=info.hmsEndpoint,
                       hms_prefix=info.hmsPrefix or "", hms_tls=bool(info.hmsTls),
                       hms_truststore=info.hmsTruststore, hms_truststore_password_env=info.hmsTruststorePasswordEnv,
                       jdbc_user=info.jdbcUser, jdbc_driver_jar=info.jdbcDriverJar,
                       hms_kerberos_principal=info.hmsKerberosPrincipal, iceberg_uri=info.icebergUri)


def database_to_thrift(db: Database) -> t.Database:
    return t.Database(name=db.name, catalog=db.catalog or None, comment=db.comment, location=db.location,
                      properties=dict(db.properties), owner=db.owner)


def database_from_thrift(db: t.Database) -> Database:
    return Database(name=db.name, catalog=db.catalog or "", comment=db.comment, location=db.location,
                    properties=dict(db.properties or {}), owner=db.owner)


def columns_to_thrift(columns: list[Column]) -> list[t.Column]:
    return [t.Column(name=c.name, type=c.type, comment=c.comment) for c in columns]


def columns_from_thrift(columns: list[t.Column] | None) -> list[Column]:
    return [Column(c.name, c.type, c.comment) for c in columns or []]


def table_to_thrift(table: Table) -> t.Table:
    return t.Table(
        name=table.name,
        database=table.database,
        catalog=table.catalog or None,
        columns=columns_to_thrift(table.columns),
        partitionKeys=columns_to_thrift(table.partition_keys),
        format=table.format.value if table.format else None,
        location=table.location,
        kind=_KINDS[table.kind],
        comment=table.comment,
        properties=dict(table.properties),
        owner=table.owner,
        created=table.created,
        statistics=statistics_to_thrift(table.statistics),
        viewText=table.view_text,
        viewExpandedText=table.view_expanded_text,
    )


def statistics_to_thrift(stats: Statistics) -> t.Statistics:
    return t.Statistics(rowCount=stats.row_count, totalSize=stats.total_size, fileCount=stats.file_count)


def statistics_from_thrift(stats: t.Statistics | None) -> Statistics:
    if stats is None:
        return Statistics()
    return Statistics(row_count=stats.rowCount, total_size=stats.totalSize, file_count=stats.fileCount)


def partition_to_thrift(partition: Partition) -> t.Partition:
    return t.Partition(values=list(partition.values), keys=list(partition.keys), location=partition.location,
                       properties=dict(partition.properties), created=partition.created,
                       statistics=statistics_to_thrift(partition.statistics))


def partition_from_thrift(partition: t.Partition) -> Partition:
    return Partition(values=list(partition.values or []), keys=list(partition.keys or []),
                     location=partition.location, properties=dict(partition.properties or {}),
                     created=partition.created, statistics=statistics_from_thrift(partition.statistics))


def table_from_thrift(table: t.Table) -> Table:
    return Table(
        name=table.name,
        database=table.database,
        catalog=table.catalog or "",
        columns=columns_from_thrift(table.columns),
        partition_keys=columns_from_thrift(table.partitionKeys),
        format=TableFormat.parse(table.format) if table.format else None,
        location=table.location,
        kind=_KINDS_BACK.get(table.kind, TableKind.MANAGED),
        comment=table.comment,
        properties=dict(table.properties or {}),
        owner=table.owner,
        created=table.created,
        statistics=statistics_from_thrift(table.statistics),
        view_text=table.viewText,
        view_expanded_text=table.viewExpandedText,
    )


def function_to_thrift(function: Function) -> t.Function:
    return t.Function(name=function.name, database=function.database or None, catalog=function.catalog or None,
                      className=function.class_name, language=function.language.value,
                      resources=[t.Resource(type=r.type, uri=r.uri) for r in function.resources],
                      owner=function.owner, created=function.created)


def function_from_thrift(function: t.Function) -> Function:
    if function is None or not function.name:
        raise errors.InvalidArgumentError("a function name is required")
    return Function(name=function.name, database=function.database or "", catalog=function.catalog or "",
                    class_name=function.className or "",
                    language=FunctionLanguage.parse(function.language or "java"),
                    resources=[Resource((r.type or "").strip().lower(), r.uri or "") for r in function.resources or []],
                    owner=function.owner, created=function.created)


def view_update_to_thrift(update: ViewUpdate) -> t.ViewUpdate:
    return t.ViewUpdate(query=update.query, comment=update.comment, setProperties=dict(update.set_properties),
                        unsetProperties=list(update.unset_properties))


def view_update_from_thrift(update: t.ViewUpdate | None) -> ViewUpdate:
    if update is None:
        return ViewUpdate()
    return ViewUpdate(query=update.query, comment=update.comment, set_properties=dict(update.setProperties or {}),
                      unset_properties=list(update.unsetProperties or []))


def database_update_to_thrift(update: DatabaseUpdate) -> t.DatabaseUpdate:
    return t.DatabaseUpdate(comment=update.comment, setProperties=dict(update.set_properties),
                            unsetProperties=list(update.unset_properties))


def database_update_from_thrift(update: t.DatabaseUpdate | None) -> DatabaseUpdate:
    if update is None:
        return DatabaseUpdate()
    return DatabaseUpdate(comment=update.comment, set_properties=dict(update.setProperties or {}),
                          unset_properties=list(update.unsetProperties or []))


def table_update_to_thrift(update: TableUpdate) -> t.TableUpdate:
    return t.TableUpdate(comment=update.comment, setProperties=dict(update.set_properties),
                         unsetProperties=list(update.unset_properties),
                         addColumns=columns_to_thrift(update.add_columns))


def table_update_from_thrift(update: t.TableUpdate | None) -> TableUpdate:
    if update is None:
        return TableUpdate()
    return TableUpdate(comment=update.comment, set_properties=dict(update.setProperties or {}),
                       unset_properties=list(update.unsetProperties or []),
                       add_columns=columns_from_thrift(update.addColumns))


# ---------------------------------------------------------------- stages

_PURPOSES = {p: getattr(t.StagePurpose, p.value) for p in StagePurpose}
_PURPOSES_BACK = {v: k for k, v in _PURPOSES.items()}
_STATES = {s: getattr(t.StageState, s.value) for s in StageState}
_STATES_BACK = {v: k for k, v in _STATES.items()}


def _purpose_from_thrift(value: int | None) -> StagePurpose:
    if value not in _PURPOSES_BACK:
        raise errors.InvalidArgumentError(f"unknown stage purpose {value!r}")
    return _PURPOSES_BACK[value]


def stage_request_to_thrift(request: StageRequest) -> t.StageRequest:
    return t.StageRequest(
        target=t.ObjectPath(catalog=request.catalog or None, database=request.database or None,
                            name=request.target),
        purpose=_PURPOSES[request.purpose],
        columns=columns_to_thrift(request.columns),
        partitionKeys=columns_to_thrift(request.partition_keys),
        format=request.format.value if request.format else None,
        properties=dict(request.properties),
        comment=request.comment,
        leaseMillis=round(request.lease * 1000) if request.lease else None,
        owner=request.owner,
    )


def stage_request_from_thrift(request: t.StageRequest) -> StageRequest:
    if request is None:
        raise errors.InvalidArgumentError("a stage request is required")
    target = object_from_thrift(request.target)
    if request.leaseMillis is not None and request.leaseMillis < 0:
        raise errors.InvalidArgumentError(f"the lease must not be negative, got {request.leaseMillis} ms")
    return StageRequest(
        catalog=target.catalog or "",
        database=target.database or "",
        target=target.name,
        purpose=_purpose_from_thrift(request.purpose),
        columns=columns_from_thrift(request.columns),
        partition_keys=columns_from_thrift(request.partitionKeys),
        format=TableFormat.parse(request.format) if request.format else None,
        properties=dict(request.properties or {}),
        comment=request.comment,
        lease=request.leaseMillis / 1000 if request.leaseMillis else None,
        owner=request.owner,
    )


def stage_to_thrift(stage: Stage) -> t.Stage:
    return t.Stage(
        id=stage.id,
        target=t.ObjectPath(catalog=stage.catalog, database=stage.database, name=stage.target),
        purpose=_PURPOSES[stage.purpose],
        state=_STATES[stage.state],
        owner=stage.owner,
        createdMillis=stage.created,
        leaseDeadlineMillis=stage.lease_deadline,
        stagingTable=stage.staging_table,
        location=stage.location,
        columns=columns_to_thrift(stage.columns),
        partitionKeys=columns_to_thrift(stage.partition_keys),
        format=stage.format.value if stage.format else None,
        message=stage.message,
    )


def stage_from_thrift(stage: t.Stage) -> Stage:
    return Stage(
        id=stage.id,
        catalog=stage.target.catalog or "",
        database=stage.target.database or "",
        target=stage.target.name,
        purpose=_purpose_from_thrift(stage.purpose),
        state=_STATES_BACK.get(stage.state, StageState.OPEN),
        owner=stage.owner,
        created=stage.createdMillis,
        lease_deadline=stage.leaseDeadlineMillis,
        staging_table=stage.stagingTable,
        location=stage.location,
        columns=columns_from_thrift(stage.columns),
        partition_keys=columns_from_thrift(stage.partitionKeys),
        format=TableFormat.parse(stage.format) if stage.format else None,
        message=stage.message,
    )


# ---------------------------------------------------------------- configuration

def reload_result_to_thrift(result: ReloadResult) -> t.ReloadResult:
    return t.ReloadResult(added=result.added, removed=result.removed, changed=result.changed,
                          unchanged=result.unchanged, restartNeeded=result.restart_needed, source=result.source)


def reload_result_from_thrift(result: t.ReloadResult) -> ReloadResult:
    return ReloadResult(added=list(result.added or []), removed=list(result.removed or []),
                        changed=list(result.changed or []), unchanged=list(result.unchanged or []),
                        restart_needed=list(result.restartNeeded or []), source=result.source or "")


def cluster_status_to_thrift(status: ClusterStatus) -> t.ClusterStatus:
    return t.ClusterStatus(
        clustered=status.clustered,
        members=[t.MemberStatus(address=m.address, hmsUri=m.hms_uri, httpAddress=m.http_address, up=m.up,
                                problem=m.problem, leader=m.leader, answering=m.answering) for m in status.members],
        leader=status.leader, leaderSince=status.leader_since, epoch=status.epoch, leaseAge=status.lease_age,
        lease=status.lease, leaseStore=status.lease_store, problem=status.problem, leading=status.leading)


def cluster_status_from_thrift(status: t.ClusterStatus) -> ClusterStatus:
    return ClusterStatus(
        clustered=bool(status.clustered),
        members=[MemberStatus(address=m.address or "", hms_uri=m.hmsUri or "", http_address=m.httpAddress or "",
                              up=bool(m.up), problem=m.problem, leader=bool(m.leader), answering=bool(m.answering))
                 for m in status.members or []],
        leader=status.leader, leader_since=status.leaderSince, epoch=int(status.epoch or 0),
        lease_age=status.leaseAge, lease=float(status.lease or 0.0), lease_store=status.leaseStore,
        problem=status.problem, leading=bool(status.leading))


# ---------------------------------------------------------------- errors

# ---------------------------------------------------------------- dynamic tables

def _enum_to_thrift(enum_type: Any, value: object) -> int:
    # Thrift enums are plain classes with a name table (no Python Enum).
    number: int = enum_type._NAMES_TO_VALUES[str(value)]
    return number


def _enum_from_thrift(enum_type: type, model: type, value: int | None, default: object) -> object:
    if value is None:
        return default
    return model(enum_type._VALUES_TO_NAMES[value])  # type: ignore[attr-defined]


def refresh_run_to_thrift(run: RefreshRun) -> t.RefreshRun:
    return t.RefreshRun(
        id=run.id, table=run.table, trigger=run.trigger, status=_enum_to_thrift(t.RunStatus, run.status),
        scheduleTime=run.schedule_time, partition=dict(run.partition), submitted=run.submitted,
        started=run.started, ended=run.ended, error=run.error, rows=run.rows, applicationId=run.application_id,
        inputFiles=run.input_files, sourcePartitions=list(run.source_partitions), phase=run.phase, fired=run.fired,
    )


def refresh_run_from_thrift(run: t.RefreshRun) -> RefreshRun:
    return RefreshRun(
        id=run.id, table=run.table, trigger=run.trigger,
        status=_enum_from_thrift(t.RunStatus, RunStatus, run.status, RunStatus.FAILED),  # type: ignore[arg-type]
        schedule_time=run.scheduleTime, partition=dict(run.partition or {}), submitted=run.submitted,
        started=run.started, ended=run.ended, error=run.error, rows=run.rows, application_id=run.applicationId,
        input_files=run.inputFiles, source_partitions=list(run.sourcePartitions or []), phase=run.phase,
        fired=run.fired,
    )


def refresh_request_to_thrift(tables: list[str], schedule_time: str | None, partition: dict[str, str],
                              configuration: dict[str, str], trigger: str) -> t.RefreshRequest:
    """A request to refresh ``tables`` now (trigger ``manual`` or ``api``)."""
    return t.RefreshRequest(tables=list(tables), scheduleTime=schedule_time, partition=dict(partition),
                            configuration=dict(configuration), trigger=trigger)


def refresh_job_to_thrift(job: RefreshJob) -> t.RefreshJob:
    return t.RefreshJob(jobId=job.id, status=_enum_to_thrift(t.RunStatus, job.status),
                        runs=[refresh_run_to_thrift(r) for r in job.runs], clusterInfo=dict(job.cluster_info),
                        error=job.error)


def refresh_job_from_thrift(job: t.RefreshJob) -> RefreshJob:
    return RefreshJob(id=job.jobId,
                      status=_enum_from_thrift(t.RunStatus, RunStatus, job.status, RunStatus.FAILED),  # type: ignore[arg-type]
                      runs=[refresh_run_from_thrift(r) for r in job.runs or []],
                      cluster_info=dict(job.clusterInfo or {}), error=job.error)


def dynamic_table_to_thrift(dt: DynamicTable) -> t.DynamicTable:
    return t.DynamicTable(
        path=t.ObjectPath(dt.catalog, dt.database, dt.name), query=dt.query, expandedQuery=dt.expanded_query,
        freshness=dt.freshness,
        declaredMode=_enum_to_thrift(t.RefreshMode, dt.declared_mode) if dt.declared_mode else None,
        refreshMode=_enum_to_thrift(t.RefreshMode, dt.refresh_mode),
        state=_enum_to_thrift(t.RefreshState, dt.state), jobDetail=json.dumps(dt.job_detail, sort_keys=True),
        columns=columns_to_thrift(dt.columns), partitionKeys=columns_to_thrift(dt.partition_keys),
        options=dict(dt.options), comment=dt.comment, schedule=dt.schedule, created=dt.created,
        lastRefresh=refresh_run_to_thrift(dt.last_refresh) if dt.last_refresh else None,
        freshnessLag=dt.freshness_lag, withinTarget=dt.within_target, dataTime=dt.data_time,
        dataTimeRun=refresh_run_to_thrift(dt.data_time_run) if dt.data_time_run else None,
    )


def dynamic_table_from_thrift(dt: t.DynamicTable) -> DynamicTable:
    return DynamicTable(
        catalog=dt.path.catalog or "", database=dt.path.database or "", name=dt.path.name, query=dt.query,
        freshness=dt.freshness, expanded_query=dt.expandedQuery,
        declared_mode=_enum_from_thrift(t.RefreshMode, RefreshMode, dt.declaredMode, None),  # type: ignore[arg-type]
        refresh_mode=_enum_from_thrift(t.RefreshMode, RefreshMode, dt.refreshMode, RefreshMode.FULL),  # type: ignore[arg-type]
        state=_enum_from_thrift(t.RefreshState, RefreshState, dt.state, RefreshState.INITIALIZING),  # type: ignore[arg-type]
        job_detail=json.loads(dt.jobDetail or "{}"), columns=columns_from_thrift(dt.columns),
        partition_keys=columns_from_thrift(dt.partitionKeys), options=dict(dt.options or {}), comment=dt.comment,
        schedule=dt.schedule, created=dt.created,
        last_refresh=refresh_run_from_thrift(dt.lastRefresh) if dt.lastRefresh else None,
        freshness_lag=dt.freshnessLag, within_target=dt.withinTarget, data_time=dt.dataTime,
        data_time_run=refresh_run_from_thrift(dt.dataTimeRun) if dt.dataTimeRun else None,
    )


def dynamic_spec_to_thrift(spec: DynamicTableSpec) -> t.DynamicTableSpec:
    return t.DynamicTableSpec(
        path=t.ObjectPath(spec.catalog or None, spec.database or None, spec.name), query=spec.query,
        freshness=spec.freshness,
        refreshMode=_enum_to_thrift(t.RefreshMode, spec.refresh_mode) if spec.refresh_mode else None,
        partitionedBy=list(spec.partitioned_by), options=dict(spec.options), comment=spec.comment,
    )


def dynamic_spec_from_thrift(spec: t.DynamicTableSpec) -> DynamicTableSpec:
    path = object_from_thrift(spec.path)
    return DynamicTableSpec(
        catalog=path.catalog or "", database=path.database or "", name=path.name, query=spec.query,
        freshness=spec.freshness,
        refresh_mode=_enum_from_thrift(t.RefreshMode, RefreshMode, spec.refreshMode, None),  # type: ignore[arg-type]
        partitioned_by=list(spec.partitionedBy or []), options=dict(spec.options or {}), comment=spec.comment,
    )


def dynamic_change_to_thrift(change: DynamicTableChange) -> t.DynamicTableChange:
    return t.DynamicTableChange(
        freshness=change.freshness,
        refreshMode=_enum_to_thrift(t.RefreshMode, change.refresh_mode) if change.refresh_mode else None,
        action=change.action,
    )


def dynamic_change_from_thrift(change: t.DynamicTableChange | None) -> DynamicTableChange:
    if change is None:
        return DynamicTableChange()
    return DynamicTableChange(
        freshness=change.freshness,
        refresh_mode=_enum_from_thrift(t.RefreshMode, RefreshMode, change.refreshMode, None),  # type: ignore[arg-type]
        action=change.action,
    )


def statement_result_to_thrift(result: StatementResult) -> t.StatementResult:
    return t.StatementResult(kind=result.kind, message=result.message,
                             table=dynamic_table_to_thrift(result.table) if result.table else None,
                             job=refresh_job_to_thrift(result.job) if result.job else None)


def statement_result_from_thrift(result: t.StatementResult) -> StatementResult:
    return StatementResult(kind=result.kind, message=result.message,
                           table=dynamic_table_from_thrift(result.table) if result.table else None,
                           job=refresh_job_from_thrift(result.job) if result.job else None)


def error_to_thrift(error: errors.CatalogError) -> Exception:
    """The IDL exception for a catalogd error (the one place the server maps them)."""
    message = error.message
    if isinstance(error, errors.NotFoundError):
        return t.NotFound(message=message, objectType=error.object_type)
    if isinstance(error, errors.AlreadyExistsError):
        return t.AlreadyExists(message=message, objectType=error.object_type)
    simple: dict[type[errors.CatalogError], Callable[..., Exception]] = {
        errors.DatabaseNotEmptyError: t.NotEmpty,
        errors.InvalidArgumentError: t.InvalidArgument,
        errors.UnsupportedError: t.Unsupported,
        errors.MetastoreUnavailableError: t.MetastoreUnavailable,
        errors.PermissionDeniedError: t.PermissionDenied,
        errors.ConflictError: t.Conflict,
        errors.ConfigError: t.InvalidArgument,
        errors.UsageError: t.InvalidArgument,
    }
    for cls, exc in simple.items():
        if isinstance(error, cls):
            return exc(message=message)
    return t.InternalError(message=message)


_FROM_THRIFT: dict[type[Exception], type[errors.CatalogError]] = {
    t.NotEmpty: errors.DatabaseNotEmptyError,
    t.InvalidArgument: errors.InvalidArgumentError,
    t.Unsupported: errors.UnsupportedError,
    t.MetastoreUnavailable: errors.MetastoreUnavailableError,
    t.PermissionDenied: errors.PermissionDeniedError,
    t.Conflict: errors.ConflictError,
    t.InternalError: errors.InternalError,
}

#: Every IDL exception, for ``except`` clauses in the client.
THRIFT_ERRORS: tuple[type[Exception], ...] = (t.NotFound, t.AlreadyExists, *_FROM_THRIFT)


def error_from_thrift(exc: Exception) -> errors.CatalogError:
    if isinstance(exc, t.NotFound):
        return errors.error_for("not-found", exc.message, exc.objectType)
    if isinstance(exc, t.AlreadyExists):
        return errors.error_for("already-exists", exc.message, exc.objectType)
    cls = _FROM_THRIFT.get(type(exc), errors.InternalError)
    return cls(getattr(exc, "message", str(exc)))
