"""``catalogd db ...``: list, create, describe, alter, rename and drop databases."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.params import parse_properties
from catalogd.cli.results import Done, Names
from catalogd.errors import UsageError
from catalogd.model import Database


@click.group()
def db() -> None:
    """Databases: list, create, describe, alter, drop."""


@db.command("list")
@click.argument("catalog_name", metavar="CATALOG", required=False)
@pass_ctx
def db_list(ctx: Context, catalog_name: str | None) -> Names:
    """List the databases of CATALOG (default: the default catalog)."""
    return Names("database", ctx.client.list_databases(catalog_name))


@db.command("create")
@click.argument("name", metavar="CATALOG.DB")
@click.option("--comment", help="Description of the database.")
@click.option("--location", metavar="URI", help="Where its tables go [default: under the warehouse].")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def db_create(ctx: Context, name: str, comment: str | None, location: str | None, properties: tuple[str, ...],
              if_not_exists: bool) -> Database:
    """Create a database."""
    return ctx.client.create_database(name, comment=comment, location=location,
                                      properties=parse_properties(properties), if_not_exists=if_not_exists)


@db.command("describe")
@click.argument("name", metavar="CATALOG.DB")
@pass_ctx
def db_describe(ctx: Context, name: str) -> Database:
    """Show a database."""
    return ctx.client.get_database(name)


@db.command("alter")
@click.argument("name", metavar="CATALOG.DB")
@click.option("--comment", help="New description.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Set a property; repeatable.")
@click.option("--unset-property", "unset", multiple=True, metavar="KEY", help="Remove a property; repeatable.")
@pass_ctx
def db_alter(ctx: Context, name: str, comment: str | None, properties: tuple[str, ...],
             unset: tuple[str, ...]) -> Database:
    """Change a database's comment or properties."""
    if comment is None and not properties and not unset:
        raise UsageError("nothing to change: give --comment, --property or --unset-property")
    return ctx.client.alter_database(name, comment=comment, set_properties=parse_properties(properties),
                                     unset_properties=list(unset))


@db.command("rename")
@click.argument("name", metavar="CATALOG.DB")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def db_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> Done:
    """Rename a database (memory catalogs; a Hive Metastore cannot: unsupported)."""
    ctx.client.rename_database(name, new_name, if_exists)
    return Done("renamed", "database", name, new_name)


@db.command("drop")
@click.argument("name", metavar="CATALOG.DB")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@click.option("--cascade", is_flag=True, help="Drop its tables too.")
@click.option("--drop-foreign", is_flag=True,
              help="Admin only: with --cascade, drop also the objects catalogd did not create (a jdbc catalog "
                   "refuses otherwise).")
@pass_ctx
def db_drop(ctx: Context, name: str, if_exists: bool, cascade: bool, drop_foreign: bool) -> Done:
    """Drop a database (refused when it has tables, unless --cascade)."""
    ctx.client.drop_database(name, if_exists=if_exists, cascade=cascade, drop_foreign=drop_foreign)
    return Done("dropped", "database", name)
