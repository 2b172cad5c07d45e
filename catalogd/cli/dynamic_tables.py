"""``catalogd sql`` and ``catalogd dt ...``: dynamic tables from the command line."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.failures import RefreshFailed
from catalogd.cli.output import RefreshProgress
from catalogd.cli.params import parse_properties
from catalogd.cli.results import Done, DynamicTables, Failed, Runs
from catalogd.errors import UsageError
from catalogd.model import DynamicTable, RefreshJob, RunStatus, StatementResult

_MODES = click.Choice(["full", "continuous"], case_sensitive=False)


@click.command("sql")
@click.argument("statement")
@pass_ctx
def sql(ctx: Context, statement: str) -> StatementResult:
    """Run a CREATE / ALTER / DROP DYNAMIC TABLE statement in the daemon.

    SHOW CREATE too; MATERIALIZED TABLE (Flink's name) works as DYNAMIC TABLE.

    \b
    CREATE [OR ALTER] DYNAMIC TABLE [IF NOT EXISTS] cat.db.dt [COMMENT '...'] [PARTITIONED BY (col, ...)]
        [WITH ('k'='v', ...)] [FRESHNESS = INTERVAL '1' DAY] [REFRESH_MODE = FULL|CONTINUOUS] AS SELECT ...
    ALTER DYNAMIC TABLE cat.db.dt SUSPEND | RESUME | REFRESH [PARTITION (col='v', ...)]
        | SET FRESHNESS = INTERVAL ... | SET REFRESH_MODE = FULL|CONTINUOUS | AS SELECT ...
    DROP DYNAMIC TABLE [IF EXISTS] cat.db.dt
    SHOW CREATE DYNAMIC TABLE cat.db.dt
    """
    return ctx.client.sql(statement)


@click.group()
def dt() -> None:
    """Dynamic tables: create, list, describe, refresh, suspend, resume, alter, drop, history."""


@dt.command("create")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--query", required=True, help="One SELECT over tables of the same catalog.")
@click.option("--freshness", help='How fresh the data must be: "1 day", "10 minutes", "30 s". Default: '
              "dynamic-tables.default-freshness-full with --refresh-mode full, else default-freshness-continuous.")
@click.option("--partitioned-by", "partitioned_by", multiple=True, metavar="COLUMN",
              help="A partition column (one of the query's); repeatable.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Table option, e.g. partition.fields.ds.date-formatter=yyyy-MM-dd; repeatable.")
@click.option("--refresh-mode", type=_MODES,
              help="Default: CONTINUOUS below dynamic-tables.freshness-threshold, else FULL.")
@click.option("--comment", help="Description of the table.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def dt_create(ctx: Context, name: str, query: str, freshness: str | None, partitioned_by: tuple[str, ...],
              options: tuple[str, ...], refresh_mode: str | None, comment: str | None,
              if_not_exists: bool) -> DynamicTable:
    """Create a dynamic table; its schedule or streaming job starts at once."""
    keys = [k.strip() for part in partitioned_by for k in part.split(",") if k.strip()]
    return ctx.client.create_dynamic_table(name, query, freshness or "", refresh_mode, keys,
                                           parse_properties(options), comment, if_not_exists)


@dt.command("list")
@click.argument("where", metavar="[CATALOG[.DB]]", required=False)
@pass_ctx
def dt_list(ctx: Context, where: str | None) -> DynamicTables:
    """List the dynamic tables of a catalog (default: the default catalog) or of one database."""
    catalog, _, database = (where or "").partition(".")
    return DynamicTables(ctx.client.list_dynamic_tables(catalog or None, database or None))


@dt.command("describe")
@click.argument("name", metavar="CATALOG.DB.DT")
@pass_ctx
def dt_describe(ctx: Context, name: str) -> DynamicTable:
    """Show a dynamic table: definition, refresh handler, last refresh, freshness lag."""
    return ctx.client.get_dynamic_table(name)


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
               conf: tuple[str, ...], wait: bool, timeout: float | None) -> RefreshJob | Failed:
    """Refresh now (also while suspended); joins a refresh of the same partition already running."""
    spec = parse_properties(partition)
    job = ctx.client.refresh_dynamic_tables(name, schedule_time, spec or None, parse_properties(conf))
    if not wait:
        return job
    job = ctx.client.wait_refresh_job(job.id, timeout=timeout, progress=RefreshProgress())
    if job.status is RunStatus.FAILED:
        return Failed(job, RefreshFailed(f"refresh job {job.id} failed: {job.error}"))
    return job


@dt.command("job")
@click.argument("job_id", metavar="JOB_ID")
@pass_ctx
def dt_job(ctx: Context, job_id: str) -> RefreshJob:
    """Show a refresh job's status and runs."""
    return ctx.client.get_refresh_job(job_id)


@dt.command("suspend")
@click.argument("name", metavar="CATALOG.DB.DT")
@pass_ctx
def dt_suspend(ctx: Context, name: str) -> DynamicTable:
    """Stop the schedule or the streaming job (a manual refresh still works)."""
    return ctx.client.suspend_dynamic_table(name)


@dt.command("resume")
@click.argument("name", metavar="CATALOG.DB.DT")
@pass_ctx
def dt_resume(ctx: Context, name: str) -> DynamicTable:
    """Restart the schedule, or the streaming job from its checkpoint."""
    return ctx.client.resume_dynamic_table(name)


@dt.command("alter")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--freshness", help='A new freshness, e.g. "1 hour" (the mode is derived again unless declared).')
@click.option("--refresh-mode", type=_MODES, help="Declare the refresh mode.")
@pass_ctx
def dt_alter(ctx: Context, name: str, freshness: str | None, refresh_mode: str | None) -> DynamicTable:
    """Change the freshness or the refresh mode (the old job stops, the new one starts)."""
    if freshness is None and refresh_mode is None:
        raise UsageError("nothing to change: give --freshness and/or --refresh-mode")
    return ctx.client.alter_dynamic_table(name, freshness, refresh_mode)


@dt.command("drop")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def dt_drop(ctx: Context, name: str, if_exists: bool) -> Done:
    """Stop the schedule and the job, then drop the table and its data."""
    ctx.client.drop_dynamic_table(name, if_exists)
    return Done("dropped", "dynamic table", name)


@dt.command("history")
@click.argument("name", metavar="CATALOG.DB.DT")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Newest runs to show (0: all that are kept).")
@pass_ctx
def dt_history(ctx: Context, name: str, limit: int) -> Runs:
    """The table's refresh runs, newest first."""
    return Runs(ctx.client.dynamic_table_history(name, limit))
