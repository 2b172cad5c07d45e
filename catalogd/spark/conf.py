"""Spark settings that point a SparkSession at a catalog's metastore and warehouse."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# Defined beside the code the daemon's refresh jobs share; ``catalogd.spark.conf.spark_conf_for``
# stays where users import it from.
from catalogd.spark_common import jdbc_driver_jars, spark_conf_for

if TYPE_CHECKING:
    from catalogd.client import CatalogClient


def session_builder(catalog: str | None = None, client: CatalogClient | None = None, *, plugin: bool = True) -> Any:
    """A ``SparkSession.Builder`` configured for ``catalog`` (Hive support enabled).

    Args:
        catalog: catalog name; the daemon's default catalog when None.
        client: the daemon to ask; default ``CatalogClient()``.
        plugin: with the catalog plugin (``catalogd spark-conf``): every catalog named natively
            (``main.sales.orders``), ``catalog`` the session's default, and CREATE ... AS SELECT,
            REPLACE and INSERT atomic in plain Spark SQL. False: the HMS endpoint only
            (``catalogd spark-conf --hms-only``).
    """
    from pyspark.sql import SparkSession

    from catalogd.client import CatalogClient

    own = client is None
    client = client or CatalogClient()
    try:
        info = client.get_catalog(catalog)
        infos = client.list_catalogs()
        if plugin:
            from catalogd.spark.catalogs import plugin_conf
            from catalogd.tls import ENV_CA

            settings = plugin_conf(client, info, infos, ca=os.environ.get(ENV_CA) or None)
        else:
            settings = spark_conf_for(info)
            # The jdbc catalogs' drivers, from the daemon's config: on the classpath from the start,
            # so that catalogd.spark can write and read their tables (spark.jars cannot change later).
            jars = jdbc_driver_jars(infos)
            if jars:
                settings["spark.jars"] = ",".join(jars)
    finally:
        if own:
            client.close()
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder
