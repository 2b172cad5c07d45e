"""Spark settings that point a SparkSession at a catalog's metastore and warehouse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalogd.errors import UnsupportedError
from catalogd.model import CatalogInfo

if TYPE_CHECKING:
    from catalogd.client import CatalogClient


_FILTER_HOOK = "org.apache.hadoop.hive.ql.security.authorization.plugin.AuthorizationMetaStoreFilterHook"


def spark_conf_for(info: CatalogInfo) -> dict[str, str]:
    """The ``spark.*`` settings for a session on ``info``'s catalog.

    With catalogd's HMS endpoint known (``info.hms_endpoint``), Spark talks to catalogd, which
    serves every catalog (the catalog's databases under its ``hms_prefix``); otherwise (a
    catalog object read inside the daemon, e.g. for refresh jobs) to the catalog's own
    metastore.

    Raises:
        UnsupportedError: a memory catalog and no HMS endpoint (Spark cannot reach it).
    """
    metastore = info.hms_endpoint or (info.metastore if info.type == "hive" else None)
    if not metastore:
        raise UnsupportedError(f"catalog {info.name!r} is a {info.type} catalog: Spark reaches it only through "
                               "catalogd's HMS endpoint (server.hms-port)")
    settings = {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": metastore,
        # Hive 2.3's SessionState switches the filter hook to this value on the first call
        # that asks for the user name; the client sees a changed metastore setting and closes
        # the connection a call in progress still holds (HIVE-24404), which logs a "lost
        # connection" stack trace on every session's first partition listing. Starting with
        # the value it would switch to leaves nothing to change.
        "spark.hadoop.hive.metastore.filter.hook": _FILTER_HOOK,
    }
    if info.hms_endpoint and info.hms_tls:
        # Hive's metastore client over TLS: it verifies the endpoint with a JKS truststore.
        settings["spark.hadoop.hive.metastore.use.SSL"] = "true"
        if info.hms_truststore:
            settings["spark.hadoop.hive.metastore.truststore.path"] = info.hms_truststore
        if info.hms_truststore_password is not None:
            settings["spark.hadoop.hive.metastore.truststore.password"] = info.hms_truststore_password
    if info.warehouse:
        settings["spark.sql.warehouse.dir"] = info.warehouse
    return settings


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
    finally:
        if own:
            client.close()
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_conf_for(info).items():
        builder = builder.config(key, value)
    return builder
