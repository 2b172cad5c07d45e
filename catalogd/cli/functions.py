"""``catalogd function ...``: list, create, describe, alter, rename and drop functions."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.results import Done, Names
from catalogd.errors import UsageError
from catalogd.model import Function, Resource

_LANGUAGES = click.Choice(["java", "scala", "python"], case_sensitive=False)


@click.group()
def function() -> None:
    """Functions: list, create, describe, alter, rename, drop."""


@function.command("list")
@click.argument("database", metavar="CATALOG.DB")
@pass_ctx
def function_list(ctx: Context, database: str) -> Names:
    """List the functions of a database."""
    return Names("function", ctx.client.list_functions(database))


@function.command("create")
@click.argument("name", metavar="CATALOG.DB.F")
@click.option("--class", "class_name", required=True, metavar="CLASS",
              help="A JVM class (java, scala), or module:function (python).")
@click.option("--language", default="java", show_default=True, type=_LANGUAGES)
@click.option("--resource", "resources", multiple=True, metavar="URI",
              help="A jar, file or archive the function needs (typed by extension, or jar:URI / archive:URI); "
                   "repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def function_create(ctx: Context, name: str, class_name: str, language: str, resources: tuple[str, ...],
                    if_not_exists: bool) -> Function:
    """Create a function."""
    return ctx.client.create_function(name, class_name, language, list(resources), if_not_exists)


@function.command("describe")
@click.argument("name", metavar="CATALOG.DB.F")
@pass_ctx
def function_describe(ctx: Context, name: str) -> Function:
    """Show a function: class, language, resources."""
    return ctx.client.get_function(name)


@function.command("alter")
@click.argument("name", metavar="CATALOG.DB.F")
@click.option("--class", "class_name", metavar="CLASS", help="New class [default: unchanged].")
@click.option("--language", type=_LANGUAGES, help="New language [default: unchanged].")
@click.option("--resource", "resources", multiple=True, metavar="URI",
              help="Replaces every resource; repeatable [default: unchanged].")
@click.option("--no-resources", is_flag=True, help="Remove every resource.")
@pass_ctx
def function_alter(ctx: Context, name: str, class_name: str | None, language: str | None,
                   resources: tuple[str, ...], no_resources: bool) -> Function:
    """Change a function's class, language or resources."""
    if class_name is None and language is None and not resources and not no_resources:
        raise UsageError("nothing to change: give --class, --language, --resource or --no-resources")
    if resources and no_resources:
        raise UsageError("--resource and --no-resources contradict each other")
    current = ctx.client.get_function(name)
    kept: list[str | Resource]
    if no_resources:
        kept = []
    elif resources:
        kept = list(resources)
    else:
        kept = list(current.resources)
    return ctx.client.alter_function(name, class_name or current.class_name, language or current.language, kept)


@function.command("rename")
@click.argument("name", metavar="CATALOG.DB.F")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def function_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> Done:
    """Rename a function within its database."""
    ctx.client.rename_function(name, new_name, if_exists)
    return Done("renamed", "function", name, new_name)


@function.command("drop")
@click.argument("name", metavar="CATALOG.DB.F")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def function_drop(ctx: Context, name: str, if_exists: bool) -> Done:
    """Drop a function."""
    ctx.client.drop_function(name, if_exists)
    return Done("dropped", "function", name)
