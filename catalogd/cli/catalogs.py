"""``catalogd catalog list|describe``, ``catalogd spark-conf`` and ``catalogd iceberg-conf``: the configured
catalogs, and how clients reach them."""

from __future__ import annotations

import os

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.results import Catalogs, IcebergSettings, SparkSettings
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


# catalogd.client.TOKEN_ENV, not imported: commands that never talk to a daemon start without the client.
TOKEN_ENV = "CATALOGD_TOKEN"


@click.command("iceberg-conf")
@click.argument("catalog_name", metavar="CATALOG")
@click.option("--name", "client_name", metavar="NAME", default=None,
              help="The clients' name for the catalog (Spark's spark.sql.catalog.NAME, Trino's catalog) "
                   "[default: CATALOG]")
@click.option("--auth/--no-auth", default=None,
              help="Whether the settings carry a bearer token [default: as the daemon answered this CLI's token]")
@click.option("--token-env", metavar="VAR", default=TOKEN_ENV, show_default=True,
              help="The environment variable the clients that read one take the token from.")
@pass_ctx
def iceberg_conf(ctx: Context, catalog_name: str, client_name: str | None, auth: bool | None,
                 token_env: str) -> IcebergSettings:
    """Print each client's settings (pyiceberg, Spark, Trino, DuckDB, Flink) to reach CATALOG through
    catalogd's Iceberg REST catalog: the URI on the HTTP port and the warehouse (the catalog's name).
    A token is never printed: a placeholder stands for it (or the variable --token-env names)."""
    from catalogd.auth.model import ANONYMOUS
    from catalogd.iceberg.client_conf import check_client_name, client_settings
    from catalogd.tls import ENV_CA

    if client_name is not None:
        check_client_name(client_name)  # before asking the daemon anything
    info = ctx.client.get_catalog(catalog_name)
    if auth is None:
        # The daemon named a principal for this CLI's token: auth is on (with it off it answers anonymous).
        auth = ctx.client.principal not in (None, ANONYMOUS.name)
    ca = ctx.tls[0] or os.environ.get(ENV_CA) or None
    return IcebergSettings(client_settings(info, auth=auth, name=client_name, token_env=token_env, ca=ca))
