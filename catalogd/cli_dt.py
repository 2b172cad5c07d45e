"""``catalogd sql`` and ``catalogd dt ...``: dynamic tables from the command line."""

from __future__ import annotations

import datetime
from typing import Any

import click

from catalogd.cli import (
    Context,
    cli,
    emit_json,
    out,
    parse_properties,
    pass_ctx,
    print_fields,
    print_properties,
    print_rows,
    report_done,
)
from catalogd.errors import CatalogError, UsageError
from catalogd.model import DynamicTable, RefreshJob, RefreshRun, RunStatus, StatementResult


def _columns(columns: list[Any]) -> list[dict[str, Any]]:
    return [{"name": c.name, "type": c.type, "comment": c.comment} for c in columns]


def run_json(run: RefreshRun) -> dict[str, Any]:
    return run.to_json()


def job_json(job: RefreshJob) -> dict[str, Any]:
    return {"job_id": job.id, "status": job.status.value, "error": job.error, "cluster_info": job.cluster_info,
            "runs": [run_json(r) for r in job.runs]}


def dynamic_table_json(dt: DynamicTable) -> dict[str, Any]:
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
        "columns": _columns(dt.columns),
        "partition_keys": _columns(dt.partition_keys),
        "options": dt.options,
        "comment": dt.comment,
        "schedule": dt.schedule,
        "created": dt.created,
        "last_refresh": run_json(dt.last_refresh) if dt.last_refresh else None,
        "freshness_lag": dt.freshness_lag,
        "within_target": dt.within_target,
    }


def _time(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _duration(run: RefreshRun) -> str:
    if run.started is None:
        return ""
    end = run.ended if run.ended is not None else datetime.datetime.now(datetime.UTC).timestamp()
    return f"{end - run.started:.1f}s"


def _partition(spec: dict[str, str]) -> str:
    return "/".join(f"{k}={v}" for k, v in spec.items())


def _lag(dt: DynamicTable) -> str:
    if dt.freshness_lag is None:
        return "never refreshed"
    verdict = "within" if dt.within_target else "outside"
    return f"{dt.freshness_lag:.1f}s ({verdict} the {dt.freshness} target)"


def _show(ctx: Context, dt: DynamicTable) -> None:
    if ctx.as_json:
        emit_json(dynamic_table_json(dt))
        return
    mode = dt.refresh_mode.value + ("" if dt.declared_mode else " (derived from the freshness threshold)")
    last = dt.last_refresh
    print_fields([
        ("dynamic table", f"{dt.catalog}.{dt.database}.{dt.name}"), ("comment", dt.comment),
        ("freshness", dt.freshness), ("refresh mode", mode), ("state", dt.state.value),
        ("schedule", dt.schedule), ("freshness lag", _lag(dt)),
        ("last refresh", f"{last.status.value} {_time(last.started)} ({last.trigger}"
                         f"{', ' + _partition(last.partition) if last.partition else ''})" if last else None),
        ("query", dt.query), ("expanded", dt.expanded_query),
    ])
    out.print()
    print_rows(["job detail", "value"], [[k, v] for k, v in sorted(dt.job_detail.items())])
    out.print()
    print_rows(["column", "type", "comment"],
               [[c.name, c.type, c.comment] for c in dt.columns]
               + [[c.name, c.type, "partition key"] for c in dt.partition_keys])
    print_properties(dt.options)


def _show_runs(ctx: Context, runs: list[RefreshRun]) -> None:
    if ctx.as_json:
        emit_json([run_json(r) for r in runs])
        return
    print_rows(["run", "trigger", "status", "schedule time", "partition", "started", "took", "rows", "error"],
               [[r.id, r.trigger, r.status.value, r.schedule_time, _partition(r.partition), _time(r.started),
                 _duration(r), r.rows, r.error] for r in runs])


def _show_job(ctx: Context, job: RefreshJob) -> None:
    if ctx.as_json:
        emit_json(job_json(job))
        return
    click.echo(f"refresh job {job.id}: {job.status.value}" + (f": {job.error}" if job.error else ""))
    _show_runs(ctx, job.runs)


@cli.command("sql")
@click.argument("statement")
@pass_ctx
def sql(ctx: Context, statement: str) -> None:
    """Run a CREATE / ALTER / DROP DYNAMIC TABLE statement in the daemon.

    \b
    CREATE DYNAMIC TABLE [IF NOT EXISTS] cat.db.dt [COMMENT '...'] [PARTITIONED BY (col, ...)]
        [WITH ('k'='v', ...)] FRESHNESS = INTERVAL '1' DAY [REFRESH_MODE = FULL|CONTINUOUS] AS SELECT ...
    ALTER DYNAMIC TABLE cat.db.dt SUSPEND | RESUME | REFRESH [PARTITION (col='v', ...)]
        | SET FRESHNESS = INTERVAL ... | SET REFRESH_MODE = FULL|CONTINUOUS
    DROP DYNAMIC TABLE [IF EXISTS] cat.db.dt
    """
    result: StatementResult = ctx.client.sql(statement)
    if ctx.as_json:
        emit_json({"kind": result.kind, "message": result.message,
                   "table": dynamic_table_json(result.table) if result.table else None,
                   "job": job_json(result.job) if result.job else None})
    else:
        click.echo(result.message)


@cli.group()
def dt() -> None:
    """Dynamic tables: create, list, describe, refresh, suspend, resume, alter, drop, history."""


@dt.command("create")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--query", required=True, help="One SELECT over tables of the same catalog.")
@click.option("--freshness", required=True, help='How fresh the data must be: "1 day", "10 minutes", "30 s".')
@click.option("--partitioned-by", "partitioned_by", multiple=True, metavar="COLUMN",
              help="A partition column (one of the query's); repeatable.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Table option, e.g. partition.fields.ds.date-formatter=yyyy-MM-dd; repeatable.")
@click.option("--refresh-mode", type=click.Choice(["full", "continuous"], case_sensitive=False),
              help="Default: CONTINUOUS below dynamic-tables.freshness-threshold, else FULL.")
@click.option("--comment", help="Description of the table.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def dt_create(ctx: Context, name: str, query: str, freshness: str, partitioned_by: tuple[str, ...],
              options: tuple[str, ...], refresh_mode: str | None, comment: str | None, if_not_exists: bool) -> None:
    """Create a dynamic table; its schedule or streaming job starts at once."""
    keys = [k.strip() for part in partitioned_by for k in part.split(",") if k.strip()]
    _show(ctx, ctx.client.create_dynamic_table(name, query, freshness, refresh_mode, keys,
                                               parse_properties(options), comment, if_not_exists))


@dt.command("list")
@click.argument("where", metavar="[CATALOG[.DB]]", required=False)
@pass_ctx
def dt_list(ctx: Context, where: str | None) -> None:
    """List the dynamic tables of a catalog (default: the default catalog) or of one database."""
    catalog, _, database = (where or "").partition(".")
    found = ctx.client.list_dynamic_tables(catalog or None, database or None)
    if ctx.as_json:
        emit_json([dynamic_table_json(d) for d in found])
        return
    print_rows(["dynamic table", "freshness", "mode", "state", "lag", "last refresh"],
               [[f"{d.catalog}.{d.database}.{d.name}", d.freshness, d.refresh_mode.value, d.state.value,
                 _lag(d), f"{d.last_refresh.status.value} {_time(d.last_refresh.started)}" if d.last_refresh else ""]
                for d in found])


@dt.command("describe")
@click.argument("name", metavar="CATALOG.DB.DT")
@pass_ctx
def dt_describe(ctx: Context, name: str) -> None:
    """Show a dynamic table: definition, refresh handler, last refresh, freshness lag."""
    _show(ctx, ctx.client.get_dynamic_table(name))


@dt.command("refresh")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--partition", "partition", multiple=True, metavar="KEY=VALUE",
              help="Refresh only this partition; repeat for each partition column.")
@click.option("--schedule-time", metavar="TIME",
              help='The run\'s logical time, e.g. "2024-03-02 00:00:00": with date formatters it picks the '
                   "partition.")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="Extra Spark setting for the job.")
@click.option("--wait", is_flag=True, help="Wait for the job to end, showing its progress; exit 1 if it failed.")
@click.option("--timeout", type=float, default=None, metavar="SECONDS", help="With --wait: stop waiting after this.")
@pass_ctx
def dt_refresh(ctx: Context, name: str, partition: tuple[str, ...], schedule_time: str | None,
               conf: tuple[str, ...], wait: bool, timeout: float | None) -> None:
    """Refresh now (also while suspended); joins a refresh of the same partition already running."""
    spec = parse_properties(partition)
    job = ctx.client.refresh_dynamic_tables(name, schedule_time, spec or None, parse_properties(conf))
    if wait:
        seen: dict[str, str] = {}

        def progress(current: RefreshJob) -> None:
            for run in current.runs:
                state = run.status.value + (f" ({run.phase})" if run.phase else "")
                if seen.get(run.id) != state:
                    seen[run.id] = state
                    click.echo(f"{_time(datetime.datetime.now(datetime.UTC).timestamp())} {run.table}"
                               f"{' ' + _partition(run.partition) if run.partition else ''}: {state}", err=True)

        job = ctx.client.wait_refresh_job(job.id, timeout=timeout, progress=progress)
    _show_job(ctx, job)
    if wait and job.status is RunStatus.FAILED:
        raise _JobFailed(f"refresh job {job.id} failed: {job.error}")


class _JobFailed(CatalogError):
    kind = "refresh-failed"


@dt.command("job")
@click.argument("job_id", metavar="JOB_ID")
@pass_ctx
def dt_job(ctx: Context, job_id: str) -> None:
    """Show a refresh job's status and runs."""
    _show_job(ctx, ctx.client.get_refresh_job(job_id))


@dt.command("suspend")
@click.argument("name", metavar="CATALOG.DB.DT")
@pass_ctx
def dt_suspend(ctx: Context, name: str) -> None:
    """Stop the schedule or the streaming job (a manual refresh still works)."""
    _show(ctx, ctx.client.suspend_dynamic_table(name))


@dt.command("resume")
@click.argument("name", metavar="CATALOG.DB.DT")
@pass_ctx
def dt_resume(ctx: Context, name: str) -> None:
    """Restart the schedule, or the streaming job from its checkpoint."""
    _show(ctx, ctx.client.resume_dynamic_table(name))


@dt.command("alter")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--freshness", help='A new freshness, e.g. "1 hour" (the mode is derived again unless declared).')
@click.option("--refresh-mode", type=click.Choice(["full", "continuous"], case_sensitive=False),
              help="Declare the refresh mode.")
@pass_ctx
def dt_alter(ctx: Context, name: str, freshness: str | None, refresh_mode: str | None) -> None:
    """Change the freshness or the refresh mode (the old job stops, the new one starts)."""
    if freshness is None and refresh_mode is None:
        raise UsageError("nothing to change: give --freshness and/or --refresh-mode")
    _show(ctx, ctx.client.alter_dynamic_table(name, freshness, refresh_mode))


@dt.command("drop")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def dt_drop(ctx: Context, name: str, if_exists: bool) -> None:
    """Stop the schedule and the job, then drop the table and its data."""
    ctx.client.drop_dynamic_table(name, if_exists)
    report_done(ctx, "dropped", "dynamic table", name)


@dt.command("history")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Newest runs to show (0: all that are kept).")
@pass_ctx
def dt_history(ctx: Context, name: str, limit: int) -> None:
    """The table's refresh runs, newest first."""
    _show_runs(ctx, ctx.client.dynamic_table_history(name, limit))

