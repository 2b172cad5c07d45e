"""``catalogd catalog list|describe`` and ``catalogd spark-conf``: the configured catalogs."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.results import Catalogs, SparkSettings
from catalogd.model import CatalogInfo


@click.group()
def catalog() -> None:
    """Configured catalogs."""


@catalog.command("list")
@pass_ctx
def catalog_list(ctx: Context) -> Catalogs:
    """List catalogs (name, type, default, read-only, metastore)."""
    return Catalogs(ctx.client.list_catalogs())


@catalog.command("describe")
@click.argument("name")
@pass_ctx
def catalog_describe(ctx: Context, name: str) -> CatalogInfo:
    """Show one catalog."""
    return ctx.client.get_catalog(name)


@click.command("spark-conf")
@click.argument("catalog_name", metavar="CATALOG")
@pass_ctx
def spark_conf(ctx: Context, catalog_name: str) -> SparkSettings:
    """Print the Spark settings (key=value) that point Spark at CATALOG's metastore."""
    from catalogd.spark_common import spark_conf_for

    return SparkSettings(spark_conf_for(ctx.client.get_catalog(catalog_name)))
