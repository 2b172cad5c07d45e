"""Spark settings that point a SparkSession at a catalog's metastore and warehouse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Defined beside the code the daemon's refresh jobs share; ``catalogd.spark.conf.spark_conf_for``
# stays where users import it from.
from catalogd.spark_common import jdbc_driver_jars, spark_conf_for

if TYPE_CHECKING:
    from catalogd.client import CatalogClient


def session_builder(catalog: str | None = None, client: CatalogClient | None = None) -> Any:
    """A ``SparkSession.Builder`` configured for ``catalog`` (Hive support enabled).

    Args:
        catalog: catalog name; the daemon's default catalog when None.
        client: the daemon to ask; default ``CatalogClient()``.
    """
    from pyspark.sql import SparkSession

    from catalogd.client import CatalogClient

    own = client is None
    client = client or CatalogClient()
    try:
        info = client.get_catalog(catalog)
        # The jdbc catalogs' drivers, from the daemon's config: on the classpath from the start,
        # so that catalogd.spark can write and read their tables (spark.jars cannot change later).
        jars = jdbc_driver_jars(client.list_catalogs())
    finally:
        if own:
            client.close()
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_conf_for(info).items():
        builder = builder.config(key, value)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    return builder
