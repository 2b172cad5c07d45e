"""Spark settings for the catalog plugin: every catalogd catalog a Spark catalog.

``catalogd spark-conf <catalog>`` prints them and ``catalogd.spark.session_builder`` applies
them (docs/spark.md): the plugin's jar, ``spark.sql.catalog.<name>`` for every catalog (with
catalogd's Thrift address and TLS), ``spark.sql.defaultCatalog``, the dynamic-table SQL
extension, and the session catalog on catalogd's HMS endpoint (where the plugin's writes land).
The token is never among them: the plugin reads it from ``$CATALOGD_TOKEN`` (or the variable
or file its ``token-env`` / ``token-file`` options name) in the driver's environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalogd.errors import CatalogError
from catalogd.spark.plugin import CATALOG_CLASS, EXTENSIONS_CLASS, plugin_jar
from catalogd.spark_common import spark_conf_for

if TYPE_CHECKING:
    from catalogd.client import CatalogClient
    from catalogd.model import CatalogInfo

__all__ = ["RESERVED_SPARK_CATALOGS", "plugin_conf"]

#: Names Spark keeps for itself: a catalogd catalog of one of these names stays on the endpoint.
RESERVED_SPARK_CATALOGS = frozenset({"spark_catalog", "system", "session", "builtin"})


def thrift_addresses(client: CatalogClient) -> str:
    """catalogd's Thrift address for the plugin: every member of a cluster, else the client's."""
    try:
        status = client.cluster_status()
    except CatalogError:
        return client.address
    if status.clustered and status.members:
        return ",".join(m.address for m in status.members)
    return client.address


def plugin_conf(client: CatalogClient, info: CatalogInfo, infos: list[CatalogInfo] | None = None,
                ca: str | None = None) -> dict[str, str]:
    """The Spark settings for a session whose default catalog is ``info``, with the plugin.

    Args:
        ca: the PEM file of the authorities that sign catalogd's certificate (TLS on its API).

    Raises:
        UnsupportedError: the plugin's jar is not there and cannot be built.
    """
    infos = infos if infos is not None else client.list_catalogs()
    default = next((c for c in infos if c.default), info)
    # The session catalog is catalogd's HMS endpoint: the plugin writes stages through it.
    settings = spark_conf_for(default if default.hms_endpoint else info)
    # The plugin, then each jdbc catalog's driver once (catalogs on one server share a driver).
    jars = [str(plugin_jar()), *(c.jdbc_driver_jar for c in infos if c.type == "jdbc" and c.jdbc_driver_jar)]
    settings["spark.jars"] = ",".join(dict.fromkeys(jars))
    settings["spark.sql.extensions"] = EXTENSIONS_CLASS
    address = thrift_addresses(client)
    for c in infos:
        if c.name.lower() in RESERVED_SPARK_CATALOGS:
            continue
        prefix = f"spark.sql.catalog.{c.name}"
        settings[prefix] = CATALOG_CLASS
        settings[f"{prefix}.address"] = address
        if ca:
            settings[f"{prefix}.tls"] = "true"
            settings[f"{prefix}.truststore"] = ca
    if info.name.lower() not in RESERVED_SPARK_CATALOGS:
        settings["spark.sql.defaultCatalog"] = info.name
    return settings
