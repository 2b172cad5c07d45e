"""``catalogd view ...``: list, create, describe, alter, rename and drop views."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.params import parse_properties
from catalogd.cli.results import Done, Names, View
from catalogd.errors import UsageError


@click.group()
def view() -> None:
    """Views: list, create, describe, alter, rename, drop."""


@view.command("list")
@click.argument("database", metavar="CATALOG.DB")
@pass_ctx
def view_list(ctx: Context, database: str) -> Names:
    """List the views of a database (tables are not listed)."""
    return Names("view", ctx.client.list_views(database))


@view.command("create")
@click.argument("name", metavar="CATALOG.DB.V")
@click.option("--query", required=True, help="One SELECT; checked against the catalog and stored expanded.")
@click.option("--comment", help="Description of the view.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def view_create(ctx: Context, name: str, query: str, comment: str | None, properties: tuple[str, ...],
                if_not_exists: bool) -> View:
    """Create a view."""
    return View(ctx.client.create_view(name, query, comment, parse_properties(properties), if_not_exists))


@view.command("describe")
@click.argument("name", metavar="CATALOG.DB.V")
@pass_ctx
def view_describe(ctx: Context, name: str) -> View:
    """Show a view: columns, query as written and expanded."""
    return View(ctx.client.get_view(name))


@view.command("alter")
@click.argument("name", metavar="CATALOG.DB.V")
@click.option("--query", help="A new query (checked and expanded again).")
@click.option("--comment", help="New description.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Set a property; repeatable.")
@click.option("--unset-property", "unset", multiple=True, metavar="KEY", help="Remove a property; repeatable.")
@pass_ctx
def view_alter(ctx: Context, name: str, query: str | None, comment: str | None, properties: tuple[str, ...],
               unset: tuple[str, ...]) -> View:
    """Change a view's query, comment or properties."""
    if query is None and comment is None and not properties and not unset:
        raise UsageError("nothing to change: give --query, --comment, --property or --unset-property")
    return View(ctx.client.alter_view(name, query, comment, parse_properties(properties), list(unset)))


@view.command("rename")
@click.argument("name", metavar="CATALOG.DB.V")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def view_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> Done:
    """Rename a view within its database."""
    ctx.client.rename_view(name, new_name, if_exists)
    return Done("renamed", "view", name, new_name)


@view.command("drop")
@click.argument("name", metavar="CATALOG.DB.V")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def view_drop(ctx: Context, name: str, if_exists: bool) -> Done:
    """Drop a view (never a table)."""
    ctx.client.drop_view(name, if_exists)
    return Done("dropped", "view", name)
