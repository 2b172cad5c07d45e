"""The text form of each CLI result: aligned tables and sentences for people.

Piped output is never cut to fit a terminal; a value the text shows is the value the JSON
form holds, formatted for reading (times in UTC, sizes with thousands separators).
"""

from __future__ import annotations

import datetime
import sys
from functools import singledispatch
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from catalogd.cli.human import clock_time, human_duration, lag_text, within_target_reason
from catalogd.cli.json_form import catalog_json, iso_millis, iso_seconds, stage_json
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
    TableKind,
)

__all__ = ["clock_time", "out", "partition_name", "show_text"]

#: catalogd's own properties (a dynamic table's definition and history, a commit's marks).
_OWN_PREFIX = "catalogd."
#: A dynamic table's: a table that carries them is one.
_DYNAMIC_PREFIX = "catalogd.dt."

# Piped output is read by scripts and people alike: never cut a cell to fit 80 columns.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 1000)


def partition_name(spec: dict[str, str]) -> str:
    """``{"ds": "x", "hr": "1"}`` -> ``ds=x/hr=1``."""
    return "/".join(f"{k}={v}" for k, v in spec.items())


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
    _fields(list(catalog_json(info).items()))


@show_text.register
def _spark_settings_text(result: SparkSettings) -> None:
    for key, value in result.settings.items():
        click.echo(f"{key}={value}")


@show_text.register
def _iceberg_settings_text(result: IcebergSettings) -> None:
    # Each block as its client takes it (a YAML file, key=value lines, SQL), under a comment line.
    s = result.settings
    blocks = [
        (f"Iceberg REST catalog for catalogd catalog {s.catalog!r}", f"uri={s.uri}\nwarehouse={s.warehouse}"),
        ("pyiceberg: ~/.pyiceberg.yaml (or load_catalog(name, **properties) with the same keys)", s.pyiceberg_yaml),
        ("Spark: spark-defaults.conf or --conf key=value", "\n".join(f"{k}={v}" for k, v in s.spark.items())),
        (f"Trino: etc/catalog/{s.name}.properties", "\n".join(f"{k}={v}" for k, v in s.trino.items())),
        ("DuckDB", "\n".join(s.duckdb)),
        ("Flink SQL", s.flink),
    ]
    for i, (title, body) in enumerate(blocks):
        click.echo(("\n" if i else "") + f"# {title}\n{body}")
    if s.notes:
        click.echo("\n" + "\n".join(f"# {note}" for note in s.notes))


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
def _cluster_status_text(status: ClusterStatus) -> None:
    if not status.clustered:
        click.echo("no cluster: this daemon works alone (no cluster.members in its configuration) and leads itself")
        return
    _rows(["member", "state", "role", "hms", "problem"],
          [[m.address + (" (answering)" if m.answering else ""), "up" if m.up else "DOWN",
            "leader" if m.leader else "follower", m.hms_uri, m.problem] for m in status.members])
    out.print()
    since = iso_seconds(status.leader_since)
    age = "" if status.lease_age is None else f"{status.lease_age:.1f}s"
    fields = [("leader", status.leader or "none yet"), ("leader since", since), ("term", status.epoch),
              ("lease age", f"{age} (lease {status.lease:g}s)" if age else None),
              ("lease kept in", status.lease_store), ("lease problem", status.problem)]
    _fields([(k, v) for k, v in fields if v is not None])


@show_text.register
def _database_text(database: Database) -> None:
    _fields([("catalog", database.catalog), ("name", database.name), ("comment", database.comment),
             ("location", database.location), ("owner", database.owner)])
    _properties(database.properties)


@show_text.register
def _table_text(tbl: Table, all_properties: bool = False) -> None:
    name = f"{tbl.catalog}.{tbl.database}.{tbl.name}"
    view = tbl.kind is TableKind.VIEW
    dynamic = any(k.startswith(_DYNAMIC_PREFIX) for k in tbl.properties)
    if view:
        kind = f"VIEW (its query: catalogd view describe {name})"
    elif dynamic:
        kind = (f"dynamic table, stored as a {tbl.kind.value} table (its query, refreshes and lag: "
                f"catalogd dt describe {name})")
    else:
        kind = tbl.kind.value
    fields: list[tuple[str, Any]] = [("table", name), ("kind", kind)]
    if not view:
        # A view has no files: no format, location or statistics to speak of.
        fields += [("format", tbl.format.value if tbl.format else "unknown"), ("location", tbl.location)]
    fields += [("comment", tbl.comment), ("owner", tbl.owner)]
    if not view:
        fields.append(("statistics", _statistics_text(tbl.statistics)))
    _fields(fields)
    out.print()
    rows = [[c.name, c.type, "", c.comment] for c in tbl.columns]
    rows += [[c.name, c.type, "partition key", c.comment] for c in tbl.partition_keys]
    _rows(["column", "type", "", "comment"], rows)
    shown = tbl.properties if all_properties else {
        k: v for k, v in tbl.properties.items() if not k.startswith(_OWN_PREFIX)}
    _properties(shown)
    hidden = len(tbl.properties) - len(shown)
    if hidden:
        out.print()
        out.print(f"({hidden} catalogd.* {'property' if hidden == 1 else 'properties'} not shown: "
                  f"catalogd table describe {name} --all shows them)")


@show_text.register
def _described_table_text(result: DescribedTable) -> None:
    _table_text(result.table, result.all_properties)


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
def _audit_text(result: AuditEntries) -> None:
    if not result.entries:
        out.print("no audit entries")
        return
    fields = ["time", "principal", "surface", "client", "operation", "object", "outcome", "detail"]
    _rows(fields, [[_audit_detail(entry) if f == "detail" else entry.get(f) for f in fields]
                   for entry in result.entries])


def _audit_detail(entry: dict[str, Any]) -> object:
    """The detail column; a line summarising repeated denials says how many and over what time."""
    detail = entry.get("detail")
    if "count" not in entry:
        return detail
    repeated = f"(repeated {entry['count']} times, {entry.get('first')} to {entry.get('last')})"
    return f"{detail} {repeated}" if detail else repeated


@show_text.register
def _stage_text(stage: Stage) -> None:
    _fields([(k.replace("_", " "), v) for k, v in stage_json(stage).items()])


@show_text.register
def _stages_text(result: Stages) -> None:
    _rows(
        ["id", "target", "purpose", "state", "owner", "created", "lease deadline"],
        [[s.id, s.target_name, s.purpose.value, s.state.value, s.owner, iso_millis(s.created),
          iso_millis(s.lease_deadline)] for s in result.stages],
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
    return human_duration(end - run.started)


def _lag(dt: DynamicTable) -> str:
    return lag_text(dt) or "never refreshed"


@show_text.register
def _runs_text(result: Runs) -> None:
    _rows(["run", "trigger", "status", "schedule time", "partition", "started", "took", "rows", "error"],
          [[r.id, r.trigger, r.status.value, r.schedule_time, partition_name(r.partition), clock_time(r.started),
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
        *([("why outside", reason)] if (reason := within_target_reason(dt)) else []),
        ("last refresh", f"{last.status.value} {clock_time(last.started)} ({last.trigger}"
                         f"{', ' + partition_name(last.partition) if last.partition else ''})" if last else None),
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
            _lag(d), f"{d.last_refresh.status.value} {clock_time(d.last_refresh.started)}" if d.last_refresh else ""]
           for d in result.tables])


@show_text.register
def _statement_text(result: StatementResult) -> None:
    click.echo(result.message)
