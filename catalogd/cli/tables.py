"""``catalogd table ...``: tables (list, create, describe, alter, rename, drop) and their partitions."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.params import parse_properties
from catalogd.cli.results import DescribedTable, Done, Names, PartitionDropped, Partitions
from catalogd.errors import UsageError
from catalogd.model import Partition, Table

_FORMATS = ["parquet", "orc", "avro", "csv", "json", "textfile"]


@click.group()
def table() -> None:
    """Tables: list, create, describe, alter, rename, drop, partitions."""


@table.command("list")
@click.argument("database", metavar="CATALOG.DB")
@pass_ctx
def table_list(ctx: Context, database: str) -> Names:
    """List the tables of a database (views are not listed)."""
    return Names("table", ctx.client.list_tables(database))


@table.command("create")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--schema", required=True, help="Columns, e.g. \"id bigint, amount decimal(10,2) COMMENT 'EUR'\".")
@click.option("--partitioned-by", metavar="COLUMNS", help="Partition columns, e.g. \"ds string\".")
@click.option("--format", "fmt", default="parquet", show_default=True,
              type=click.Choice(_FORMATS, case_sensitive=False))
@click.option("--location", metavar="URI", help="Where the files go [default: under the database].")
@click.option("--external", is_flag=True, help="The files outlive the table (needs --location).")
@click.option("--comment", help="Description of the table.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def table_create(ctx: Context, name: str, schema: str, partitioned_by: str | None, fmt: str, location: str | None,
                 external: bool, comment: str | None, properties: tuple[str, ...], if_not_exists: bool) -> Table:
    """Create a table."""
    return ctx.client.create_table(
        name, schema, partitioned_by=partitioned_by, format=fmt, location=location, external=external,
        comment=comment, properties=parse_properties(properties), if_not_exists=if_not_exists,
    )


@table.command("describe")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--all", "all_properties", is_flag=True,
              help="Also show catalogd's own properties (catalogd.*: a dynamic table's definition and history).")
@pass_ctx
def table_describe(ctx: Context, name: str, all_properties: bool) -> DescribedTable:
    """Show a table: columns, partition keys, format, location, properties."""
    return DescribedTable(ctx.client.get_table(name), all_properties)


@table.command("alter")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--comment", help="New description.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Set a property; repeatable.")
@click.option("--unset-property", "unset", multiple=True, metavar="KEY", help="Remove a property; repeatable.")
@click.option("--add-columns", metavar="COLUMNS", help="Columns to append, e.g. \"note string\".")
@pass_ctx
def table_alter(ctx: Context, name: str, comment: str | None, properties: tuple[str, ...], unset: tuple[str, ...],
                add_columns: str | None) -> Table:
    """Change a table's comment or properties, or add columns."""
    if comment is None and not properties and not unset and not add_columns:
        raise UsageError("nothing to change: give --comment, --property, --unset-property or --add-columns")
    return ctx.client.alter_table(name, comment=comment, set_properties=parse_properties(properties),
                                  unset_properties=list(unset), add_columns=add_columns)


@table.command("rename")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if the table does not exist.")
@pass_ctx
def table_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> Done:
    """Rename a table within its database."""
    ctx.client.rename_table(name, new_name, if_exists=if_exists)
    return Done("renamed", "table", name, new_name)


@table.command("drop")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@click.option("--purge", is_flag=True, help="Delete the files at once (no trash).")
@click.option("--drop-foreign", is_flag=True,
              help="Admin only: drop it even though catalogd did not create it (a jdbc catalog refuses otherwise).")
@pass_ctx
def table_drop(ctx: Context, name: str, if_exists: bool, purge: bool, drop_foreign: bool) -> Done:
    """Drop a table; a managed table's files go with it."""
    ctx.client.drop_table(name, if_exists=if_exists, purge=purge, drop_foreign=drop_foreign)
    return Done("dropped", "table", name)


# ---------------------------------------------------------------- partitions

@table.command("partitions")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--filter", "filter_", metavar="CONDITION",
              help="On partition keys, e.g. \"ds >= '2024-03-01' AND hr = '01'\".")
@pass_ctx
def table_partitions(ctx: Context, name: str, filter_: str | None) -> Partitions:
    """List the partitions of a partitioned table."""
    return Partitions(ctx.client.list_partitions(name, filter_))


@table.group("partition")
def table_partition() -> None:
    """One partition: describe, add, drop (SPEC is key=value ..., e.g. ds=2024-03-01 hr=01)."""


@table_partition.command("describe")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("spec", nargs=-1, required=True, metavar="KEY=VALUE...")
@pass_ctx
def partition_describe(ctx: Context, name: str, spec: tuple[str, ...]) -> Partition:
    """Show one partition."""
    from catalogd.client import parse_partition_spec

    return ctx.client.get_partition(name, parse_partition_spec(spec))


@table_partition.command("add")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("spec", nargs=-1, required=True, metavar="KEY=VALUE...")
@click.option("--location", metavar="URI", help="Its directory [default: <table location>/<partition name>].")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def partition_add(ctx: Context, name: str, spec: tuple[str, ...], location: str | None,
                  if_not_exists: bool) -> Partition:
    """Add a partition."""
    from catalogd.client import parse_partition_spec

    return ctx.client.add_partition(name, parse_partition_spec(spec), location, if_not_exists)


@table_partition.command("drop")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("spec", nargs=-1, required=True, metavar="KEY=VALUE...")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@click.option("--purge", is_flag=True, help="Delete the files at once instead of moving them to a trash dir.")
@pass_ctx
def partition_drop(ctx: Context, name: str, spec: tuple[str, ...], if_exists: bool, purge: bool) -> PartitionDropped:
    """Drop a partition (a managed table's partition files go with it)."""
    from catalogd.client import parse_partition_spec

    values = parse_partition_spec(spec)
    ctx.client.drop_partition(name, values, if_exists, purge)
    return PartitionDropped(values, name)
