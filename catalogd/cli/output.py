"""Prints what a command returned: as aligned text tables for people, or as JSON with ``--json``.

The JSON field names are an interface (the README's "Output" paragraph lists them); the
text is for people. Each result type has one ``to_json`` and one ``show_text`` rendering,
registered below by type. Errors are printed here too: one ``error: <kind>: <message>`` line.
"""

from __future__ import annotations

import datetime
import json
import sys
from functools import singledispatch
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from catalogd.cli.failures import ConfigRejected
from catalogd.cli.results import (
    Catalogs,
    Done,
    DynamicTables,
    Message,
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
from catalogd.errors import CatalogError
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DynamicTable,
    Function,
    Partition,
    RefreshJob,
    RefreshRun,
    ReloadResult,
    Stage,
    StageState,
    StatementResult,
    Statistics,
    Table,
)

# Piped output is read by scripts and people alike: never cut a cell to fit 80 columns.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 1000)


def emit(result: object, as_json: bool) -> None:
    """Print a command's result (None: the command printed nothing)."""
    if result is None:
        return
    if isinstance(result, Message):
        click.echo(result.text)
    elif as_json:
        click.echo(json.dumps(to_json(result), indent=2, sort_keys=False, default=str))
    else:
        show_text(result)


def print_error(error: CatalogError) -> None:
    """One ``error: <kind>: <message>`` line on stderr; a rejected configuration's problems one per line."""
    if isinstance(error, ConfigRejected):
        for problem in error.problems:
            click.echo(problem, err=True)
    else:
        click.echo(f"error: {error.kind}: {error.message}", err=True)


class RefreshProgress:
    """``dt refresh --wait``: a stderr line each time a run of the job changes state."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __call__(self, job: RefreshJob) -> None:
        for run in job.runs:
            state = run.status.value + (f" ({run.phase})" if run.phase else "")
            if self._seen.get(run.id) != state:
                self._seen[run.id] = state
                click.echo(f"{_time(datetime.datetime.now(datetime.UTC).timestamp())} {run.table}"
                           f"{' ' + _partition(run.partition) if run.partition else ''}: {state}", err=True)


# ---------------------------------------------------------------- formats shared by both renderings

def _iso(ms: int | None) -> str | None:
    """Milliseconds since the epoch as ISO 8601 UTC, ``2026-11-22T18:44:45.120Z``."""
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _time(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _partition(spec: dict[str, str]) -> str:
    return "/".join(f"{k}={v}" for k, v in spec.items())


# ---------------------------------------------------------------- JSON

@singledispatch
def to_json(result: object) -> Any:
    """The JSON value of a result."""
    raise TypeError(f"no JSON form for {type(result).__name__}")


def _columns_json(columns: list[Column]) -> list[dict[str, Any]]:
    return [{"name": c.name, "type": c.type, "comment": c.comment} for c in columns]


@to_json.register
def _names_json(result: Names) -> list[str]:
    return result.names


@to_json.register
def _catalogs_json(result: Catalogs) -> list[str]:
    return [c.name for c in result.catalogs]


@to_json.register
def _catalog_json(info: CatalogInfo) -> dict[str, Any]:
    # read_only comes last: the order this object has always had.
    return {"name": info.name, "type": info.type, "default": info.default, "default_database": info.default_database,
            "metastore": info.metastore, "warehouse": info.warehouse, "atomic_writes": info.atomic_writes,
            "read_only": info.read_only}


@to_json.register
def _spark_settings_json(result: SparkSettings) -> dict[str, str]:
    return result.settings


@to_json.register
def _done_json(result: Done) -> dict[str, str]:
    return {result.action: result.name, "to": result.to} if result.to is not None else {result.action: result.name}


@to_json.register
def _reload_json(result: ReloadResult) -> dict[str, Any]:
    return {"source": result.source, "added": result.added, "removed": result.removed, "changed": result.changed,
            "unchanged": result.unchanged, "restart_needed": result.restart_needed}


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
def _stage_json(stage: Stage) -> dict[str, Any]:
    return {
        "id": stage.id,
        "target": stage.target_name,
        "purpose": stage.purpose.value,
        "state": stage.state.value,
        "owner": stage.owner,
        "created": _iso(stage.created),
        "lease_deadline": _iso(stage.lease_deadline),
        "staging_table": f"{stage.database}.{stage.staging_table}" if stage.staging_table else None,
        "message": stage.message,
    }


@to_json.register
def _stages_json(result: Stages) -> list[dict[str, Any]]:
    return [_stage_json(s) for s in result.stages]


@to_json.register
def _stage_committed_json(result: StageCommitted) -> dict[str, Any]:
    return _stage_json(result.stage)


@to_json.register
def _stage_aborted_json(result: StageAborted) -> dict[str, Any]:
    return _stage_json(result.stage)


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
    }


@to_json.register
def _dynamic_tables_json(result: DynamicTables) -> list[dict[str, Any]]:
    return [_dynamic_table_json(d) for d in result.tables]


@to_json.register
def _statement_json(result: StatementResult) -> dict[str, Any]:
    return {"kind": result.kind, "message": result.message,
            "table": _dynamic_table_json(result.table) if result.table else None,
            "job": _job_json(result.job) if result.job else None}


# ---------------------------------------------------------------- text

@singledispatch
def show_text(result: object) -> None:
    """Print a result for people."""
    raise TypeError(f"no text form for {type(result).__name__}")


def _rows(headers: list[str], rows: list[list[Any]]) -> None:
    table = RichTable(box=None, show_header=True, header_style="bold", pad_edge=False)
    for header in headers:
        table.add_column(header)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    out.print(table)


def _fields(fields: list[tuple[str, Any]]) -> None:
    _rows(["field", "value"], [[k, v] for k, v in fields])


def _properties(props: dict[str, str]) -> None:
    if props:
        out.print()
        _rows(["property", "value"], [[k, v] for k, v in sorted(props.items())])


def _statistics_text(stats: Statistics) -> str:
    if not stats.known:
        return "unknown (the metastore holds none; ANALYZE TABLE in Spark computes them)"

    def show(value: int | None, unit: str = "") -> str:
        return "unknown" if value is None else f"{value:,}{unit}"

    return (f"rows {show(stats.row_count)}, size {show(stats.total_size, ' bytes')}, "
            f"files {show(stats.file_count)}")


@show_text.register
def _names_text(result: Names) -> None:
    _rows([result.header], [[n] for n in result.names])


@show_text.register
def _catalogs_text(result: Catalogs) -> None:
    _rows(
        ["name", "type", "default", "read-only", "default database", "metastore"],
        [[c.name, c.type, "yes" if c.default else "", "yes" if c.read_only else "", c.default_database,
          c.metastore or ""] for c in result.catalogs],
    )


@show_text.register
def _catalog_text(info: CatalogInfo) -> None:
    _fields(list(_catalog_json(info).items()))


@show_text.register
def _spark_settings_text(result: SparkSettings) -> None:
    for key, value in result.settings.items():
        click.echo(f"{key}={value}")


@show_text.register
def _done_text(result: Done) -> None:
    click.echo(f"{result.action} {result.kind} {result.name}" + (f" to {result.to}" if result.to is not None else ""))


@show_text.register
def _reload_text(result: ReloadResult) -> None:
    click.echo(f"reloaded {result.source}: added {', '.join(result.added) or 'none'}; "
               f"removed {', '.join(result.removed) or 'none'}; changed {', '.join(result.changed) or 'none'}")
    if result.restart_needed:
        click.echo(f"restart the daemon to apply: {', '.join(result.restart_needed)}")


@show_text.register
def _database_text(database: Database) -> None:
    _fields([("catalog", database.catalog), ("name", database.name), ("comment", database.comment),
             ("location", database.location), ("owner", database.owner)])
    _properties(database.properties)


@show_text.register
def _table_text(tbl: Table) -> None:
    _fields([
        ("table", f"{tbl.catalog}.{tbl.database}.{tbl.name}"),
        ("kind", tbl.kind.value),
        ("format", tbl.format.value if tbl.format else "unknown"),
        ("location", tbl.location),
        ("comment", tbl.comment),
        ("owner", tbl.owner),
        ("statistics", _statistics_text(tbl.statistics)),
    ])
    out.print()
    rows = [[c.name, c.type, "", c.comment] for c in tbl.columns]
    rows += [[c.name, c.type, "partition key", c.comment] for c in tbl.partition_keys]
    _rows(["column", "type", "", "comment"], rows)
    _properties(tbl.properties)


@show_text.register
def _partition_text(partition: Partition) -> None:
    _fields([("partition", partition.name), ("location", partition.location),
             ("created", partition.created), ("statistics", _statistics_text(partition.statistics))])
    _properties(partition.properties)


@show_text.register
def _partitions_text(result: Partitions) -> None:
    _rows(["partition", "location", "rows", "files", "bytes"],
          [[p.name, p.location, p.statistics.row_count, p.statistics.file_count, p.statistics.total_size]
           for p in result.partitions])


@show_text.register
def _partition_dropped_text(result: PartitionDropped) -> None:
    click.echo(f"dropped partition {result.name} of {result.table}")


@show_text.register
def _view_text(result: View) -> None:
    view = result.view
    _fields([("view", f"{view.catalog}.{view.database}.{view.name}"), ("comment", view.comment),
             ("owner", view.owner), ("query", view.view_text), ("expanded", view.view_expanded_text)])
    out.print()
    _rows(["column", "type", "comment"], [[c.name, c.type, c.comment] for c in view.columns])
    _properties(view.properties)


@show_text.register
def _function_text(function: Function) -> None:
    _fields([("function", function.qualified_name), ("class", function.class_name),
             ("language", function.language.value), ("owner", function.owner)])
    if function.resources:
        out.print()
        _rows(["resource", "uri"], [[r.type, r.uri] for r in function.resources])


@show_text.register
def _stage_text(stage: Stage) -> None:
    _fields([(k.replace("_", " "), v) for k, v in _stage_json(stage).items()])


@show_text.register
def _stages_text(result: Stages) -> None:
    _rows(
        ["id", "target", "purpose", "state", "owner", "created", "lease deadline"],
        [[s.id, s.target_name, s.purpose.value, s.state.value, s.owner, _iso(s.created), _iso(s.lease_deadline)]
         for s in result.stages],
    )


@show_text.register
def _stage_committed_text(result: StageCommitted) -> None:
    stage = result.stage
    if stage.state is StageState.COMMITTED:
        click.echo(f"committed stage {result.stage_id}: {stage.message or stage.target_name}")
    else:
        click.echo(f"stage {result.stage_id} ended {stage.state.value}: {stage.message}")


@show_text.register
def _stage_aborted_text(result: StageAborted) -> None:
    click.echo(f"aborted stage {result.stage_id}")


def _duration(run: RefreshRun) -> str:
    if run.started is None:
        return ""
    end = run.ended if run.ended is not None else datetime.datetime.now(datetime.UTC).timestamp()
    return f"{end - run.started:.1f}s"


def _lag(dt: DynamicTable) -> str:
    if dt.freshness_lag is None:
        return "never refreshed"
    verdict = "within" if dt.within_target else "outside"
    return f"{dt.freshness_lag:.1f}s ({verdict} the {dt.freshness} target)"


@show_text.register
def _runs_text(result: Runs) -> None:
    _rows(["run", "trigger", "status", "schedule time", "partition", "started", "took", "rows", "error"],
          [[r.id, r.trigger, r.status.value, r.schedule_time, _partition(r.partition), _time(r.started),
            _duration(r), r.rows, r.error] for r in result.runs])


@show_text.register
def _job_text(job: RefreshJob) -> None:
    click.echo(f"refresh job {job.id}: {job.status.value}" + (f": {job.error}" if job.error else ""))
    _runs_text(Runs(job.runs))


@show_text.register
def _dynamic_table_text(dt: DynamicTable) -> None:
    mode = dt.refresh_mode.value + ("" if dt.declared_mode else " (derived from the freshness threshold)")
    last = dt.last_refresh
    _fields([
        ("dynamic table", f"{dt.catalog}.{dt.database}.{dt.name}"), ("comment", dt.comment),
        ("freshness", dt.freshness), ("refresh mode", mode), ("state", dt.state.value),
        ("schedule", dt.schedule), ("freshness lag", _lag(dt)),
        ("last refresh", f"{last.status.value} {_time(last.started)} ({last.trigger}"
                         f"{', ' + _partition(last.partition) if last.partition else ''})" if last else None),
        ("query", dt.query), ("expanded", dt.expanded_query),
    ])
    out.print()
    _rows(["job detail", "value"], [[k, v] for k, v in sorted(dt.job_detail.items())])
    out.print()
    _rows(["column", "type", "comment"],
          [[c.name, c.type, c.comment] for c in dt.columns]
          + [[c.name, c.type, "partition key"] for c in dt.partition_keys])
    _properties(dt.options)


@show_text.register
def _dynamic_tables_text(result: DynamicTables) -> None:
    _rows(["dynamic table", "freshness", "mode", "state", "lag", "last refresh"],
          [[f"{d.catalog}.{d.database}.{d.name}", d.freshness, d.refresh_mode.value, d.state.value,
            _lag(d), f"{d.last_refresh.status.value} {_time(d.last_refresh.started)}" if d.last_refresh else ""]
           for d in result.tables])


@show_text.register
def _statement_text(result: StatementResult) -> None:
    click.echo(result.message)
