"""``catalogd stage ...``: the stages of atomic writes (list, describe, begin, heartbeat, commit, abort)."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.params import parse_lease, parse_properties
from catalogd.cli.results import StageAborted, StageCommitted, Stages
from catalogd.model import Stage


@click.group()
def stage() -> None:
    """Stages of atomic writes: list, describe, begin, heartbeat, commit, abort."""


@stage.command("list")
@click.argument("catalog_name", metavar="CATALOG", required=False)
@pass_ctx
def stage_list(ctx: Context, catalog_name: str | None) -> Stages:
    """List the open stages of a catalog (and committed ones whose replaced data is still kept)."""
    return Stages(ctx.client.list_stages(catalog_name))


@stage.command("describe")
@click.argument("stage_id", metavar="ID")
@pass_ctx
def stage_describe(ctx: Context, stage_id: str) -> Stage:
    """Show one stage (COMMITTED once its target carries its id)."""
    return ctx.client.get_stage(stage_id)


@stage.command("begin")
@click.argument("target", metavar="CATALOG.DB.T")
@click.option("--schema", help="Columns, e.g. \"id bigint, name string\" (OVERWRITE_PARTITIONS, APPEND: the target's).")
@click.option("--partitioned-by", metavar="COLUMNS", help="Partition columns, e.g. \"ds string\".")
@click.option("--format", "fmt", default=None,
              type=click.Choice(["parquet", "orc", "avro", "csv", "json", "textfile"], case_sensitive=False),
              help="Storage format [default: parquet].")
@click.option("--purpose", default="create", show_default=True,
              type=click.Choice(["create", "create_if_not_exists", "replace", "overwrite_partitions", "append"],
                                case_sensitive=False))
@click.option("--lease", metavar="DURATION", help="e.g. 5 min [default: the daemon's staging.lease].")
@click.option("--comment", help="Description of the table.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@pass_ctx
def stage_begin(ctx: Context, target: str, schema: str | None, partitioned_by: str | None, fmt: str | None,
                purpose: str, lease: str | None, comment: str | None, properties: tuple[str, ...]) -> Stage:
    """Open a stage on TARGET: a hidden staging table to write into, published by `stage commit`."""
    seconds = parse_lease(lease)
    return ctx.client.begin_stage(target, schema, partitioned_by, format=fmt, purpose=purpose,
                                  properties=parse_properties(properties), comment=comment, lease=seconds)


@stage.command("heartbeat")
@click.argument("stage_id", metavar="ID")
@click.option("--lease", metavar="DURATION", help="New lease from now [default: the daemon's staging.lease].")
@pass_ctx
def stage_heartbeat(ctx: Context, stage_id: str, lease: str | None) -> Stage:
    """Extend an open stage's lease."""
    return ctx.client.heartbeat_stage(stage_id, parse_lease(lease))


@stage.command("commit")
@click.argument("stage_id", metavar="ID")
@pass_ctx
def stage_commit(ctx: Context, stage_id: str) -> StageCommitted:
    """Publish a stage into its target atomically (safe to repeat)."""
    return StageCommitted(stage_id, ctx.client.commit_stage(stage_id))


@stage.command("abort")
@click.argument("stage_id", metavar="ID")
@click.option("--writer-stopped", is_flag=True,
              help="Its writer writes no more: delete the files now, not a lease later.")
@pass_ctx
def stage_abort(ctx: Context, stage_id: str, writer_stopped: bool) -> StageAborted:
    """Abort a stage (a committed stage cannot be aborted).

    Its writer may still be running, so the stage stays as an ABORTED tombstone and
    its files, with any the writer adds, are deleted a lease later; catalogd.spark
    writers cancel their job at their next heartbeat.
    """
    return StageAborted(stage_id, ctx.client.abort_stage(stage_id, writer_stopped=writer_stopped))
