"""``catalogd catalog list|describe`` and ``catalogd spark-conf``: the configured catalogs."""

from __future__ import annotations

import os

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
@click.option("--hms-only", is_flag=True,
              help="Only the HMS endpoint's settings (no catalog plugin): for Spark left unmodified.")
@pass_ctx
def spark_conf(ctx: Context, catalog_name: str, hms_only: bool) -> SparkSettings:
    """Print the Spark settings (key=value) for a session whose default catalog is CATALOG: the
    catalog plugin (every catalog named natively, atomic CREATE ... AS SELECT and INSERT) and the
    HMS endpoint. The token is never printed: the plugin reads $CATALOGD_TOKEN."""
    from catalogd.spark_common import spark_conf_for

    info = ctx.client.get_catalog(catalog_name)
    if hms_only:
        return SparkSettings(spark_conf_for(info))
    from catalogd.spark.catalogs import plugin_conf
    from catalogd.tls import ENV_CA

    ca = ctx.tls[0] or os.environ.get(ENV_CA) or None
    return SparkSettings(plugin_conf(ctx.client, info, ca=ca))
